"""A broad topic is recognised and offered narrower topics, as its papers' titles write them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.services.recommend.topic_breadth import breadth
from paperindex.engine import SearchEngine
from storage.models import IndexRow

NOUNS = [
    "robots",
    "games",
    "traffic",
    "markets",
    "drones",
    "kitchens",
    "warehouses",
    "satellites",
    "vehicles",
    "factories",
    "hospitals",
    "farms",
    "ships",
    "elevators",
    "turbines",
    "grids",
    "trains",
    "bridges",
    "rovers",
    "batteries",
]
RL_AREAS = {"Offline": "with", "Multi-agent": "for", "Model-based": "in"}


def library() -> list[IndexRow]:
    """60 reinforcement-learning papers (three sub-areas named in their titles) among 200."""
    rows = []
    for area, joint in RL_AREAS.items():
        for noun in NOUNS:
            rows.append(
                IndexRow(
                    len(rows) + 1,
                    f"{area} reinforcement learning {joint} {noun}",
                    f"We study reinforcement learning of policies that act on {noun}.",
                )
            )
    for field in ("Object detection with", "Image segmentation for"):
        for n in range(70):
            noun = NOUNS[n % len(NOUNS)]
            rows.append(IndexRow(len(rows) + 1, f"{field} {noun} {n}", f"We study images of {noun}."))
    return rows


def test_a_broad_topic_gets_its_sub_areas_as_the_titles_write_them() -> None:
    found = breadth(SearchEngine.build(library()), "reinforcement learning")
    assert found is not None
    assert (found.matches, found.papers) == (60, 200)
    assert set(found.narrower) == {
        "offline reinforcement learning",
        "multi-agent reinforcement learning",
        "model-based reinforcement learning",
    }


def test_a_narrow_topic_a_small_share_and_an_unknown_one_are_not_broad() -> None:
    engine = SearchEngine.build(library())
    assert breadth(engine, "offline reinforcement learning") is None  # 20 papers: too few to be broad
    assert breadth(engine, "quantum chemistry") is None
    assert breadth(engine, "the of") is None  # no words the index keeps


def test_a_broad_topic_in_a_small_library_is_not_flagged() -> None:
    small = SearchEngine.build(library()[:40] + library()[60:80])  # 40 of 60 papers: under 50
    assert breadth(small, "reinforcement learning") is None


def _one_field(title: str, abstract: str) -> list[IndexRow]:
    """60 papers of one field (``{noun}`` in the title and abstract filled in) and 20 others."""
    rows = [
        IndexRow(n + 1, title.format(noun=noun), abstract.format(noun=noun))
        for n, noun in enumerate(NOUNS * 3)
    ]
    return rows + [
        IndexRow(len(rows) + n + 1, f"Sorting {noun} {n}", "We sort lists.") for n, noun in enumerate(NOUNS)
    ]


def test_a_narrower_topic_keeps_the_acronyms_its_titles_write_in_capitals() -> None:
    rows = _one_field("Explaining GNN predictions {noun}", "We study graph learning on {noun}.")
    found = breadth(SearchEngine.build(rows), "graph learning")
    assert found is not None
    assert "explaining GNN predictions" in found.narrower, found.narrower


def test_a_word_hyphened_to_a_narrower_topic_is_shown_with_it() -> None:
    """ "in" is a stop word, yet "In-context learning" is offered as written, not as "context learning"."""
    rows = _one_field("In-context learning for {noun}", "We study language models on {noun}.")
    found = breadth(SearchEngine.build(rows), "language models")
    assert found is not None
    assert found.narrower == ("in-context learning",), found.narrower


class _IndexGrownMeanwhile:
    """The real index, but ``alive`` read before the last ``grown`` papers were added (as when ingest
    adds papers between the reads) and one paper gone from it by the time its terms are read."""

    def __init__(self, engine: SearchEngine, grown: int, gone: int) -> None:
        self._index, self._grown, self._gone = engine.index, grown, gone

    @property
    def alive(self) -> Any:
        return self._index.alive[: len(self._index.alive) - self._grown]

    def doc_terms(self, doc_id: int, *, phrases: bool = False) -> dict[str, int]:
        if doc_id == self._gone:
            raise KeyError(doc_id)
        return self._index.doc_terms(doc_id, phrases=phrases)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)


def test_papers_added_or_merged_while_it_reads_are_left_out_not_an_error() -> None:
    engine = SearchEngine.build(library())
    grown = SimpleNamespace(index=_IndexGrownMeanwhile(engine, grown=100, gone=1), title=engine.title)
    found = breadth(grown, "reinforcement learning")  # the first 100 papers: 60 of them RL
    assert found is not None
    assert (found.matches, found.papers) == (60, 100)
    assert "offline reinforcement learning" in found.narrower
