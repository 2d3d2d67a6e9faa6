"""Reading a person's library: the entries of each format, what is not understood (with its line), and the
files refused whole (nothing stored from them)."""

from __future__ import annotations

import json

import pytest

from bot.services.people.library import (
    MAX_ENTRIES,
    MAX_LIBRARY_BYTES,
    LibraryEntry,
    LibraryRejected,
    parse_library,
)

BIBTEX = """% exported by Zotero
@article{vaswani2017,
  title = {Attention Is {All} You Need},
  author = {Vaswani, Ashish and Shazeer, Noam},
  journal = {arXiv preprint arXiv:1706.03762},
  year = {2017}
}

@inproceedings{kv2024,
  title = {{KV} cache quantization},
  doi = {10.18653/v1/2024.acl-long.42},
}

@misc{broken, title = {never closed
@article{lora, title = {LoRA}, eprint = {2106.09685}, archivePrefix = {arXiv}}
"""


def test_bibtex_entries_take_their_ids_from_eprint_journal_doi_and_url() -> None:
    parsed = parse_library(BIBTEX.encode(), "My Library.bib")
    assert parsed.format == "BibTeX"
    assert parsed.entries == (
        LibraryEntry(2, "Attention Is All You Need", arxiv_id="1706.03762"),
        LibraryEntry(9, "KV cache quantization", doi="10.18653/v1/2024.acl-long.42"),
        LibraryEntry(15, "LoRA", arxiv_id="2106.09685"),
    )
    assert [line for line, _ in parsed.not_understood] == [14]


def test_ris_and_csl_json_and_a_plain_list() -> None:
    ris = "TY  - JOUR\nTI  - Graph oversmoothing\nDO  - 10.1145/3580305.3599555\nER  - \n\nTY  - GEN\nUR  - https://arxiv.org/abs/2401.01234v2\nER  - \n"
    parsed = parse_library(ris.encode(), "export.ris")
    assert parsed.entries == (
        LibraryEntry(1, "Graph oversmoothing", doi="10.1145/3580305.3599555"),
        LibraryEntry(6, "", arxiv_id="2401.01234"),
    )
    csl = [
        {"title": "A", "DOI": "10.1000/xyz123"},
        {"note": "nothing useful"},
        {"URL": "https://openreview.net/forum?id=AbCdE12"},
    ]
    parsed = parse_library(json.dumps(csl).encode(), "saved.json")
    assert parsed.entries == (
        LibraryEntry(1, "A", doi="10.1000/xyz123"),
        LibraryEntry(3, "", openreview_id="AbCdE12"),
    )
    assert parsed.not_understood == ((2, "item 2: no title or id"),)
    plain = "# my reading list\n2401.01234\narXiv:2106.09685v2\n\nhttps://doi.org/10.1000/xyz123\nsomething else\n"
    parsed = parse_library(plain.encode(), "list.txt")
    assert [e.ids for e in parsed.entries] == [["2401.01234"], ["2106.09685"], ["doi:10.1000/xyz123"]]
    assert parsed.not_understood == ((6, "something else"),)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xff\xfe\x00binary", "not text"),
        (b"just some words\nand more words\n", "I found no paper in that file"),
        (b'[{"title": ', "could not be read"),
        (b'{"not": "a list"}', "not a CSL-JSON list"),
        (b"x" * (MAX_LIBRARY_BYTES + 1), "at most 2 MB"),
        ("\n".join(f"2401.{n:05d}" for n in range(MAX_ENTRIES + 1)).encode(), "at most 1,000 at a time"),
    ],
)
def test_files_refused_whole_say_why(data: bytes, said: str) -> None:
    with pytest.raises(LibraryRejected, match=said) as refused:
        parse_library(data, "library.txt")
    assert "Nothing was added" in str(refused.value)


def test_an_entrys_abstract_is_read_in_every_format() -> None:
    """What a paper the store lacks teaches from: its abstract, as each format writes it."""
    bib = parse_library(b"@article{a, title={Spiking nets}, abstract={Spikes {on} chips.}}", "x.bib")
    assert bib.entries[0].abstract == "Spikes on chips."
    ris = parse_library(b"TY  - JOUR\nTI  - Spiking nets\nAB  - Spikes on chips.\nER  - \n", "x.ris")
    assert ris.entries[0].abstract == "Spikes on chips."
    csl = parse_library(b'[{"title": "Spiking nets", "abstract": "Spikes on chips."}]', "x.json")
    assert csl.entries[0].abstract == "Spikes on chips."
    assert parse_library(b"@article{b, title={No abstract}}", "y.bib").entries[0].abstract is None
