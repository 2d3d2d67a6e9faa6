"""A library's papers the store lacks, as words: their distinctive terms, and the interest they make."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.services.recommend.library_words import LibraryWords, library_profile, text_vector
from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.library_texts import LibraryText, LibraryTextRepository
from storage.repositories.papers import PaperRepository

PAPERS = [
    (
        1,
        "Spiking neural networks on neuromorphic chips",
        "Spikes and neuromorphic hardware for spiking networks.",
    ),
    (2, "Neuromorphic spiking vision", "Event cameras with spiking neurons on neuromorphic chips."),
    (3, "Protein folding", "Amino acid sequences fold into protein structures."),
    (4, "Protein design", "Designing protein sequences with diffusion."),
    (5, "Weather forecasts", "Medium-range forecasts on a mesh of the globe."),
    (6, "Question answering", "Dense retrieval of passages for answers."),
]


def _engine() -> SearchEngine:
    return SearchEngine.build([(pid, title, abstract) for pid, title, abstract in PAPERS])


def test_a_text_stands_for_its_terms_that_papers_here_share() -> None:
    engine = _engine()
    text = LibraryText("k", "Spiking neurons in neuromorphic hardware", "A zyxwv spiking method.")
    vector = text_vector(text, engine.index)
    assert {"spike", "neuromorph"} <= set(vector)
    assert "zyxwv" not in vector  # no indexed paper has it: it would find nothing
    assert abs(sum(w * w for w in vector.values()) - 1.0) < 1e-9


def test_the_library_profile_ranks_its_own_field_first() -> None:
    engine = _engine()
    texts = [
        LibraryText("a", "Spiking networks", "Neuromorphic spiking neurons."),
        LibraryText("b", "Neuromorphic chips", "Spiking hardware."),
    ]
    profile = library_profile(texts, engine.index)
    hits = engine.weighted(profile.query(), limit=6)
    assert {h.paper_id for h in hits[:2]} == {1, 2}
    assert {h.paper_id for h in hits} <= {1, 2}  # the protein papers share none of its words


async def test_a_persons_library_words_follow_their_texts() -> None:
    engine = _engine()
    kept: dict[int, list[LibraryText]] = {7: [LibraryText("a", "Spiking networks", None)]}

    class Texts:
        async def texts(self, user_id: int) -> list[LibraryText]:
            return kept.get(user_id, [])

    words = LibraryWords(Texts(), engine.index)
    profile, count = await words.profile(7)
    assert count == 1
    assert "spike" in profile.query()
    kept[7].append(LibraryText("b", "Protein design", None))
    profile, count = await words.profile(7)
    assert count == 2
    assert "protein" in profile.query()
    assert (await words.profile(8))[1] == 0


async def test_a_library_alone_gives_picks_then_says_nothing_new(db: Database) -> None:
    """Someone whose only start is their library's texts gets picks from them, and once those are
    seen, "nothing new" rather than "I don't know your interests"."""
    papers = PaperRepository(db)
    await papers.upsert_many(PaperRecord(title=t, abstract=a, year=2024) for _, t, a in PAPERS)
    engine = SearchEngine.build(await papers.iter_index_rows())
    texts = LibraryTextRepository(db)
    recommender = Recommender(
        db, engine, engine.index, clock=lambda: datetime(2026, 3, 1, tzinfo=UTC), library=texts
    )
    assert (await recommender.personal(7, guild_id=None, count=5)).status == "no_profile"
    await texts.add_many(7, [LibraryText("a", "Spiking networks", "Neuromorphic spiking neurons.")])
    first = await recommender.personal(7, guild_id=None, count=5)
    assert first.status == "picks"
    titles = {engine.title(p.paper_id) for p in first.picks}
    assert titles <= {PAPERS[0][1], PAPERS[1][1]}
    assert (await recommender.personal(7, guild_id=None, count=5)).status == "nothing_new"
