"""A paper named in the same command as a typed topic narrows that topic, wherever the paper lies; named
alone, a paper far from every interest starts an interest of its own, until the person says which topic
it is the part of."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from bot.errors import NotFoundError
from bot.services.recommend.recommender import Recommender
from paperindex.engine import SearchEngine
from storage.db import Database
from storage.models import PaperRecord
from storage.repositories.papers import PaperRepository

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
AREAS = {
    "vision": "images convolutional segmentation pixels detection objects bounding boxes video frames",
    "speech": "audio phonemes acoustic speakers waveforms spectrograms prosody accents transcripts",
    "ranking": "users items ratings clicks catalogues sessions relevance feedback queries",
    "colouring": "vertex colouring palette chromatic heuristic sparse graphs recolouring greedy bounds",
}


def _corpus() -> list[PaperRecord]:
    """Thirty papers of each of four areas; those of three say "machine learning", the colouring ones
    do not (so a colouring paper lies far from where "machine learning" does)."""
    rng = random.Random(3)
    papers = []
    for area, words in AREAS.items():
        for n in range(30):
            text = rng.choices(words.split(), k=rng.randint(12, 20))
            lead = "We study algorithms" if area == "colouring" else "We study machine learning"
            papers.append(
                PaperRecord(
                    title=f"{area.capitalize()} study {n}: {' '.join(text[:3])}",
                    abstract=f"{lead} with {' '.join(text)}.",
                    year=2024,
                )
            )
    return papers


async def test_a_paper_named_for_a_topic_narrows_it_however_far_and_alone_starts_its_own(
    db: Database,
) -> None:
    papers = PaperRepository(db)
    await papers.upsert_many(_corpus())
    ids = {str(r[1]): int(r[0]) for r in await db.fetchall("SELECT id, title FROM papers")}
    engine = SearchEngine.build(await papers.iter_index_rows())
    recommender = Recommender(db, engine, engine.index, clock=lambda: NOW)
    colouring = next(i for t, i in ids.items() if t.startswith("Colouring study 0:"))

    await recommender.profiles.add_topic(1, "machine learning")
    alone, new = await recommender.add_paper(1, colouring)
    assert (new, alone.row.kind) == (True, "paper"), "far from the topic, named alone: an interest of its own"
    # …until the person presses the topic it is the part of: the paper's own interest goes
    pressed = await recommender.narrow_with(1, "MACHINE learning", colouring)
    assert (pressed.label, pressed.row.narrowed_by) == ("machine learning", colouring)
    assert [i.label for i in await recommender.profiles.interests(1)] == ["machine learning"]
    with pytest.raises(NotFoundError):
        await recommender.narrow_with(1, "kv cache", colouring)

    await recommender.profiles.add_topic(2, "Machine Learning")
    narrowed, new = await recommender.add_paper(2, colouring, for_topic="machine learning")
    assert not new
    assert (narrowed.label, narrowed.row.narrowed_by) == ("Machine Learning", colouring)
    assert [i.label for i in await recommender.profiles.interests(2)] == ["Machine Learning"]
