"""A library's papers the store lacks, as words: their distinctive terms, and the interest they make."""

from __future__ import annotations

from bot.services.recommend.library_words import LibraryWords, library_profile, text_vector
from paperindex.engine import SearchEngine
from storage.repositories.library_texts import LibraryText

PAPERS = [
    (
        1,
        "Spiking neural networks on neuromorphic chips",
        "Spikes and neuromorphic hardware for spiking networks.",
    ),
    (2, "Neuromorphic spiking vision", "Event cameras with spiking neurons on neuromorphic chips."),
    (3, "Protein folding", "Amino acid sequences fold into protein structures."),
    (4, "Protein design", "Designing protein sequences with diffusion."),
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
    hits = engine.weighted(profile.query(), limit=4)
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
