"""Papers tokenised in bulk get exactly the terms, counts and order the tokenizer gives one by one."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_data import shared_path

from paperindex.bulk_terms import DocumentPostings, document_postings, title_words
from paperindex.documents import Document as IndexRow
from paperindex.engine import TITLE_WEIGHT, SearchEngine, document_terms
from paperindex.index import BM25Index
from paperindex.tokenizer import WORD_RE, normalize, tokenize, without_links


def per_document(postings: DocumentPostings) -> list[list[tuple[str, int]]]:
    pairs = list(
        zip(map(postings.terms.__getitem__, postings.term_ids.tolist()), postings.tf.tolist(), strict=True)
    )
    out, at = [], 0
    for n in postings.n_unique.tolist():
        out.append(pairs[at : at + n])
        at += n
    return out


def assert_as_the_tokenizer(titles: list[str], abstracts: list[str]) -> None:
    postings = document_postings(titles, abstracts, title_weight=TITLE_WEIGHT)
    expected = [document_terms(t, a) for t, a in zip(titles, abstracts, strict=True)]
    got = per_document(postings)
    for n, want in enumerate(expected):
        assert got[n] == list(want.items()), (titles[n], abstracts[n])
    # Terms are numbered in the order they first appear, document after document.
    assert postings.terms == list(dict.fromkeys(t for want in expected for t in want))
    words, ptr, ids = title_words(titles)
    for n, title in enumerate(titles):
        found = [words[i] for i in ids[ptr[n] : ptr[n + 1]].tolist()]
        assert found == list(dict.fromkeys(WORD_RE.findall(without_links(normalize(title))))), title


def test_links_are_no_words_in_bulk_as_one_by_one() -> None:
    titles = ["Lifelong Learning with GANs", "See www.example.org/x (code)", "https://t.co/a b"]
    abstracts = [
        "Code is available at \\url{https://github.com/MiaoyunZhao/GANmemory_LifelongLearning}.",
        "Data at HTTP://Example.COM/Data.zip, models at ftp://host/x and www.site.io.",
        "",
    ]
    assert_as_the_tokenizer(titles, abstracts)
    terms = set(document_postings(titles, abstracts, title_weight=TITLE_WEIGHT).terms)
    assert {"lifelong", "learn", "code", "url", "data", "model"} <= terms
    assert not {"github", "lifelonglearn", "https", "com", "miaoyunzhao", "zip", "site", "t.co"} & terms


def test_phrases_words_and_punctuation_as_one_by_one() -> None:
    titles = [
        "Graph Neural Networks: a survey (GNNs)",
        "KV-cache quantization for LLMs, v1.2 and GPT-3.5",
        "The C++ of models' errors / what's next?",
        "Ángel’s ﬁne-tuning of ＧＰＴ: İstanbul, Straße",
        "",
        "... !!! ___ 🙂",
        "end.Next 3.5.x a.b (graph)neural [x] y z",
    ]
    abstracts = [
        "We study graph neural networks; graph neural networks are neural.",
        "",
        "Models modelling modeled. C++ and CD4+ cells, e.g. 1 in 5.",
        "naïve — “quoted” text\u00a0with\u2003odd spaces\x1cand\x00nul",
        "Only an abstract.",
        "",
        "x y 7",
    ]
    assert_as_the_tokenizer(titles, abstracts)
    postings = document_postings(titles[:1], abstracts[:1], title_weight=TITLE_WEIGHT)
    assert "graph neural" in postings.terms
    assert "neural network" in postings.terms
    assert "survey gnn" not in postings.terms  # "(" ends the phrase


_TRICKY = "aAzZ09 .'’‘ʼ+-_,;:()[]{}!?\"/\\*\t\n\u00a0\u2003\x1c\x00ßİıﬁﬂＧé\u0301ε×−—–“”🙂٣"
tricky_text = st.text(alphabet=st.sampled_from(_TRICKY), max_size=60) | st.text(max_size=40)
wordy_text = st.lists(
    st.sampled_from(
        ["the", "graph", "Neural", "nets", "a", "3.5", "c++", "(x)", "v1.2,", "LLMs", "of", "-", "."]
    ),
    max_size=12,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(tricky_text | wordy_text, tricky_text | wordy_text), min_size=1, max_size=6))
def test_any_text_as_one_by_one(papers: list[tuple[str, str]]) -> None:
    assert_as_the_tokenizer([t for t, _ in papers], [a for _, a in papers])


@pytest.mark.shared
def test_every_multivenue_paper_as_one_by_one() -> None:
    path = shared_path("data", "multivenue", "multivenue_corpus.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert len(records) > 30_000
    assert_as_the_tokenizer(
        [r.get("title") or "" for r in records], [r.get("abstract") or "" for r in records]
    )


def test_engine_built_in_bulk_scores_as_an_index_of_the_counts() -> None:
    rows = [
        IndexRow(10 + n, title, abstract, (), None, None, ())
        for n, (title, abstract) in enumerate(
            [
                ("Graph neural networks", "Graphs and neural networks for molecules."),
                ("KV cache quantization", "We quantize the KV cache of LLMs."),
                ("Neural graph search", "Search over graphs with neural networks, again graphs."),
                ("Diffusion models", "Diffusion for images; the graph is not here."),
            ]
        )
    ]
    engine = SearchEngine.build(rows)
    reference = BM25Index()
    reference.add_counts([r.paper_id for r in rows], [document_terms(r.title, r.abstract) for r in rows])
    for query in ["graph neural", "kv cache", "diffusion images graph", "graph neural networks"]:
        terms = tokenize(query)
        assert engine.index.score_array(terms).tolist() == reference.score_array(terms).tolist()
    assert engine.index.doc_terms(12) == reference.doc_terms(12)
    # Adding again replaces, with terms the index knows and terms it does not.
    engine.add([IndexRow(11, "Quantized zebras", "KV cache zebras", (), None, None, ())])
    reference.add_counts([11], [document_terms("Quantized zebras", "KV cache zebras")])
    assert engine.index.score_array(["zebra"]).tolist() == reference.score_array(["zebra"]).tolist()
    assert engine.index.score_array(["cach"]).tolist() == reference.score_array(["cach"]).tolist()
    assert engine.search("zebras", limit=5).hits[0].paper_id == 11


def test_add_postings_refuses_postings_that_do_not_fit() -> None:
    index = BM25Index()
    postings = document_postings(["a title"], ["an abstract"], title_weight=1)
    with pytest.raises(ValueError, match="distinct document id"):
        index.add_postings([1, 1], np.array([1, 1]), postings.term_ids, postings.tf, postings.terms)
    with pytest.raises(ValueError, match="do not match"):
        index.add_postings([1], postings.n_unique + 1, postings.term_ids, postings.tf, postings.terms)
    assert len(index) == 0
