"""Strings held as packed UTF-8 (titles, author lists, terms of a loaded index) read back as they were
given, and the term table that finds a term's id among them without a dict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paperindex import packed, snapshot, term_ids
from paperindex.packed import PackedStrings, check_sorted, encode, holding_byte, sorted_bisect
from paperindex.term_ids import DuplicateTermError, TermTable

TEXTS = ["", "Attention is all you need", "Ángel Díaz", "🙂 emoji", "lone \ud800 surrogate", "nul\x00inside"]


def test_strings_read_back_as_given_whether_packed_appended_or_mapped(tmp_path: Path) -> None:
    path = tmp_path / "s"
    snapshot.write(path, {}, {}, {"texts": TEXTS * 3})
    with snapshot.Snapshot(path) as saved:
        mapped = saved.packed("texts", length=len(TEXTS) * 3)
        read = saved.packed("texts", mapped=False)
    for strings in (mapped, read):
        assert list(strings) == TEXTS * 3
        assert [strings[n] for n in range(len(strings))] == TEXTS * 3
        assert strings[-1] == TEXTS[-1]
        assert strings.char_lengths().tolist() == [len(t) for t in TEXTS * 3]
        strings.append("later")
        assert strings[len(TEXTS) * 3] == "later"
    with pytest.raises(IndexError):
        mapped[100]


def test_many_appended_strings_are_packed_in_buffers_and_joined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packed, "_TAIL", 3)
    monkeypatch.setattr(packed, "_MAX_CHUNKS", 2)
    words = [f"w{n}é" for n in range(50)]
    strings = PackedStrings(words)
    assert len(strings._chunks) <= 3, "appended buffers joined"
    assert list(strings) == words
    assert strings[10:13] == words[10:13]
    data, ends = strings.arrays()
    assert data.tobytes() == "".join(words).encode()
    assert ends.tolist() == np.cumsum([len(w.encode()) for w in words]).tolist()


def test_a_substring_is_found_only_inside_one_string() -> None:
    """An author filter: "ab" across the end of one string and the start of the next is no match."""
    strings = PackedStrings(["xa", "bx", "ab", "", "zzab", "abab"])
    assert strings.containing("ab").tolist() == [2, 4, 5]
    assert strings.containing("díaz").tolist() == []
    assert holding_byte(PackedStrings(["a b", "ab", "c d"]), ord(" ")).tolist() == [0, 2]


def test_a_bisect_over_sorted_strings_orders_as_python_does() -> None:
    words = sorted(["graph", "graphs", "gráfico", "grape", "zeta", "\ud800x", "🙂"])
    strings = PackedStrings(words)
    assert check_sorted(strings)
    assert not check_sorted(PackedStrings(["b", "a"]))
    for probe in ["gr", "graph", "grapi", "", "\uffff", "🙂"]:
        expected = sum(w < probe for w in words)
        assert sorted_bisect(strings, encode(probe)) == expected, probe


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=40))
def test_a_term_table_numbers_terms_as_a_dict_would(batch: list[str]) -> None:
    table = TermTable()
    expected: dict[str, int] = {}
    for part in (batch[: len(batch) // 2], batch[len(batch) // 2 :], batch):
        ids = table.add(part)
        for term, tid in zip(part, ids.tolist(), strict=True):
            assert expected.setdefault(term, len(expected)) == tid
    assert list(table.terms) == list(expected)
    for term, tid in expected.items():
        assert table.get(term) == tid
    assert table.get("never seen \ud800") is None


def test_terms_whose_hashes_are_the_same_keep_their_own_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hash alike (the worst case): found by comparing the terms' bytes, still each its own id."""
    monkeypatch.setattr(term_ids, "hash", lambda term: 7, raising=False)
    monkeypatch.setattr(term_ids, "hashes", lambda terms: np.full(len(list(terms)), 7, dtype=np.int64))
    table = TermTable()
    assert table.add(["cache", "graph", "cache"]).tolist() == [0, 1, 0]
    assert table.add(["kernel", "graph"]).tolist() == [2, 1]
    assert [table.get(t) for t in ("cache", "graph", "kernel", "other")] == [0, 1, 2, None]
    reloaded = TermTable(PackedStrings(["cache", "graph", "kernel"]))
    assert reloaded.get("kernel") == 2
    with pytest.raises(DuplicateTermError):
        TermTable(PackedStrings(["cache", "graph", "cache"]))


def test_strings_read_in_blocks_from_any_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the spelling corrector reads (the index's terms since the last look): from any start, every
    string whole, block after block, and how many cost nothing to ask."""
    monkeypatch.setattr(packed, "_BLOCK", 8)
    words = [f"{n}{'é' * (n % 4)}\ud800{'x' * (n % 7)}" for n in range(40)]
    path = tmp_path / "s"
    snapshot.write(path, {}, {}, {"words": words})
    with snapshot.Snapshot(path) as saved:
        strings = saved.packed("words")
    strings.extend(["tail one", "tail two"])
    everything = [*words, "tail one", "tail two"]
    for start in (0, 1, 7, 39, 40, 41, 42):
        assert list(strings.iter_from(start)) == everything[start:], start
        view = packed.PackedSlice(strings, start, len(strings))
        assert len(view) == len(everything) - start
        assert bool(view) == (start < len(everything))
        assert list(view) == everything[start:]
