"""/paper wherever you are: a person who installed the app to their account uses `/paper` and the
"Save paper" / "Like paper" message commands in a server the bot was never added to; what needs the bot
in the server (`/paperadmin`) is not offered there, and nothing is offered to someone without the app."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from answers import answer_text

from bot.sandbox.emulator.recorder import ClientRefused
from storage.models import PaperRecord

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def _signals(e2e: E2E, user_id: int) -> set[tuple[int, str]]:
    rows = await e2e.db.fetchall("SELECT paper_id, signal FROM feedback WHERE user_id = ?", (user_id,))
    return {(int(r[0]), str(r[1])) for r in rows}


async def _has(e2e: E2E, user_id: int, signal: tuple[int, str]) -> bool:
    return signal in await _signals(e2e, user_id)


async def test_a_user_install_brings_paper_into_a_server_without_the_bot(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    # commands synced globally, as in production (a server's own commands never follow a person)
    async with start_paperbot(dev_guild_id=None) as e2e:
        server = e2e.server
        elsewhere = server.add_guild("Reading Club", members={"dave": False, "erin": False}, with_bot=False)
        general = server.guild_channel(elsewhere, "general")

        with pytest.raises(ClientRefused, match="not available in Reading Club"):
            await server.run_command("dave", "paper search", where=general, query="quantization")

        server.install_app("dave")
        found = await server.run_command("dave", "paper search", where=general, query="quantization", limit=3)
        assert not found.ephemeral  # the answer is in the channel, for the club to see
        # as Discord sends it: authorised by dave's own install alone, with @everyone's response permissions
        sent = found.record.payload
        assert sent["authorizing_integration_owners"] == {"1": str(server.user("dave").id)}
        assert sent["context"] == 0
        assert int(sent["app_permissions"]) & (1 << 6) == 0  # no ADD_REACTIONS
        assert "quantization" in answer_text(found).lower()
        paper_id = int(re.findall(r"pb:like:(\d+)", str(found.message.components))[0])
        liked = await server.click("dave", found, f"pb:like:{paper_id}")
        assert liked.ephemeral
        await server.eventually(lambda: _signals(e2e, server.user("dave").id), what="dave's 👍 stored")

        # a paper's own message: rating buttons instead of reactions (the bot cannot react there), and no
        # note to the server's admins about missing permissions
        shown = await server.run_command("dave", "paper show", where=general, paper=str(paper_id))
        assert {"👍", "👎", "🔖"} <= {b.get("emoji", {}).get("name") for b in shown.message.buttons}
        assert not shown.message.reactions
        assert not shown.followups

        # a link someone posted there, saved from the Apps menu
        await e2e.services.papers.upsert_many(
            [
                PaperRecord(
                    title="Tree drafts for speculative decoding",
                    abstract="Drafts as a tree. " * 8,
                    arxiv_id="2401.01234",
                )
            ]
        )
        post = await server.send_message("erin", general, "https://arxiv.org/abs/2401.01234 looks good")
        saved = await server.message_command("dave", post, "Save paper")
        assert saved.ephemeral
        assert "Tree drafts for speculative decoding" in saved.content
        tree = await e2e.services.papers.find_by_external("2401.01234")
        assert tree is not None
        await server.eventually(
            lambda: _has(e2e, server.user("dave").id, (tree.id, "save")), what="dave's 🔖 stored"
        )

        # the server's own commands need the bot there, and erin never installed the app
        with pytest.raises(ClientRefused, match="not available in Reading Club"):
            await server.run_command("dave", "paperadmin stats", where=general)
        with pytest.raises(ClientRefused, match="has not installed it"):
            await server.run_command("erin", "paper search", where=general, query="graphs")


async def test_in_a_group_dm_only_a_user_install_answers(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    """A group DM has no bot in it: `/paper search` and "Like paper" answer there for the person who
    installed the app to their account, with buttons that record their 👍; the others are refused."""
    async with start_paperbot(dev_guild_id=None) as e2e:
        server = e2e.server
        group = server.group_dm("alice", "bob", "carol", name="reading")
        with pytest.raises(ClientRefused, match="has not installed the app"):
            await server.run_command("bob", "paper search", where=group, query="quantization")

        server.install_app("bob")
        found = await server.run_command("bob", "paper search", where=group, query="quantization", limit=3)
        assert found.record.payload["context"] == 2
        assert "quantization" in answer_text(found).lower()
        paper_id = int(re.findall(r"pb:like:(\d+)", str(found.message.components))[0])
        await server.click("carol", found, f"pb:save:{paper_id}")  # a button works for whoever presses it
        await server.eventually(lambda: _has(e2e, server.carol.id, (paper_id, "save")), what="carol's 🔖")

        post = await server.send_message("alice", group, "this one https://arxiv.org/abs/1605.08386?")
        with pytest.raises(ClientRefused, match="has not installed the app"):
            await server.message_command("alice", post, "Like paper")
        with pytest.raises(ClientRefused, match="cannot be used in group DMs"):
            await server.run_command("bob", "paperadmin stats", where=group)
