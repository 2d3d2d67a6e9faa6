"""Other forms of a query's compounds: joined, hyphenated, spaced."""

from __future__ import annotations

import pytest

from paperindex.documents import Document
from paperindex.engine import SearchEngine
from paperindex.word_forms import other_forms

ROWS = [
    Document(1, "Oversmoothing in Deep GNNs", "Deep graph networks suffer from oversmoothing."),
    Document(2, "Residual Connections Against Over-Smoothing", "We study over-smoothing in graph networks."),
    Document(3, "Label Smoothing Revisited", "Label smoothing regularizes classifiers; smoothing helps."),
    Document(4, "Pre-training Graph Models", "We pretrain graph models on molecules before training."),
    Document(5, "Pretraining at Scale", "Large-scale pretraining of language models."),
    Document(6, "Understanding Networks", "Understanding deep networks; networks understand images."),
    Document(7, "Stand-alone Networks", "A stand-alone model of standing waves."),
]


def test_a_word_only_a_link_holds_is_no_form_papers_write() -> None:
    """A repository's name in a link ("…/GANmemory_LifelongLearning") is not the paper writing
    "lifelonglearning": a search for "lifelong learning" does not ask for it."""
    rows = [
        Document(1, "Lifelong Learning of GANs", "Code at https://github.com/x/GANmemory_LifelongLearning."),
        Document(2, "Continual and Lifelong Learning", "Lifelong learning keeps what was learned."),
    ]
    assert terms(SearchEngine.build(rows), "lifelong learning") == set()


@pytest.fixture
def engine() -> SearchEngine:
    return SearchEngine.build(ROWS)


def terms(engine: SearchEngine, text: str) -> set[str]:
    return {f.term for f in other_forms(text, engine.index)}


def weights(engine: SearchEngine, text: str) -> dict[str, float]:
    return {f.term: f.weight for f in other_forms(text, engine.index)}


def test_spaced_and_hyphenated_words_also_ask_for_the_joined_word(engine: SearchEngine) -> None:
    # "over" is a stop word: "over-smoothing" asks for "smooth", the joined word alone names it
    assert weights(engine, "over-smoothing") == {"oversmooth": 1.0}
    assert weights(engine, "over smoothing") == {"oversmooth": 1.0}
    assert terms(engine, "pre-training") == {"pretrain"}


def test_a_joined_word_asks_for_the_form_papers_write_apart(engine: SearchEngine) -> None:
    # "over" is a stop word: a paper writing "over-smoothing" holds "smooth" alone
    assert terms(engine, "oversmoothing") == {"smooth"}
    # a title writes "Pre-training": its pair "pre train" is indexed (the halves apart are not asked)
    assert terms(engine, "pretraining") == {"pre train"}
    forms = other_forms("pretraining", engine.index)
    assert {f.compound for f in forms} == {"pre-training"}


def test_a_form_weighs_what_the_typed_form_weighs(engine: SearchEngine) -> None:
    """A joined word weighs the idf its spaced words weigh: a paper writing "pretraining" scores as
    one writing "pre-training" would, not more for holding one rarer word; a title pair 0.3 of it."""
    index = engine.index
    whole, halves = index.idf("pretrain"), index.idf("pre") + index.idf("train")
    assert weights(engine, "pretraining")["pre train"] == pytest.approx(0.3 * min(1.0, whole / halves))
    joined = weights(engine, "pre-training")["pretrain"]
    assert joined == pytest.approx(min(1.0, (index.idf("pre") + index.idf("train")) / index.idf("pretrain")))


def test_words_that_only_look_like_compounds_ask_for_nothing_more(engine: SearchEngine) -> None:
    assert terms(engine, "understanding") == set()  # "under" + "standing": more common whole
    assert terms(engine, "networks") == set()  # "net" + "works": no title pairs them
    assert terms(engine, "graph networks") == set()  # "graphnetworks" is in no paper


def test_all_three_forms_find_the_papers_of_both(engine: SearchEngine) -> None:
    from paperindex.forgiving import ForgivingSearch

    search = ForgivingSearch()
    for query in ("oversmoothing", "over-smoothing", "over smoothing"):
        results, _ = search.search(engine, query, limit=5)
        assert {1, 2} <= {hit.paper_id for hit in results.hits}, query
        assert results.hits[0].paper_id in {1, 2}, query
