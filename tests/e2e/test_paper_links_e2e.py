"""Saving or liking the paper a message links to (Apps → "Save paper" / "Like paper"), and a pasted link
in `/paper show`: papers the store has, an arXiv paper fetched from (a recording of) arXiv's API, and
what is said, with nothing stored, when there is no link, the paper is unknown or arXiv is unreachable.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from answers import answer_text
from arxiv_recording import RECORDED_TITLE, closed_port, recorded_arxiv

from bot.sandbox.emulator.recorder import ClientRefused
from storage.models import PaperRecord

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def _add_paper(e2e: E2E, **ids: Any) -> int:
    await e2e.services.papers.upsert_many(
        [
            PaperRecord(
                title="Speculative decoding with tree drafts",
                abstract="We draft several continuations as a tree and verify them in one pass of the target model.",
                authors=("Grace Hopper",),
                year=2024,
                **ids,
            )
        ]
    )
    await e2e.services.index.refresh()
    found = await e2e.services.papers.find_by_external(next(iter(ids.values())))
    assert found is not None
    return found.id


async def _signals(e2e: E2E, user_id: int) -> set[tuple[int, str]]:
    rows = await e2e.db.fetchall("SELECT paper_id, signal FROM feedback WHERE user_id = ?", (user_id,))
    return {(int(r[0]), str(r[1])) for r in rows}


@pytest.mark.both_engines
async def test_save_and_like_the_paper_a_message_links_to(e2e: E2E) -> None:
    """Someone posts an arXiv link in a channel; another person saves it from the message's Apps menu,
    and it is in their `/paper saved`; "Like paper" counts as their 👍; only they see the answers."""
    server = e2e.server
    paper_id = await _add_paper(e2e, arxiv_id="2401.01234")
    post = await server.send_message(
        "alice", "general", "worth a read: https://arxiv.org/abs/2401.01234v2 (tree drafts)"
    )

    saved = await server.message_command("bob", post, "Save paper")
    assert saved.ephemeral
    assert "Speculative decoding with tree drafts" in saved.content
    await server.eventually(lambda: _signals(e2e, server.bob.id), what="bob's save stored")
    listing = await server.run_command("bob", "paper saved")
    assert "Speculative decoding with tree drafts" in answer_text(listing)

    liked = await server.message_command("bob", post, "Like paper")
    assert liked.ephemeral
    await server.eventually(lambda: _has(e2e, server.bob.id, (paper_id, "like")), what="bob's like stored")
    again = await server.message_command("bob", post, "Save paper")
    assert "already" in again.content  # a second use never takes the 🔖 back
    assert await _signals(e2e, server.bob.id) == {(paper_id, "save"), (paper_id, "like")}
    assert await _signals(e2e, server.alice.id) == set()  # the poster is not touched


async def _has(e2e: E2E, user_id: int, signal: tuple[int, str]) -> bool:
    return signal in await _signals(e2e, user_id)


async def test_a_doi_or_acl_anthology_link_finds_the_paper_by_its_doi(e2e: E2E) -> None:
    server = e2e.server
    paper_id = await _add_paper(e2e, doi="10.18653/v1/2024.acl-long.42")
    post = await server.send_message(
        "alice", "general", "ACL version: https://aclanthology.org/2024.acl-long.42.pdf"
    )
    result = await server.message_command("bob", post, "Like paper")
    assert "Speculative decoding with tree drafts" in result.content
    await server.eventually(lambda: _has(e2e, server.bob.id, (paper_id, "like")), what="bob's like")


async def test_an_arxiv_paper_the_store_lacks_is_fetched_saved_and_searchable(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    async with recorded_arxiv() as (url, asked), start_paperbot(arxiv_lookup_url=url) as e2e:
        server = e2e.server
        assert await e2e.services.papers.find_by_external("1605.08386") is None
        post = await server.send_message("alice", "general", "see arXiv:1605.08386 on Markov bases")
        saved = await server.message_command("bob", post, "Save paper")
        assert RECORDED_TITLE in saved.content
        assert [q["id_list"] for q in asked] == ["1605.08386"]
        stored = await e2e.services.papers.find_by_external("1605.08386")
        assert stored is not None
        assert stored.title == RECORDED_TITLE
        await server.eventually(lambda: _has(e2e, server.bob.id, (stored.id, "save")), what="bob's save")
        found = await server.run_command("carol", "paper search", query="heat bath random walks markov bases")
        assert RECORDED_TITLE in answer_text(found)

        # a pasted link in /paper show: the store has it now, so arXiv is not asked again
        shown = await server.run_command("carol", "paper show", paper="https://arxiv.org/pdf/1605.08386v1")
        assert RECORDED_TITLE in answer_text(shown)
        assert len(asked) == 1


async def test_a_bare_arxiv_id_in_show_fetches_the_paper_the_store_lacks(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    """ "2405.00001" is how people type an arXiv id: `/paper show` fetches it as it would the link (it
    said "I don't know a paper matching “1605.08386” … or give an arXiv id")."""
    async with recorded_arxiv() as (url, asked), start_paperbot(arxiv_lookup_url=url) as e2e:
        shown = await e2e.server.run_command("carol", "paper show", paper="1605.08386v1")
        assert RECORDED_TITLE in answer_text(shown)
        assert [q["id_list"] for q in asked] == ["1605.08386"]
        assert await e2e.services.papers.find_by_external("1605.08386") is not None


async def test_no_link_an_unknown_paper_or_arxiv_unreachable_say_so_and_store_nothing(
    start_paperbot: Callable[..., contextlib.AbstractAsyncContextManager[E2E]],
) -> None:
    offline = f"http://127.0.0.1:{closed_port()}/api/query"
    async with start_paperbot(arxiv_lookup_url=offline) as e2e:
        server = e2e.server
        papers_before = await e2e.db.fetchval("SELECT COUNT(*) FROM papers")

        chat = await server.send_message("alice", "general", "anyone up for lunch?")
        answer = await server.message_command("bob", chat, "Save paper")
        assert answer.ephemeral
        assert "no paper link" in answer.content

        doi = await server.send_message("alice", "general", "https://doi.org/10.1038/s41586-024-00001-x")
        answer = await server.message_command("bob", doi, "Save paper")
        assert "DOI 10.1038/s41586-024-00001-x" in answer.content
        assert "Nothing was saved" in answer.content

        unreachable = await server.send_message("alice", "general", "https://arxiv.org/abs/1605.08386")
        answer = await server.message_command("bob", unreachable, "Like paper")
        assert "arXiv 1605.08386" in answer.content
        assert "could not be reached" in answer.content
        assert "Nothing was saved" in answer.content

        shown = await server.run_command(
            "bob", "paper show", paper="https://arxiv.org/abs/1605.08386", check=False
        )
        assert "could not be reached" in answer_text(shown)

        assert await e2e.db.fetchval("SELECT COUNT(*) FROM papers") == papers_before
        assert await _signals(e2e, server.bob.id) == set()


async def test_discord_offers_message_commands_only_where_it_would(e2e: E2E) -> None:
    """The sandbox refuses what Discord's client would not send: a command the bot never synced, and
    a message command on an ephemeral answer."""
    server = e2e.server
    post = await server.send_message("alice", "general", "https://arxiv.org/abs/2401.01234")
    with pytest.raises(ClientRefused, match="no command"):
        await server.message_command("bob", post, "Summarise paper")
    ephemeral = await server.run_command("bob", "paper recommend")
    assert ephemeral.ephemeral
    with pytest.raises(ClientRefused, match="ephemeral"):
        await server.message_command("bob", ephemeral, "Save paper")


async def test_a_link_pasted_into_search_is_pointed_to_show(e2e: E2E) -> None:
    """A link is no words to search: pasted as the query, the answer says which command takes it, and
    that command shows the paper."""
    server = e2e.server
    await _add_paper(e2e, arxiv_id="2401.05555")
    link = "https://arxiv.org/abs/2401.05555"
    searched = await server.run_command("bob", "paper search", query=link)
    assert searched.ephemeral
    assert "`/paper show paper:` takes it" in searched.content
    shown = await server.run_command("bob", "paper show", paper=link)
    assert "Speculative decoding with tree drafts" in answer_text(shown)
