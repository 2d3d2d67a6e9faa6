"""Following authors, through the real discord.py client and the local Discord server: /paper follow
with the author picked from the autocomplete, a new paper by them first in the next digest with the
reason "by <author>, whom you follow" and never again; /paper following and /paper unfollow; people who
may share a name told apart by co-authors, venue and years, and the person picking which to follow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from answers import answer_text
from lab_papers import LAB, add_papers

if TYPE_CHECKING:
    from paperbot_e2e import E2E

    from bot.sandbox.emulator.state import SandboxMessage

#: A new paper by Ada Lovelace, on nothing bob's digest topic would pick
NEW_BY_ADA = {
    "title": "Notes on the Analytical Engine as a General Symbol Processor",
    "abstract": (
        "We show that a machine operating on symbols rather than numbers can compose music, "
        "and give the first program written for such a machine: the Bernoulli numbers."
    ),
    "authors": ["Ada Lovelace", "Charles Babbage"],
    "venue": "Scientific Memoirs 2026",
    "year": 2026,
    "arxiv_id": "2607.00001",
}


def _wei(title: str, coauthor: str, venue: str, year: int, arxiv: str) -> dict[str, Any]:
    return {
        "title": title,
        "abstract": f"We propose {title.split(':')[0]}, a method for {title.lower()}, and evaluate it.",
        "authors": ["Wei Wang", coauthor],
        "venue": f"{venue} {year}",
        "year": year,
        "arxiv_id": arxiv,
    }


#: Two people who may share a name: the vision one (with Lei Zhang) and the data-mining one
WEI_WANGS = [
    _wei("DetHead: Detection Heads for Vision Transformers", "Lei Zhang", "CVPR", 2023, "2303.00001"),
    _wei("SegAll: Segmenting Everything in Video", "Lei Zhang", "CVPR", 2024, "2403.00002"),
    _wei("HinMine: Mining Heterogeneous Information Networks", "Jiawei Han", "KDD", 2019, "1905.00003"),
]


def _papers(messages: list[SandboxMessage]) -> list[SandboxMessage]:
    return [m for m in messages if m.embeds]


async def _digest(e2e: E2E, user: str) -> list[tuple[int | None, str]]:
    """Run /paper digest; the papers it sent (id, reason line), in order."""
    server = e2e.server
    before = len(server.dm_messages(user))
    answer = await server.run_command(user, "paper digest")
    assert "Sent" in answer.content, answer.content
    await server.wait_quiet()
    sent = _papers(server.dm_messages(user)[before:])
    return [(await e2e.services.messages.paper_for(m.id), _reason(m)) for m in sent]


def _reason(message: SandboxMessage) -> str:
    """The line of a digest paper saying why it was picked (in italics, after the byline)."""
    lines = message.embeds[0]["description"].split("\n")
    return next(line for line in lines if line.startswith("*") and line.endswith("*"))


async def _follows(e2e: E2E, user_id: int) -> list[tuple[str, int | None]]:
    rows = await e2e.db.fetchall(
        "SELECT name, group_paper_id FROM author_follows WHERE user_id = ? ORDER BY followed_at", (user_id,)
    )
    return [(str(row[0]), row[1]) for row in rows]


async def test_a_followed_authors_new_paper_comes_first_with_the_reason_once(e2e: E2E) -> None:
    e2e.services.limits.enabled = False  # a few days' digests, seconds apart
    server = e2e.server
    bob = server.bob
    await add_papers(e2e, LAB)
    choices = await server.autocomplete("bob", "paper follow", "author", "lovel")
    assert choices[0] == {"name": "Ada Lovelace · 1 paper", "value": "Ada Lovelace"}
    followed = await server.run_command("bob", "paper follow", author=choices[0]["value"])
    assert followed.ephemeral
    assert "✅ You follow **Ada Lovelace** (1 paper here)" in followed.content
    assert "“by Ada Lovelace, whom you follow”" in followed.content
    assert "You have no digest yet" in followed.content
    assert followed.embeds == [], "one person under the name: nothing to pick"

    await server.run_command("bob", "paper subscribe", topics="speculative decoding", count=3)
    listing = await server.run_command("bob", "paper following")
    assert listing.ephemeral
    assert listing.embed["title"] == "Authors you follow (1 of 50)"
    assert "**Ada Lovelace** — since " in listing.embed["description"]
    shown = await server.run_command("bob", "paper interests show")
    assert "Authors you follow (1)" in answer_text(shown)

    first = await _digest(e2e, "bob")
    assert all("whom you follow" not in reason for _, reason in first), "her papers from before are not new"
    (new_id,) = await add_papers(e2e, [NEW_BY_ADA], name="engine.jsonl")
    second = await _digest(e2e, "bob")
    assert second[0] == (new_id, "*by Ada Lovelace, whom you follow*"), second
    assert 1 < len(second) <= 3, "then the digest's own picks, up to its count"
    assert all("whom you follow" not in reason for _, reason in second[1:])
    third = await _digest(e2e, "bob")
    assert new_id not in [paper_id for paper_id, _ in third], "never twice"

    mine = await server.autocomplete("bob", "paper unfollow", "author", "ada")
    assert mine == [{"name": "Ada Lovelace", "value": "Ada Lovelace"}]
    stopped = await server.run_command("bob", "paper unfollow", author=mine[0]["value"])
    assert "Stopped following **Ada Lovelace**" in stopped.content
    assert await _follows(e2e, bob.id) == []
    empty = await server.run_command("bob", "paper following")
    assert "None yet" in empty.embed["description"]


async def test_people_who_may_share_a_name_are_told_apart_and_picked(e2e: E2E) -> None:
    server = e2e.server
    carol = server.carol
    vision, _, mining = await add_papers(e2e, WEI_WANGS, name="wei.jsonl")
    choices = await server.autocomplete("carol", "paper follow", "author", "wei wang")
    assert choices == [
        {"name": "Wei Wang · 3 papers in 2 groups (every one)", "value": "Wei Wang"},
        {"name": "Wei Wang — with Lei Zhang · CVPR · 2023–2024 · 2 papers", "value": f"Wei Wang (#{vision})"},
        {"name": "Wei Wang — with Jiawei Han · KDD · 2019 · 1 paper", "value": f"Wei Wang (#{mining})"},
    ]

    every = await server.run_command("carol", "paper follow", author="wei wang")  # typed, not picked
    assert "✅ You follow **Wei Wang** (3 papers here)" in every.content
    assert every.embed["title"] == "2 authors may share the name Wei Wang"
    assert "no co-author in common: they may be different people" in every.embed["description"]
    assert "1. with Lei Zhang · CVPR · 2023–2024 · 2 papers" in every.embed["description"]
    assert "2. with Jiawei Han · KDD · 2019 · 1 paper" in every.embed["description"]
    (menu,) = every.message.selects
    assert [o["value"] for o in menu["options"]] == [str(vision), str(mining)]
    assert await _follows(e2e, carol.id) == [("Wei Wang", None)]

    picked = await server.select("carol", every, [str(mining)])
    assert picked.ephemeral
    assert "✅ You follow **Wei Wang** (with Jiawei Han · KDD · 2019 · 1 paper)" in picked.content
    assert await _follows(e2e, carol.id) == [("Wei Wang", mining)], "only that one, instead of every paper"
    listing = await server.run_command("carol", "paper following")
    assert "**Wei Wang** (with Jiawei Han · KDD · 2019 · 1 paper) — since" in listing.embed["description"]

    twice = await server.run_command("carol", "paper follow", author=f"Wei Wang (#{mining})")
    assert twice.ephemeral
    assert "You already follow Wei Wang (with Jiawei Han · KDD · 2019 · 1 paper), since" in twice.content

    theirs, mine = await add_papers(
        e2e,
        [
            _wei("PanoSeg: Panoptic Segmentation at Scale", "Lei Zhang", "CVPR", 2026, "2603.00004"),
            _wei("MetaPath: Meta-Paths for Graph Mining", "Jiawei Han", "KDD", 2026, "2603.00005"),
        ],
        name="wei-new.jsonl",
    )
    digest = await _digest(e2e, "carol")
    assert digest[0] == (mine, "*by Wei Wang, whom you follow*")
    assert theirs not in [paper_id for paper_id, reason in digest if "whom you follow" in reason], (
        "the other Wei Wang's new paper is not brought as the one followed"
    )


async def test_bad_input_is_told_and_writes_nothing(e2e: E2E) -> None:
    server = e2e.server
    await add_papers(e2e, LAB)
    unknown = await server.run_command("carol", "paper follow", author="Grace Murray")
    assert unknown.ephemeral
    assert "I know no author named “Grace Murray” in the library (close: “Grace Hopper”)" in unknown.content
    nobody = await server.run_command("carol", "paper follow", author="Zzyzx Qqq")
    assert "I know no author named “Zzyzx Qqq”" in nobody.content
    assert await _follows(e2e, server.carol.id) == []
    await server.run_command("carol", "paper follow", author="Grace Hopper")
    again = await server.run_command("carol", "paper follow", author="grace hopper")
    assert "You already follow “Grace Hopper”, since" in again.content
    not_mine = await server.run_command("carol", "paper unfollow", author="Alan Turing")
    assert "You don't follow “Alan Turing”. You follow “Grace Hopper”." in not_mine.content
    assert await _follows(e2e, server.carol.id) == [("Grace Hopper", None)]
    none_yet = await server.run_command("bob", "paper unfollow", author="Alan Turing")
    assert "You follow no authors yet" in none_yet.content

    asked = await server.run_command("carol", "paper forget-me")
    assert "followed authors" in asked.content
    done = await server.click("carol", asked, "Delete everything")
    assert "1 followed author," in done.content
    assert await _follows(e2e, server.carol.id) == [], "forget-me deletes the follows"
