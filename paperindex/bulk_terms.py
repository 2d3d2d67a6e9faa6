"""Many papers tokenised at once: the terms :func:`paperindex.engine.document_terms` gives each, as arrays.

Tokenising paper by paper costs ~0.1 ms each in Python (the pieces of text as bytes objects, a dict
look-up and a Counter per piece), minutes at a million papers. Here a batch's texts are joined and
translated at once (C-level ``bytes.translate``: upper-case ASCII lowered, every byte that cannot be in
a word a space), and the compiled loops of :mod:`paperindex.bulk_kernels` cut the pieces, number
the distinct ones (a hash table over their bytes), and count each paper's terms; Python looks at each
distinct piece once (:class:`PieceTable`), through the tokenizer's own cached functions, so the terms
are the tokenizer's.

Why the terms are the same (``tests/paperindex/test_bulk_terms.py`` checks it on every multivenue paper and on
adversarial text): a word (``WORD_RE``) never spans a byte mapped to a space, and each piece's terms are
the tokenizer's terms of that piece. Text that is not ASCII is normalised first (NFKC, casefold,
one apostrophe, as the tokenizer does) and cut the same way, its UTF-8 bytes beyond ASCII kept as they
are. Titles keep the phrase-breaking punctuation in their pieces, so the adjacent word pairs
(:func:`paperindex.tokenizer.phrase_spans`) come from what each piece says about its words; a title that
is not ASCII (NFKC there is applied before casefolding word by word) takes the tokenizer's
:func:`~paperindex.tokenizer.phrase_terms` itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from paperindex import bulk_kernels as kernels
from paperindex.tokenizer import (
    PHRASE_JOIN,
    WORD_RE,
    normal_word_terms,
    normalize,
    phrase_terms,
    without_links,
)

IntArray: TypeAlias = npt.NDArray[np.int64]
Int32Array: TypeAlias = npt.NDArray[np.int32]

_WORD_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789'.+")
#: What ends a phrase (as the tokenizer's ``_PHRASE_BREAK_RE``); "." is in words too.
_BREAKS: Final = '.,;:()[]{}!?"'
_BREAK_RE: Final = re.compile("[" + re.escape(_BREAKS) + "]")
_BREAK_BYTES: Final = frozenset(_BREAKS.encode())


def _table(keep: frozenset[int]) -> bytes:
    """Lower-case ASCII letters; keep ``keep`` and every byte past ASCII (UTF-8); the rest → space."""
    return bytes(c if c in keep or c >= 0x80 else (c + 32 if 65 <= c <= 90 else 32) for c in range(256))


_TEXT_TABLE: Final = _table(_WORD_BYTES)
_TITLE_TABLE: Final = _table(_WORD_BYTES | _BREAK_BYTES)
_SPLIT_BREAKS: Final = str.maketrans({c: " " for c in _BREAKS if c != "."})
_CHUNK_DOCS: Final = 4096

#: ``first`` of a piece without words (:func:`paperindex.bulk_kernels.title_pairs`)
_NO_WORDS: Final = -2


class _Growing:
    """An int array appended to in bulk, capacity doubling."""

    def __init__(self, dtype: type[np.integer], initial: Sequence[int] = ()) -> None:
        self.data = np.zeros(max(16, len(initial)), dtype=dtype)
        self.size = 0
        self.extend(initial)

    def extend(self, values: Sequence[int] | npt.NDArray[np.integer]) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.zeros(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    @property
    def array(self) -> npt.NDArray[np.integer]:
        return self.data[: self.size]


@dataclass(slots=True)
class _Texts:
    """A batch of texts as one translated blob: text ``n`` is ``blob[bounds[n]:bounds[n + 1]]``."""

    blob: npt.NDArray[np.uint8]
    bounds: IntArray
    ascii: npt.NDArray[np.bool_]


def _texts(texts: Sequence[str], table: bytes) -> _Texts:
    ascii = [t.isascii() for t in texts]
    encoded = [
        without_links(t).encode("ascii") if a else without_links(normalize(t)).encode("utf-8")
        for t, a in zip(texts, ascii, strict=True)
    ]
    bounds = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=bounds[1:])
    blob = np.frombuffer(b"".join(encoded).translate(table), dtype=np.uint8)
    return _Texts(blob, bounds, np.array(ascii, dtype=bool))


@dataclass(slots=True)
class _Described:
    """What :meth:`PieceTable._describe` found in a run of new pieces, piece after piece."""

    terms: list[int] = field(default_factory=list)
    n_terms: list[int] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    n_words: list[int] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    last: list[int] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)
    n_pairs: list[int] = field(default_factory=list)


class PieceNumbers:
    """The distinct pieces of the texts seen so far, numbered in order of first appearance (a hash
    table over their bytes, in :mod:`paperindex.bulk_kernels`)."""

    def __init__(self) -> None:
        self._table = np.full(1 << 12, -1, dtype=np.int32)
        self._hashes = np.zeros(1 << 10, dtype=np.uint64)
        self._keys = np.zeros(1 << 16, dtype=np.uint8)
        self._key_ptr = np.zeros(len(self._hashes) + 1, dtype=np.int64)
        self._state = np.zeros(3, dtype=np.int64)  # pieces, key bytes, ids written by the last call

    def number(self, texts: _Texts) -> tuple[Int32Array, IntArray]:
        """Every piece of every text as a piece id, and each text's range of them."""
        n_texts = len(texts.bounds) - 1
        out = np.empty(len(texts.blob) // 2 + n_texts + 1, dtype=np.int32)
        out_ptr = np.zeros(n_texts + 1, dtype=np.int64)
        self._state[2] = 0
        done = 0
        while True:
            done = kernels.find_pieces(
                texts.blob, texts.bounds, done, self._table, self._hashes, self._keys, self._key_ptr,
                self._state, out, out_ptr,
            )  # fmt: skip
            if done == n_texts:
                break
            self._grow(int(texts.bounds[done + 1] - texts.bounds[done]))
        return out[: self._state[2]], out_ptr

    def _grow(self, text_bytes: int) -> None:
        """Room for a text of ``text_bytes`` more: its every byte a new piece at worst."""
        n_pieces, n_key = int(self._state[0]), int(self._state[1])
        need = n_pieces + text_bytes + 1
        if need > len(self._hashes) - 1:
            capacity = max(2 * len(self._hashes), need + 1)
            self._hashes = np.concatenate([self._hashes, np.zeros(capacity - len(self._hashes), np.uint64)])
            self._key_ptr = np.concatenate(
                [self._key_ptr, np.zeros(capacity - len(self._key_ptr) + 1, np.int64)]
            )
        if n_key + text_bytes > len(self._keys):
            capacity = max(2 * len(self._keys), n_key + text_bytes)
            self._keys = np.concatenate([self._keys, np.zeros(capacity - len(self._keys), np.uint8)])
        size = len(self._table)
        while 2 * (n_pieces + text_bytes) > size:
            size *= 2
        if size != len(self._table):
            self._table = kernels.rehash(self._hashes, n_pieces, size)


class PieceTable(PieceNumbers):
    """:class:`PieceNumbers` and what each piece holds: its terms (numbered in :attr:`terms`), its words
    (in :attr:`words`, for the title index) and what :func:`paperindex.bulk_kernels.title_pairs` needs
    to join its word terms into phrases."""

    def __init__(self) -> None:
        super().__init__()
        self._resolved = 0
        self.terms: list[str] = []  # term id → term (word terms and phrase terms)
        self._term_id: dict[str, int] = {}
        self.words: list[str] = []  # word id → word
        self._word_id: dict[str, int] = {}
        # Phrase pairs (first << 32 | second term id) numbered as first met, and each one's term id.
        self._pairs = np.full((1 << 10, 2), -1, dtype=np.int64)
        self._pair_state = np.zeros(1, dtype=np.int64)
        self._pair_terms = _Growing(np.int32)
        self.term_ptr = _Growing(np.int64, [0])
        self.piece_terms = _Growing(np.int32)
        self.word_ptr = _Growing(np.int64, [0])
        self.piece_words = _Growing(np.int32)
        self.first = _Growing(np.int32)
        self.last = _Growing(np.int32)
        self.flags = _Growing(np.uint8)
        self.pair_ptr = _Growing(np.int64, [0])
        self.pairs = _Growing(np.int64)

    def term_id(self, term: str) -> int:
        tid = self._term_id.get(term)
        if tid is None:
            tid = self._term_id[term] = len(self.terms)
            self.terms.append(term)
        return tid

    def _word(self, word: str) -> int:
        wid = self._word_id.get(word)
        if wid is None:
            wid = self._word_id[word] = len(self.words)
            self.words.append(word)
        return wid

    def pieces(self, texts: _Texts) -> tuple[Int32Array, IntArray]:
        """:meth:`number`, and what each new piece holds found."""
        found = self.number(texts)
        self._resolve()
        return found

    def _resolve(self) -> None:
        """What each piece numbered since the last call holds (the tokenizer's functions, cached)."""
        n_pieces = int(self._state[0])
        keys, ptr = self._keys, self._key_ptr
        found = _Described()
        for pid in range(self._resolved, n_pieces):
            self._describe(keys[ptr[pid] : ptr[pid + 1]].tobytes().decode("utf-8"), found)
        self._resolved = n_pieces
        self.piece_terms.extend(found.terms)
        self.term_ptr.extend((np.cumsum(found.n_terms, dtype=np.int64) + self.term_ptr.array[-1]).tolist())
        self.piece_words.extend(found.words)
        self.word_ptr.extend((np.cumsum(found.n_words, dtype=np.int64) + self.word_ptr.array[-1]).tolist())
        self.first.extend(found.first)
        self.last.extend(found.last)
        self.flags.extend(found.flags)
        self.pairs.extend(found.pairs)
        self.pair_ptr.extend((np.cumsum(found.n_pairs, dtype=np.int64) + self.pair_ptr.array[-1]).tolist())

    def _describe(self, piece: str, into: _Described) -> None:
        # Terms as the tokenizer gives them for the piece cut at the phrase breaks too (the pieces a
        # text, not a title, is cut into; the words are the same either way).
        term_id = self.term_id
        if piece.isalnum():  # one word (most pieces): no regex, no phrase inside
            terms = normal_word_terms(piece)
            term = term_id(terms[0]) if terms else -1
            into.terms.extend([term] if terms else [])
            into.n_terms.append(len(terms))
            into.words.append(self._word(piece))
            into.n_words.append(1)
            into.first.append(term)
            into.last.append(term)
            into.flags.append(0)
            into.n_pairs.append(0)
            return
        before = len(into.terms)
        for part in piece.translate(_SPLIT_BREAKS).split():
            into.terms.extend(map(term_id, normal_word_terms(part)))
        into.n_terms.append(len(into.terms) - before)
        matches = list(WORD_RE.finditer(piece))
        into.words.extend(self._word(m.group()) for m in matches)
        into.n_words.append(len(matches))
        # As tokenize.phrase_spans walks the words: a break in the gap or a word without a term ends
        # the phrase; each term pairs with the previous one.
        if not matches:
            into.first.append(_NO_WORDS)
            into.last.append(-1)
            into.flags.append(1 if _BREAK_RE.search(piece) else 0)
            into.n_pairs.append(0)
            return
        flags = 1 if _BREAK_RE.search(piece, 0, matches[0].start()) else 0
        if _BREAK_RE.search(piece, matches[-1].end()):
            flags |= 2
        first = -1
        previous = -1
        n_pairs = 0
        last_end = 0
        for n, match in enumerate(matches):
            if n and _BREAK_RE.search(piece, last_end, match.start()):
                previous = -1
            terms = normal_word_terms(match.group())
            if not terms:
                previous = -1
            for m, term in enumerate(map(term_id, terms)):
                if n == 0 and m == 0:
                    first = term
                elif previous >= 0:
                    into.pairs.append(previous << 32 | term)
                    n_pairs += 1
                previous = term
            last_end = match.end()
        into.first.append(first)
        into.last.append(previous)
        into.flags.append(flags)
        into.n_pairs.append(n_pairs)

    def phrase_ids(self, keys: IntArray) -> Int32Array:
        """The phrase term id of each ``first << 32 | second`` pair of term ids."""
        n_before = int(self._pair_state[0])
        if 2 * (n_before + len(keys)) > len(self._pairs):
            self._grow_pairs(n_before + len(keys))
        numbers = np.empty(len(keys), dtype=np.int64)
        kernels.pair_numbers(keys, self._pairs, self._pair_state, numbers)
        n_after = int(self._pair_state[0])
        if n_after > n_before:
            fresh = np.flatnonzero(numbers >= n_before)
            _, first = np.unique(numbers[fresh], return_index=True)
            names, term_id = self.terms, self.term_id
            self._pair_terms.extend(
                [
                    term_id(names[key >> 32] + PHRASE_JOIN + names[key & 0xFFFFFFFF])
                    for key in keys[fresh[first]].tolist()
                ]
            )
        return self._pair_terms.array[numbers].astype(np.int32)

    def _grow_pairs(self, n_pairs: int) -> None:
        """A pair table with room for ``n_pairs`` (the pairs it held keep their numbers)."""
        size = len(self._pairs)
        while 2 * n_pairs > size:
            size *= 2
        held = self._pairs[self._pairs[:, 0] != -1]
        self._pairs = np.full((size, 2), -1, dtype=np.int64)
        self._pair_state[0] = 0
        in_order = held[np.argsort(held[:, 1]), 0]
        kernels.pair_numbers(in_order, self._pairs, self._pair_state, np.empty(len(in_order), dtype=np.int64))


@dataclass(frozen=True, slots=True)
class DocumentPostings:
    """Each document's distinct terms and frequencies, document after document: document ``n`` holds
    ``n_unique[n]`` of them. Terms are numbered ``0 ..`` in order of first appearance (``terms`` names
    them), and within a document in the order they first appear in it, as a Counter would keep them."""

    n_unique: IntArray
    term_ids: Int32Array
    tf: npt.NDArray[np.unsignedinteger]
    terms: list[str]
    #: the distinct words of the texts (casefolded), and how many distinct pieces of text hold each:
    #: what the engine's :class:`~paperindex.vocabulary.Vocabulary` learns to show a term as a word
    words: list[str] = field(default_factory=list)
    word_counts: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _phrases(
    table: PieceTable, titles: Sequence[str], pieces: Int32Array, ptr: IntArray, ascii: npt.NDArray[np.bool_]
) -> tuple[Int32Array, IntArray]:
    """Each title's phrase term ids in order (``ptr``-style ranges per title)."""
    n = len(titles)
    out = np.empty(max(1, len(pieces)), dtype=np.int64)
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    kernels.title_pairs(
        pieces, ptr, ascii, table.first.array, table.last.array, table.flags.array, table.pair_ptr.array,
        table.pairs.array, out, out_ptr,
    )  # fmt: skip
    ids = table.phrase_ids(out[: out_ptr[-1]])
    others = np.flatnonzero(~ascii)
    if not len(others):
        return ids, out_ptr
    extra = {d: [table.term_id(p) for p in phrase_terms(titles[d])] for d in others.tolist()}
    lengths = np.diff(out_ptr)
    for d, found in extra.items():
        lengths[d] = len(found)
    joined_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=joined_ptr[1:])
    joined = np.empty(int(joined_ptr[-1]), dtype=np.int32)
    from_pairs = np.diff(out_ptr)
    at = np.repeat(joined_ptr[:-1] - out_ptr[:-1], from_pairs) + np.arange(len(ids), dtype=np.int64)
    joined[at] = ids
    for d, found in extra.items():
        joined[joined_ptr[d] : joined_ptr[d + 1]] = found
    return joined, joined_ptr


_Pieces: TypeAlias = tuple[Int32Array, IntArray, Int32Array, IntArray, npt.NDArray[np.bool_]]
"""A batch's title pieces and each title's range of them, the same for abstracts, which titles are ASCII."""


def _batches(
    titles: Sequence[str], abstracts: Sequence[str]
) -> Iterator[tuple[Sequence[str], Sequence[str]]]:
    for lo in range(0, len(titles), _CHUNK_DOCS):
        yield titles[lo : lo + _CHUNK_DOCS], abstracts[lo : lo + _CHUNK_DOCS]


def _cut(table: PieceTable, titles: Sequence[str], abstracts: Sequence[str]) -> Iterator[_Pieces]:
    for batch_titles, batch_abstracts in _batches(titles, abstracts):
        title_texts = _texts(batch_titles, _TITLE_TABLE)
        title_ids, title_ptr = table.pieces(title_texts)
        abstract_ids, abstract_ptr = table.pieces(_texts(batch_abstracts, _TEXT_TABLE))
        yield title_ids, title_ptr, abstract_ids, abstract_ptr, title_texts.ascii


def document_postings(
    titles: Sequence[str], abstracts: Sequence[str], *, title_weight: int
) -> DocumentPostings:
    """The terms of each (title, abstract): the title's ``title_weight`` times, the abstract's, and the
    title's phrase terms, counted (what ``document_terms`` gives, for all of them at once)."""
    if len(titles) != len(abstracts):
        raise ValueError(f"{len(titles)} titles but {len(abstracts)} abstracts")
    table = PieceTable()
    last = np.zeros(0, dtype=np.int64)
    local_of = np.zeros(0, dtype=np.int64)
    local_state = np.zeros(1, dtype=np.int64)
    counts: list[IntArray] = []
    term_parts: list[Int32Array] = []
    tf_parts: list[npt.NDArray[np.uint32]] = []
    for lo, (title_ids, title_ptr, abstract_ids, abstract_ptr, ascii) in zip(
        range(0, len(titles), _CHUNK_DOCS), _cut(table, titles, abstracts), strict=True
    ):
        hi = min(lo + _CHUNK_DOCS, len(titles))
        phrases, phrase_ptr = _phrases(table, titles[lo:hi], title_ids, title_ptr, ascii)
        n_terms = len(table.terms)
        if n_terms > len(last):
            grow = max(n_terms, 2 * len(last)) - len(last)
            last = np.concatenate([last, np.full(grow, -1, dtype=np.int64)])
            local_of = np.concatenate([local_of, np.full(grow, -1, dtype=np.int64)])
        term_ptr, piece_terms = table.term_ptr.array, table.piece_terms.array
        bound = (
            kernels.terms_in(title_ids, term_ptr) + kernels.terms_in(abstract_ids, term_ptr) + len(phrases)
        )
        out_terms = np.empty(bound, dtype=np.int32)
        out_tf = np.empty(bound, dtype=np.uint32)
        n_unique = np.empty(hi - lo, dtype=np.int64)
        k = kernels.count_documents(
            title_ids, title_ptr, abstract_ids, abstract_ptr, term_ptr, piece_terms, phrases, phrase_ptr,
            title_weight, lo, last, out_terms, out_tf, n_unique,
        )  # fmt: skip
        out_terms = out_terms[:k].copy()
        kernels.first_seen(out_terms, local_of, local_state)
        counts.append(n_unique)
        term_parts.append(out_terms)
        tf_parts.append(out_tf[:k])
    n_local = int(local_state[0])
    prov_of_local = np.empty(n_local, dtype=np.int64)
    seen_ids = np.flatnonzero(local_of >= 0)
    prov_of_local[local_of[seen_ids]] = seen_ids
    names = table.terms
    max_tf = max((int(part.max()) for part in tf_parts if len(part)), default=0)
    # The narrowest type every tf fits: casting to it below loses nothing.
    tf_type = np.uint8 if max_tf <= 0xFF else np.uint16 if max_tf <= 0xFFFF else np.uint32
    return DocumentPostings(
        n_unique=np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64),
        term_ids=np.concatenate(term_parts) if term_parts else np.zeros(0, dtype=np.int32),
        tf=np.concatenate(tf_parts, dtype=tf_type, casting="unsafe") if tf_parts else np.zeros(0, tf_type),
        terms=[names[p] for p in prov_of_local.tolist()],
        words=table.words,
        word_counts=np.bincount(table.piece_words.array, minlength=len(table.words)).astype(np.int64),
    )


def title_words(titles: Sequence[str]) -> tuple[list[str], IntArray, Int32Array]:
    """Each title's distinct words (``WORD_RE`` over the normalised title, first-seen order) as word ids:
    ``(words, ptr, ids)``, title ``n``'s being ``ids[ptr[n]:ptr[n + 1]]``."""
    table = PieceTable()
    texts = _texts(titles, _TITLE_TABLE)
    pieces, ptr = table.pieces(texts)
    word_ptr, piece_words = table.word_ptr.array, table.piece_words.array
    out = np.empty(int((word_ptr[pieces + 1] - word_ptr[pieces]).sum()), dtype=np.int32)
    out_ptr = np.zeros(len(titles) + 1, dtype=np.int64)
    seen = np.full(len(table.words), -1, dtype=np.int64)
    kernels.distinct_per_document(pieces, ptr, word_ptr, piece_words, seen, out, out_ptr)
    return table.words, out_ptr, out[: out_ptr[-1]]


def warm_up() -> None:
    """Prepare the compiled loops of adding papers (numba loading them from its disk cache, or compiling
    them: 0.4 s and more in a fresh process, holding the GIL meanwhile) now, on a few words, rather than
    during the first add after a start that loaded the index from its snapshot."""
    document_postings(["Graph (neural) nets: naïve"], ["An abstract, v3.5 of c++."], title_weight=3)
    title_words(["Graph (neural) nets"])
