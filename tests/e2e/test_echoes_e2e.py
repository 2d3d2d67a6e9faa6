"""What a person typed and the bot repeats is shown as typed, and nothing more: its markdown escaped
(``**bold**`` shows its asterisks), its mentions inert (``@everyone`` pings no one) and its links plain
text — in the public search heading, in `/paper interests add` and `remove`, in `/paper subscribe`'s
confirmation and in the errors that quote it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

TYPED = "@everyone **kv cache** https://evil.example/x"
#: TYPED as the bot must show it: the asterisks and the link's colon backslash-escaped, a zero-width
#: space after the @ (as discord.utils.escape_mentions puts it)
SHOWN = "@\u200beveryone \\*\\*kv cache\\*\\* https\\://evil.example/x"


def _pinged_no_one(*messages: SandboxMessage | None) -> None:
    for message in messages:
        assert message is not None
        assert not message.pings, f"{message.text!r} pinged {message.pings}"


async def test_the_public_search_answer_shows_the_query_as_typed_and_pings_no_one(e2e: E2E) -> None:
    """The query is shown inert as typed ('everyone', unknown to the corpus, is searched corrected: the
    heading shows what was searched, the note the query as typed; a link is no words, searched or
    corrected, and is shown as typed in both)."""
    server = e2e.server
    result = await server.run_command("bob", "paper search", query=TYPED, limit=3)
    assert not result.ephemeral
    assert result.embed["title"] == "Results for “@every one \\*\\*kv cache\\*\\* https\\://evil.example/x”"
    assert f"no paper has some words of “{SHOWN}”" in result.embed["description"]
    _pinged_no_one(result.message)
    nothing = await server.run_command("bob", "paper search", query="@here **zzqx** <@1234567890123456789>")
    assert "No papers match “@\u200bhere \\*\\*zzqx\\*\\* <@\u200b1234567890123456789\\>”" in nothing.text
    _pinged_no_one(nothing.message)


async def test_interests_add_and_remove_answer_with_the_topic_as_typed(e2e: E2E) -> None:
    server = e2e.server
    added = await server.run_command("bob", "paper interests add", topic=TYPED)
    assert f"“{SHOWN}”" in added.text, added.text
    removed = await server.run_command("bob", "paper interests remove", topic=TYPED)
    assert removed.text == f"Removed “{SHOWN}”.", removed.text
    await server.run_command("bob", "paper interests add", topic="graph neural networks")
    missing = await server.run_command("bob", "paper interests remove", topic="**x** @everyone")
    assert "“\\*\\*x\\*\\* @\u200beveryone” is not" in missing.text, missing.text
    _pinged_no_one(added.message, removed.message, missing.message)


async def test_subscribe_confirms_the_topics_as_typed(e2e: E2E) -> None:
    server = e2e.server
    result = await server.run_command("bob", "paper subscribe", topics=TYPED, time="09:00")
    assert f"*{SHOWN}*" in result.text, result.text
    bad_time = await server.run_command("bob", "paper subscribe", topics="kv cache", time="**9** @here")
    assert "“\\*\\*9\\*\\* @\u200bhere” is not a time" in bad_time.text, bad_time.text
    _pinged_no_one(result.message, *result.followups, bad_time.message)


async def test_an_ingested_files_name_is_shown_as_typed(start_paperbot: Any, sandbox: Any) -> None:
    """An operator's upload named with markdown and a mention: the answer names the file as it is."""
    async with start_paperbot(operator_ids=frozenset({sandbox.alice.id})) as e2e:
        record = '{"title": "Echo test paper", "abstract": "It checks how names are shown back to people."}\n'
        result = await e2e.server.run_command(
            "alice", "paperadmin ingest", file=("@everyone **x**.jsonl", record)
        )
        assert "**@\u200beveryone \\*\\*x\\*\\*.jsonl**: added **1**" in result.text, result.text
        _pinged_no_one(result.message, *result.followups)
