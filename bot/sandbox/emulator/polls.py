"""Polls and threads started from a message, as Discord's poll and channel resources document them.

A poll is part of a message (Create Message's ``poll``): a question (text, 1-300 characters), 1-10
answers (each a ``poll_media`` with text of 1-55 characters and an optional emoji), a ``duration``
in hours (1-768, 32 days; 24 by default), ``allow_multiselect`` and ``layout_type`` 1. Posting one in
a server takes SEND_POLLS; a poll cannot be edited afterwards (520003). People vote and take back
their vote until it expires (MESSAGE_POLL_VOTE_ADD / _REMOVE, under the GUILD_MESSAGE_POLLS or
DIRECT_MESSAGE_POLLS intent); its author may end it early (End Poll: 520006 on a message without a
poll, 520001 once it ended), and anyone who can read the message may list an answer's voters (1-100
a page, ``after`` a user id). Once ended or expired its results are final (``is_finalized``).

Start Thread from Message makes a public thread whose id is the message's (THREAD_CREATE): a name of
1-100 characters, ``auto_archive_duration`` one of 60, 1440, 4320, 10080 minutes; CREATE_PUBLIC_THREADS
needed; one thread per message (160004); not from a message in a thread, a forum or a DM (50024).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import limits
from .addresses import API_PREFIX
from .effects import Effects
from .lookup import Lookup
from .recorder import ClientRefused
from .rest import ApiError, Routes, json_response, missing_permissions
from .state import ChannelType, Permissions, SandboxMessage, SandboxUser, World, poll_is_over

JSON = dict[str, Any]

QUESTION_MAX = 300
ANSWERS_MAX = 10
ANSWER_TEXT_MAX = 55
DURATION_HOURS = (1, 768)
THREAD_NAME_MAX = 100
AUTO_ARCHIVE = (60, 1440, 4320, 10080)


def poll_expired() -> ApiError:
    return ApiError(400, 520001, "Poll expired")


def validate_poll(poll: Any, errors: limits.FormErrors) -> None:
    """Create Message's ``poll`` as Discord checks it."""
    path: limits.Path = ("poll",)
    if not isinstance(poll, dict):
        errors.add(path, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return
    question = poll.get("question")
    text = question.get("text") if isinstance(question, dict) else None
    if errors.required((*path, "question", "text"), text) and errors.string(
        (*path, "question", "text"), text
    ):
        errors.bad_length((*path, "question", "text"), text, 1, QUESTION_MAX)
    answers = poll.get("answers")
    if not isinstance(answers, list) or not answers:
        errors.add(
            (*path, "answers"), "BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {ANSWERS_MAX} in length."
        )
    else:
        if len(answers) > ANSWERS_MAX:
            errors.add(
                (*path, "answers"), "BASE_TYPE_BAD_LENGTH", f"Must be between 1 and {ANSWERS_MAX} in length."
            )
        for index, answer in enumerate(answers):
            media = answer.get("poll_media") if isinstance(answer, dict) else None
            at = (*path, "answers", index, "poll_media", "text")
            text = media.get("text") if isinstance(media, dict) else None
            if errors.required(at, text) and errors.string(at, text):
                errors.bad_length(at, text, 1, ANSWER_TEXT_MAX)
    duration = poll.get("duration", 24)
    if isinstance(duration, bool) or not isinstance(duration, int | float) or duration != int(duration):
        errors.add((*path, "duration"), "NUMBER_TYPE_COERCE", f'Value "{duration}" is not int.')
    elif not DURATION_HOURS[0] <= duration <= DURATION_HOURS[1]:
        low, high = DURATION_HOURS
        code = "NUMBER_TYPE_MIN" if duration < low else "NUMBER_TYPE_MAX"
        bound = f"greater than or equal to {low}" if duration < low else f"less than or equal to {high}"
        errors.add((*path, "duration"), code, f"int value should be {bound}.")
    if not isinstance(poll.get("allow_multiselect", False), bool):
        errors.add((*path, "allow_multiselect"), "BOOLEAN_TYPE_CONVERT", "Must be either true or false.")
    if poll.get("layout_type", 1) != 1:
        errors.add(
            (*path, "layout_type"),
            "ENUM_TYPE_COERCE",
            f'Value "{poll.get("layout_type")}" is not a valid enum value.',
        )


class PollRoutes(Routes):
    """REST: End Poll, Get Answer Voters, Start Thread from Message."""

    def __init__(self, world: World, *, effects: Effects) -> None:
        super().__init__(world)
        self.effects = effects

    def register(self, app: web.Application) -> None:
        r, p = app.router, API_PREFIX
        r.add_post(p + "/channels/{channel_id}/polls/{message_id}/expire", self.end_poll)
        r.add_get(p + "/channels/{channel_id}/polls/{message_id}/answers/{answer_id}", self.voters)
        r.add_post(p + "/channels/{channel_id}/messages/{message_id}/threads", self.start_thread)

    async def end_poll(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if message.poll is None:
            raise ApiError(400, 520006, "Cannot expire a non-poll message")
        if message.author is not self.world.bot_user:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        if poll_is_over(message.poll, self.world.clock.now()):
            raise poll_expired()
        message.poll["ended"] = True
        self.effects.dispatch("MESSAGE_UPDATE", self.effects.message_event(message), message.guild_id)
        self.effects.notify_listeners("update", message)
        return self.message_out(message)

    async def voters(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        self._require(channel, Permissions.READ_MESSAGE_HISTORY)
        message = self._message(request, channel)
        if message.poll is None:
            raise ApiError(400, 520006, "Cannot expire a non-poll message")
        raw = request.match_info["answer_id"]
        users = message.poll["votes"].get(int(raw)) if raw.isdigit() else None
        if users is None:
            raise ApiError(404, 10008, "Unknown Message")
        try:
            limit = int(request.query.get("limit", "25"))
            after = int(request.query.get("after", "0"))
        except ValueError:
            raise ApiError.invalid_field("limit", "NUMBER_TYPE_COERCE", "Value is not int.") from None
        if not 1 <= limit <= 100:
            raise ApiError.invalid_field(
                "limit", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100."
            )
        chosen = [self.world.users[u] for u in sorted(users) if u > after][:limit]
        return json_response({"users": [u.payload() for u in chosen]})

    async def start_thread(self, request: web.Request) -> web.Response:
        channel = self._channel(request)
        message = self._message(request, channel)
        if channel.is_dm or channel.thread is not None or channel.type != ChannelType.TEXT:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        if not self.world.bot_permissions(channel) & Permissions.CREATE_PUBLIC_THREADS:
            raise missing_permissions()
        if self.world.channels.get(message.id) is not None:
            raise ApiError(400, 160004, "A thread has already been created for this message")
        payload = self.body(request) or {}
        errors = limits.FormErrors()
        name = payload.get("name") if isinstance(payload, dict) else None
        if errors.required(("name",), name) and errors.string(("name",), name):
            errors.bad_length(("name",), name, 1, THREAD_NAME_MAX)
        archive = payload.get("auto_archive_duration", 4320) if isinstance(payload, dict) else None
        if archive not in AUTO_ARCHIVE:
            errors.add(
                ("auto_archive_duration",), "BASE_TYPE_CHOICES", f"Value must be one of {AUTO_ARCHIVE}."
            )
        if errors:
            raise ApiError.form(errors)
        thread = self.world.add_thread(channel, str(name), self.world.bot_user, thread_id=message.id)
        assert thread.thread is not None
        thread.thread.auto_archive_duration = int(str(archive))
        data = thread.payload()
        data["newly_created"] = True
        self.effects.dispatch("THREAD_CREATE", data, thread.guild_id)
        return json_response(thread.payload(me=self.world.bot_user), status=201)


class PollVotes:
    """What people do with a poll: vote for an answer, take the vote back."""

    def __init__(self, world: World, *, lookup: Lookup, effects: Effects) -> None:
        self.world = world
        self.lookup = lookup
        self.effects = effects

    def _answer(self, message: SandboxMessage, user: SandboxUser, answer: int | str) -> tuple[JSON, int]:
        poll = message.poll
        if poll is None:
            raise ClientRefused(f"message {message.id} has no poll")
        if not self.world.user_permissions(message.channel, user) & Permissions.VIEW_CHANNEL:
            raise ClientRefused(f"{user.username} cannot see {message.channel.label()}")
        if poll_is_over(poll, self.world.clock.now()):
            raise ClientRefused(f"the poll of message {message.id} is over")
        for entry in poll["answers"]:
            if answer in (entry["answer_id"], entry["poll_media"].get("text")):
                return poll, int(entry["answer_id"])
        if isinstance(answer, str):
            matches = [e for e in poll["answers"] if answer.casefold() in e["poll_media"]["text"].casefold()]
            if len(matches) == 1:
                return poll, int(matches[0]["answer_id"])
        raise ClientRefused(f"the poll of message {message.id} has no answer {answer!r}")

    def vote(self, user: SandboxUser | str, message: SandboxMessage, answer: int | str) -> int:
        """``user`` votes (an answer id from 1, its text, or a unique part of it); returns the answer id."""
        user = self.lookup.user(user)
        poll, answer_id = self._answer(message, user, answer)
        mine = [a for a, users in poll["votes"].items() if user.id in users]
        if answer_id in mine:
            raise ClientRefused(f"{user.username} voted for answer {answer_id} already")
        if mine and not poll["allow_multiselect"]:
            raise ClientRefused(f"{user.username} voted already: remove the vote first (one answer only)")
        poll["votes"][answer_id].append(user.id)
        self._event("MESSAGE_POLL_VOTE_ADD", message, user, answer_id)
        return answer_id

    def unvote(self, user: SandboxUser | str, message: SandboxMessage, answer: int | str) -> None:
        user = self.lookup.user(user)
        poll, answer_id = self._answer(message, user, answer)
        if user.id not in poll["votes"][answer_id]:
            raise ClientRefused(f"{user.username} did not vote for answer {answer_id}")
        poll["votes"][answer_id].remove(user.id)
        self._event("MESSAGE_POLL_VOTE_REMOVE", message, user, answer_id)

    def _event(self, event: str, message: SandboxMessage, user: SandboxUser, answer_id: int) -> None:
        data: JSON = {
            "user_id": str(user.id),
            "channel_id": str(message.channel.id),
            "message_id": str(message.id),
            "answer_id": answer_id,
        }
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
        self.effects.dispatch(event, data, message.guild_id)
