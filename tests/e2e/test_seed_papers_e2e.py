"""Starting from papers you like, through the real discord.py client and the local Discord server:
/paper interests add paper: (autocomplete by title or id) counts each paper as a 👍, so a newcomer
gets personal picks from three papers; "More like this" on a single-paper message answers only the
one who pressed it, with similar papers that each have their own rating buttons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from answers import answer_text
from lab_papers import LAB, add_papers

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def _likes(e2e: E2E, user_id: int) -> list[int]:
    rows = await e2e.db.fetchall(
        "SELECT paper_id FROM feedback WHERE user_id = ? AND signal = 'like' ORDER BY paper_id", (user_id,)
    )
    return [int(row[0]) for row in rows]


async def test_a_newcomer_seeds_recommendations_with_three_papers(e2e: E2E) -> None:
    server = e2e.server
    carol = server.carol
    kv_id, tree_id = await add_papers(e2e, LAB)
    before = await server.run_command("carol", "paper recommend")
    assert "papers for you" not in answer_text(before), "no profile yet: no personal picks"

    by_title = await server.autocomplete("carol", "paper interests add", "paper", "kvsquash")
    assert by_title[0] == {"name": f"{LAB[0]['title']} (#{kv_id})", "value": str(kv_id)}
    by_number = await server.autocomplete("carol", "paper interests add", "paper", str(tree_id))
    assert any(choice["value"] == str(tree_id) for choice in by_number)
    by_arxiv = await server.autocomplete("carol", "paper interests add", "paper", "2405.00001")
    assert by_arxiv[0]["value"] == str(kv_id), "an arXiv id typed finds its paper"
    typing = await server.autocomplete("carol", "paper interests add", "paper", "2405.000")
    assert typing[0]["value"] == str(kv_id), "and while it is being typed"

    medusa = (await server.autocomplete("carol", "paper interests add", "paper", "medusa"))[0]["value"]
    for chosen in ("2405.00001", str(tree_id), medusa):  # an arXiv id typed, two picked from the list
        added = await server.run_command("carol", "paper interests add", paper=chosen)
        assert added.ephemeral
        assert "now counts as a paper you like" in added.content
    await server.eventually(lambda: _count(e2e, carol.id, 3), what="three 👍 stored")
    assert await _likes(e2e, carol.id) == sorted([kv_id, tree_id, int(medusa)])

    again = await server.run_command(
        "carol", "paper interests add", paper=str(kv_id), topic="speculative decoding"
    )
    assert "Added “speculative decoding”" in again.content
    assert "You already like “KVSquash" in again.content
    await server.wait_quiet()
    assert len(await _likes(e2e, carol.id)) == 3, "the same paper counts once"

    picks = await server.run_command("carol", "paper recommend", count=3)
    assert "papers for you" in answer_text(picks), answer_text(picks)
    shown = await server.run_command("carol", "paper interests show")
    assert "KVSquash" in answer_text(shown), "the seeds are what shapes the profile"


async def _count(e2e: E2E, user_id: int, n: int) -> bool:
    return len(await _likes(e2e, user_id)) == n


async def test_bad_seeds_get_a_clear_answer_and_write_nothing(e2e: E2E) -> None:
    server = e2e.server
    nothing = await server.run_command("carol", "paper interests add")
    assert nothing.ephemeral
    assert "Give a topic" in nothing.content
    unknown = await server.run_command(
        "carol", "paper interests add", paper="no such paper zzqx", topic="graphs"
    )
    assert "I don't know a paper matching “no such paper zzqx”" in unknown.content
    await server.wait_quiet()
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM feedback") == 0
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM interests") == 0, (
        "nothing partial: not the topic either"
    )


async def test_more_like_this_answers_privately_with_papers_to_rate(e2e: E2E) -> None:
    server = e2e.server
    kv_id, _ = await add_papers(e2e, LAB)
    shown = await server.run_command("bob", "paper show", paper=str(kv_id))
    assert [b["label"] for b in shown.message.buttons] == ["More like this"]
    similar = await server.click("bob", shown, "More like this")
    assert similar.ephemeral
    assert similar.embed["title"] == f"Papers like “{LAB[0]['title']}”"
    labels = [
        (b.get("emoji") or {}).get("name", "") + (b.get("label") or "") for b in similar.message.buttons
    ]
    assert "👍1" in labels
    assert "🔖1" in labels
    rated = await server.click("bob", similar, "👍")
    assert rated.ephemeral
    assert "Noted" in rated.content
    await server.eventually(lambda: _count(e2e, server.bob.id, 1), what="the 👍 from More like this stored")
    assert kv_id not in await _likes(e2e, server.bob.id), "the paper itself is not among its similar papers"
