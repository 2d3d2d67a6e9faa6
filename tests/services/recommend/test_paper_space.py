"""The paper space: LSA coordinates of the index's papers, folded in as papers arrive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bot.services.recommend import paper_space
from bot.services.recommend.paper_space import PaperSpace
from paperindex.index import BM25Index

TOPICS = {
    "graphs": "graph nodes edges message passing molecules neighbours",
    "vision": "image pixels convolution segmentation detection video",
    "speech": "audio speech spectrogram speaker phonemes recognition",
}


def _docs(n: int, seed: int) -> tuple[list[int], list[list[str]], list[str]]:
    rng = np.random.default_rng(seed)
    ids, docs, labels = [], [], []
    for i in range(n):
        topic = list(TOPICS)[i % 3]
        words = TOPICS[topic].split()
        docs.append([*list(rng.choice(words, 12)), "paper", "method"])
        ids.append(seed * 1000 + i)
        labels.append(topic)
    return ids, docs, labels


def test_papers_of_one_topic_lie_closer_to_each_other_than_to_others() -> None:
    index = BM25Index()
    ids, docs, labels = _docs(60, 1)
    index.add(ids, docs)
    space = PaperSpace(index, dims=8)
    space.rebuild()
    coords = space.coords
    assert coords.shape == (60, 8)
    assert np.allclose(np.linalg.norm(coords, axis=1), 1.0, atol=1e-5)
    sims = coords @ coords.T
    same = np.array([[a == b for b in labels] for a in labels])
    assert sims[same].mean() > sims[~same].mean() + 0.3


def test_papers_added_later_are_folded_in_and_a_grown_corpus_is_stale() -> None:
    """New papers get coordinates with the existing basis (close to their topic's papers); once the
    corpus has more than doubled, the space says it wants a rebuild."""
    index = BM25Index()
    ids, docs, labels = _docs(60, 1)
    index.add(ids, docs)
    space = PaperSpace(index, dims=8)
    space.rebuild()
    assert not space.stale
    new_ids, new_docs, new_labels = _docs(9, 2)
    index.add(new_ids, new_docs)
    space.follow()
    coords = space.coords
    assert len(coords) == 69
    for k, label in enumerate(new_labels):
        own = [i for i, other in enumerate(labels) if other == label]
        rest = [i for i, other in enumerate(labels) if other != label]
        assert (coords[own] @ coords[60 + k]).mean() > (coords[rest] @ coords[60 + k]).mean()
    more_ids, more_docs, _ = _docs(60, 3)
    index.add(more_ids, more_docs)
    assert space.stale


def test_leaving_out_unused_terms_changes_no_loading() -> None:
    """The SVD runs on the terms the papers use (the vocabulary also holds phrase terms no paper
    vector has); its result is the one the whole vocabulary, empty columns included, gives."""
    import scipy.sparse as sp

    from bot.services.recommend.paper_space import randomized_svd_loadings

    rng = np.random.default_rng(3)
    used = np.sort(rng.choice(5000, 300, replace=False))
    dense = rng.random((80, 300)) * (rng.random((80, 300)) < 0.1)
    compact = sp.csr_matrix(dense)
    wide = sp.csr_matrix((compact.data, used[compact.indices], compact.indptr), shape=(80, int(used[-1]) + 1))
    whole = randomized_svd_loadings(wide, 10, seed=5)
    subset = randomized_svd_loadings(compact, 10, seed=5, terms=used)
    assert subset.shape == (300, 10)
    assert np.allclose(np.abs(whole[used]), np.abs(subset), atol=1e-4)  # singular vectors up to sign
    assert np.allclose(np.delete(whole, used, axis=0), 0.0, atol=1e-6)


def test_a_saved_space_is_mapped_back_for_the_same_slots_and_refused_for_others(tmp_path: Path) -> None:
    """What a later start loads instead of computing the space again: the same coordinates and basis
    (read-only, mapped from the file); papers indexed since are folded in; another store's or another
    index's file is refused, as is a damaged one."""
    index = BM25Index()
    ids, docs, _ = _docs(60, 1)
    index.add(ids, docs)
    space = PaperSpace(index, dims=8)
    space.rebuild()
    path = tmp_path / "db.paper-space"
    space.save(path, "store-a")

    again = PaperSpace(index, dims=8)
    assert again.load(path, "store-a")
    assert again.ready
    assert not again.stale
    assert again.placed == 60
    assert np.array_equal(again.coords, space.coords)
    assert not again.coords.flags.writeable
    new_ids, new_docs, _ = _docs(9, 2)
    index.add(new_ids, new_docs)
    again.follow()
    space.follow()
    assert again.placed == 69
    assert np.allclose(again.coords, space.coords, atol=1e-6)

    assert not PaperSpace(index, dims=8).load(path, "store-b")
    assert not PaperSpace(index, dims=4).load(path, "store-a")
    other = BM25Index()
    other.add([i + 1 for i in ids], docs)
    assert not PaperSpace(other, dims=8).load(path, "store-a")
    assert not PaperSpace(index, dims=8).load(tmp_path / "absent", "store-a")
    damaged = bytearray(path.read_bytes())
    coords_at = damaged.rfind(np.float32(space.coords[59, -1]).tobytes())
    damaged[coords_at : coords_at + 4] = np.float32(np.nan).tobytes()
    path.write_bytes(bytes(damaged))
    assert not PaperSpace(index, dims=8).load(path, "store-a")


def test_the_space_computed_in_stretches_is_the_space_computed_at_once(monkeypatch: Any) -> None:
    """Gathering the papers' vectors a stretch at a time (the peak memory of a rebuild) changes nothing."""
    index = BM25Index()
    ids, docs, _ = _docs(90, 1)
    index.add(ids, docs)
    whole = PaperSpace(index, dims=8)
    whole.rebuild()
    monkeypatch.setattr(paper_space, "UNIT_ROWS_STEP", 7)
    stretched = PaperSpace(index, dims=8)
    stretched.rebuild()
    assert np.array_equal(whole.coords, stretched.coords)


def test_a_paper_replaced_while_the_space_reads_it_is_read_again(monkeypatch: Any) -> None:
    """A rebuild reads every paper's vector twice (counts, then weights); a paper replaced in the index
    between the reads (new text, other words) makes it read everything again, and the space it gives
    is the one of the index as it now stands, not a matrix with the old paper's counts."""
    index = BM25Index()
    ids, docs, _ = _docs(60, 1)
    index.add(ids, docs)
    reads = {"n": 0}
    real = index.doc_weights

    def replacing_after_the_first_read(doc_ids: Any) -> Any:
        reads["n"] += 1
        if reads["n"] == 2:  # the first read is done: the paper gets other words meanwhile
            index.add([ids[0]], [[*docs[0], "extra", "words", "here"]])
        return real(doc_ids)

    monkeypatch.setattr(index, "doc_weights", replacing_after_the_first_read)
    space = PaperSpace(index, dims=8)
    space.rebuild()
    monkeypatch.setattr(index, "doc_weights", real)
    fresh = PaperSpace(index, dims=8)
    fresh.rebuild()
    assert reads["n"] > 2
    assert np.allclose(space.coords, fresh.coords, atol=1e-6)


def test_the_sketch_is_made_orthonormal_in_place_spanning_what_it_spanned() -> None:
    rng = np.random.default_rng(1)
    y = (rng.standard_normal((5000, 12)) @ np.diag(np.logspace(0, -3, 12))).astype(np.float32)
    before = y.copy()
    q = paper_space._orthonormalise(y)
    assert q is y  # no second array of the sketch's size
    assert np.allclose(q.T @ q, np.eye(12), atol=1e-4)
    reference, _ = np.linalg.qr(before.astype(np.float64))
    assert np.allclose(np.linalg.svd(reference.T @ q, compute_uv=False), 1.0, atol=1e-4)


def test_the_loadings_are_the_top_left_singular_vectors_and_zero_where_nothing_spans() -> None:
    rng = np.random.default_rng(2)
    m = (rng.standard_normal((3000, 8)) @ np.diag([9, 7, 5, 4, 3, 2, 1, 0.5])).astype(np.float32)
    u, _, _ = np.linalg.svd(m.astype(np.float64), full_matrices=False)
    found = paper_space._left_singular(m, 5)  # (written over m's memory)
    assert np.shares_memory(found, m)
    assert found.flags.c_contiguous
    assert np.allclose(np.abs((found * u[:, :5]).sum(axis=0)), 1.0, atol=1e-4)  # each, up to its sign
    flat = np.zeros((100, 4), dtype=np.float32)
    flat[:, 0] = 1.0  # one direction only
    loadings = paper_space._left_singular(flat, 3)
    assert np.isfinite(loadings).all()
    assert np.allclose(np.linalg.norm(loadings, axis=0), [1.0, 0.0, 0.0], atol=1e-5)
