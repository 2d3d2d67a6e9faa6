"""Digests you can skim, through the real discord.py client and the local Discord server: each paper a
message with its linked title, authors · venue year (never "Unknown authors"), why it was picked, its
gist and links, 👍 👎 🔖, and a "Full abstract" button answering only the one who pressed it;
/paper show keeps the whole abstract; /paper help lists every command."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab_papers import KV_ABSTRACT, LAB, add_papers

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage


def _papers(messages: list[SandboxMessage]) -> list[SandboxMessage]:
    return [m for m in messages if m.embeds]


async def test_a_digest_paper_shows_its_gist_and_the_full_abstract_on_request(e2e: E2E) -> None:
    server = e2e.server
    kv_id, _ = await add_papers(e2e, LAB)
    await server.run_command("bob", "paper subscribe", topics="kv cache quantization", count=5)
    await server.run_command("bob", "paper digest")
    await server.eventually(
        lambda: len(_papers(server.dm_messages("bob"))) == 5, what="5 paper messages with 👍 👎 🔖"
    )
    await server.wait_quiet()
    messages = server.dm_messages("bob")
    papers = _papers(messages)
    shown_ids = [await e2e.services.messages.paper_for(m.id) for m in papers]
    assert kv_id in shown_ids
    first = papers[shown_ids.index(kv_id)]
    embed = first.embeds[0]
    assert embed["title"] == LAB[0]["title"]
    assert embed["url"] == "https://arxiv.org/abs/2405.00001"
    lines = embed["description"].split("\n")
    assert lines[0] == "Ada Lovelace, Alan Turing, Grace Hopper et al. (4 authors) · ICML 2024"
    assert lines[1].startswith("*for your interest in ")
    assert lines[1].endswith("*")
    assert lines[3].startswith("> In this paper, we propose KVSquash, a per-channel quantization of keys")
    assert "LongBench" not in embed["description"], "a gist, not the abstract"
    assert "[arXiv](https://arxiv.org/abs/2405.00001)" in lines[-1]
    assert [b.get("label") for b in first.buttons] == [None, None, None, "Full abstract", "More like this"]
    for message in papers:
        assert [b["emoji"]["name"] for b in message.buttons][:3] == ["👍", "👎", "🔖"]  # its own, in a DM
        assert "Unknown authors" not in message.text
    total = sum(len(m.content) for m in messages) + sum(
        len(e.get("title", "")) + len(e.get("description", "")) + len(e.get("footer", {}).get("text", ""))
        for m in papers
        for e in m.embeds
    )
    assert total < 4000, f"a five-paper digest to skim, not {total} characters"

    full = await server.click("bob", first, "Full abstract")
    assert full.ephemeral
    assert full.embed["description"] == KV_ABSTRACT
    assert full.embed["title"] == LAB[0]["title"]
    assert first.edited_at is None, "the digest message itself stays as it was"
    again = await server.click("bob", first, "Full abstract")
    assert again.ephemeral, "pressed again, shown again"
    assert "LongBench" in again.embed["description"]


async def test_show_keeps_the_whole_abstract_and_help_lists_every_command(e2e: E2E) -> None:
    server = e2e.server
    kv_id, _ = await add_papers(e2e, LAB)
    shown = await server.run_command("bob", "paper show", paper=str(kv_id))
    embed = shown.embed
    assert embed["description"] == KV_ABSTRACT
    assert [(f["name"], f["value"]) for f in embed["fields"][:2]] == [
        ("Authors", "Ada Lovelace, Alan Turing, Grace Hopper, Edsger Dijkstra"),
        ("Venue", "ICML 2024"),
    ]
    seed = await server.run_command("bob", "paper show", paper="1")
    assert [f["name"] for f in seed.embed["fields"]] == ["Venue", "Links"], (
        "no Authors field when none is known"
    )

    help_answer = await server.run_command("bob", "paper help")
    assert help_answer.ephemeral
    text = help_answer.embed["description"]
    paper = server.command("paper", guild=server.guild)

    def leaves(options: list[dict[str, object]], prefix: str) -> list[str]:
        names = []
        for option in options:
            if option["type"] == 2:
                names += leaves(option["options"], f"{prefix} {option['name']}")  # type: ignore[arg-type]
            elif option["type"] == 1:
                names.append(f"{prefix} {option['name']}")
        return names

    commands = leaves(paper["options"], "/paper")
    assert len(commands) >= 14
    for name in commands:
        assert f"`{name}" in text, f"{name} is missing from /paper help"
    assert "`/paper search query: [limit] [author] [venue] [year]`" in text
    # the message commands are found by right-clicking a message, not in the / list: help says how
    message_commands = [
        c["name"] for c in server.commands(server.guild) + server.commands() if c["type"] == 3
    ]
    assert {"Save paper", "Like paper"} <= set(message_commands)
    assert "right-click it" in text
    for name in message_commands:
        assert f"**{name}**" in text, f"/paper help does not say how to use {name}"
    assert "Full abstract" in text
