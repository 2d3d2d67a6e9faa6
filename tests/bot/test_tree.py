"""`bot/tree.py`: what a person reads when a command or a button fails, and what the log keeps.

Fast: no gateway. The interaction is a stand-in with the few attributes the error path reads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import discord
import pytest
from discord import app_commands

from bot.errors import InvalidScheduleError, NotFoundError, QueryError, UserFacingError
from bot.tree import GENERIC_FAILURE, friendly_message, reply_ephemeral, report_error


@dataclass
class _Sent:
    message: str
    ephemeral: bool
    via: str


@dataclass
class _Response:
    sent: list[_Sent]
    done: bool = False
    fail_with: Exception | None = None

    def is_done(self) -> bool:
        return self.done

    async def send_message(self, message: str, *, ephemeral: bool = False) -> None:
        if self.fail_with is not None:
            raise self.fail_with
        self.sent.append(_Sent(message, ephemeral, "response"))
        self.done = True


@dataclass
class _Followup:
    sent: list[_Sent]

    async def send(self, message: str, *, ephemeral: bool = False) -> None:
        self.sent.append(_Sent(message, ephemeral, "followup"))


@dataclass
class _User:
    id: int


@dataclass
class FakeInteraction:
    """The attributes of a discord.Interaction that the error path uses."""

    answered: bool = False
    fail_with: Exception | None = None
    guild_id: int | None = 111
    channel_id: int | None = 222
    user: _User = field(default_factory=lambda: _User(333))
    sent: list[_Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.response = _Response(self.sent, done=self.answered, fail_with=self.fail_with)
        self.followup = _Followup(self.sent)


def _http_error(
    status: int = 500, code: int = 0, kind: type[discord.HTTPException] = discord.HTTPException
) -> discord.HTTPException:
    class _Resp:
        reason = "Internal Server Error"

    setattr(_Resp, "status", status)  # noqa: B010 - discord.py reads .status of aiohttp's response
    return kind(_Resp(), {"message": "boom", "code": code})  # type: ignore[arg-type]


def _invoke_error(original: Exception) -> app_commands.CommandInvokeError:
    """How discord.py hands a command's own exception to the tree's on_error."""

    @app_commands.command(name="x", description="x")
    async def command(interaction: discord.Interaction) -> None: ...

    return app_commands.CommandInvokeError(command, original)


@pytest.mark.parametrize(
    "error",
    [
        QueryError("The search query is empty: type a few words to look for."),
        NotFoundError("I don't know a paper matching “x”."),
        InvalidScheduleError("'25:00' is not a time of day."),
        UserFacingError("Plain user-facing text."),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_user_facing_error_is_shown_as_its_own_words(error: UserFacingError) -> None:
    assert friendly_message(error) == str(error)
    assert friendly_message(_invoke_error(error)) == str(error), "wrapped by discord.py"


def test_a_user_facing_error_raised_from_another_error_is_still_shown() -> None:
    raised = NotFoundError("That paper is not known.")
    raised.__cause__ = KeyError("inner")  # as `raise NotFoundError(...) from error` leaves it
    assert friendly_message(raised) == "That paper is not known."
    wrapper = RuntimeError("wrapper")
    wrapper.__cause__ = NotFoundError("Named by the cause.")
    assert friendly_message(wrapper) == "Named by the cause."


def test_discords_check_failures_each_get_their_own_line() -> None:
    cooldown = app_commands.CommandOnCooldown(app_commands.Cooldown(1, 10.0), retry_after=4.2)
    assert friendly_message(app_commands.MissingPermissions(["manage_guild"])) == (
        "You need the Manage Server permission for this command."
    )
    assert friendly_message(app_commands.NoPrivateMessage()) == "This command only works in a server channel."
    assert friendly_message(cooldown) == "Slow down a little: try again in 4 s."
    assert friendly_message(app_commands.CheckFailure()) == "You cannot use this command here."


def test_an_option_value_that_cannot_be_converted_is_quoted_back() -> None:
    transformer = app_commands.transformers.IdentityTransformer(discord.AppCommandOptionType.channel)
    error = app_commands.TransformerError("#nowhere", discord.AppCommandOptionType.channel, transformer)
    assert friendly_message(error) == "I could not understand '#nowhere' for that option."


@pytest.mark.parametrize(
    "error",
    [RuntimeError("database is locked"), KeyError("paper"), _invoke_error(ZeroDivisionError())],
    ids=["RuntimeError", "KeyError", "wrapped ZeroDivisionError"],
)
def test_an_unexpected_error_has_no_friendly_line(error: Exception) -> None:
    assert friendly_message(error) is None


async def test_an_unexpected_error_is_logged_with_where_and_who_and_the_user_gets_an_apology(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction = FakeInteraction()
    error = RuntimeError("database is locked")
    with caplog.at_level(logging.ERROR, logger="bot.tree"):
        await report_error(interaction, error, "command /paper search")  # type: ignore[arg-type]
    assert interaction.sent == [_Sent(GENERIC_FAILURE, True, "response")]
    [record] = caplog.records
    assert record.getMessage() == "command /paper search failed (guild=111 channel=222 user=333)"
    assert record.exc_info is not None
    assert record.exc_info[1] is error


async def test_a_user_facing_error_is_answered_ephemerally_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction = FakeInteraction()
    with caplog.at_level(logging.DEBUG, logger="bot.tree"):
        await report_error(interaction, _invoke_error(QueryError("Too long.")), "command /paper search")  # type: ignore[arg-type]
    assert interaction.sent == [_Sent("Too long.", True, "response")]
    assert caplog.records == []


async def test_the_error_goes_to_the_logger_of_the_component_that_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("bot.ui.views")
    with caplog.at_level(logging.ERROR):
        await report_error(FakeInteraction(), RuntimeError("x"), "page button 7:1", logger=logger)  # type: ignore[arg-type]
    assert [record.name for record in caplog.records] == ["bot.ui.views"]


async def test_an_interaction_already_answered_gets_the_line_as_a_follow_up() -> None:
    interaction = FakeInteraction(answered=True)  # e.g. deferred before the error
    await reply_ephemeral(interaction, "Nothing new.")  # type: ignore[arg-type]
    assert interaction.sent == [_Sent("Nothing new.", True, "followup")]


async def test_when_discord_refuses_the_error_line_it_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction = FakeInteraction(fail_with=_http_error())
    with caplog.at_level(logging.WARNING, logger="bot.tree"):
        await reply_ephemeral(interaction, "Nothing new.")  # type: ignore[arg-type]
    assert interaction.sent == []
    assert [record.getMessage() for record in caplog.records] == ["could not tell user 333 about an error"]


async def test_an_answer_after_discords_3_seconds_is_logged_in_one_line_and_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    interaction = FakeInteraction()
    late = _invoke_error(_http_error(404, 10062, discord.NotFound))
    with caplog.at_level(logging.WARNING, logger="bot.tree"):
        await report_error(interaction, late, "command /paper search")  # type: ignore[arg-type]
    assert interaction.sent == [], "Discord refuses every answer to an expired interaction"
    [record] = caplog.records
    assert record.getMessage().startswith("command /paper search answered too late")
    assert record.exc_info is None
    other = FakeInteraction()
    await report_error(other, _invoke_error(_http_error(404, 10008, discord.NotFound)), "command /x")  # type: ignore[arg-type]
    assert other.sent == [_Sent(GENERIC_FAILURE, True, "response")], "another 404 is an unexpected error"
