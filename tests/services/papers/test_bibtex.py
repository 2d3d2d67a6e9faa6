"""BibTeX export: every entry parses, specials are escaped, braces balance, keys are unique."""

from __future__ import annotations

import re

from builders import paper

from bot.services.papers.bibtex import base_key, escape, to_bibtex, unique_keys
from storage.models import Paper


def _paper(pid: int, **fields: object) -> Paper:
    values: dict[str, object] = {
        "title": "Attention Is All You Need",
        "abstract": "We propose the Transformer.",
        "authors": ("Ashish Vaswani", "Noam Shazeer"),
        "venue": "NeurIPS 2017",
        "year": 2017,
        "added_at": "2026-01-01T00:00:00+00:00",
    }
    return paper(pid, **(values | fields))


_ENTRY_HEAD = re.compile(r"@(\w+)\{([^,\s{}]+),")
_FIELD = re.compile(r"\s*(\w+)\s*=\s*\{")


def parse_bibtex(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """A strict little BibTeX reader: (type, key, fields); raises AssertionError on malformed input."""
    entries = []
    pos = 0
    while (at := text.find("@", pos)) != -1:
        head = _ENTRY_HEAD.match(text, at)
        assert head, f"bad entry head at {text[at : at + 40]!r}"
        pos = head.end()
        fields: dict[str, str] = {}
        while True:
            field = _FIELD.match(text, pos)
            assert field, f"bad field at {text[pos : pos + 40]!r}"
            depth, i = 1, field.end()
            while depth:
                assert i < len(text), "unbalanced braces"
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            fields[field.group(1)] = text[field.end() : i - 1]
            rest = text[i:].lstrip()
            if rest.startswith(","):
                pos = len(text) - len(rest) + 1
                if text[pos:].lstrip().startswith("}"):
                    pos = text.index("}", pos) + 1
                    break
                continue
            assert rest.startswith("}"), f"entry not closed at {rest[:40]!r}"
            pos = len(text) - len(rest) + 1
            break
        entries.append((head.group(1), head.group(2), fields))
    return entries


def _unescaped_specials(value: str) -> list[str]:
    stripped = re.sub(
        r"\\(textbackslash|textbraceleft|textbraceright|textasciitilde|textasciicircum)\{\}", "", value
    )
    stripped = re.sub(r"\\[&%$#_]", "", stripped)
    return re.findall(r"[&%$#_~^\\]", stripped)


def test_entry_has_the_fields_a_reference_manager_needs() -> None:
    """Title (case protected), authors joined by "and", year, venue, key like vaswani2017attention."""
    [(kind, key, fields)] = parse_bibtex(to_bibtex([_paper(1)]))
    assert kind == "inproceedings"
    assert key == "vaswani2017attention"
    assert fields["title"] == "{Attention Is All You Need}"
    assert fields["author"] == "Ashish Vaswani and Noam Shazeer"
    assert fields["year"] == "2017"
    assert fields["booktitle"] == "NeurIPS 2017"


def test_special_characters_are_escaped_and_braces_stay_balanced() -> None:
    """LaTeX specials in titles, names and abstracts cannot break the file or the document."""
    nasty = _paper(
        2,
        title="100% {Robust} C# & R_2 ~ x^2 \\ learning $$",
        abstract="Unbalanced { brace and % comment and _under_ and # hash } }",
        authors=("Jörg Müller", "O'Neil & Sons"),
    )
    text = to_bibtex([nasty])
    [(_, key, fields)] = parse_bibtex(text)
    for name in ("title", "abstract", "author"):
        assert _unescaped_specials(fields[name]) == [], (name, fields[name])
    assert "Jörg Müller" in fields["author"]
    assert key == "muller2017robust"  # ascii-folded last name; numbers and braces skipped
    assert escape("a{b}c") == r"a\textbraceleft{}b\textbraceright{}c"


def test_keys_are_unique_even_for_the_same_author_year_and_word() -> None:
    """Colliding keys get a, b, … suffixes; every key in the file is distinct."""
    papers = [_paper(i, title="Attention everywhere " + str(i)) for i in range(30)]
    keys = unique_keys(papers)
    assert len(set(keys)) == 30
    assert keys[:3] == ["vaswani2017attention", "vaswani2017attentiona", "vaswani2017attentionb"]
    parsed = parse_bibtex(to_bibtex(papers))
    assert len({key for _, key, _ in parsed}) == 30


def test_arxiv_only_paper_is_a_misc_entry_with_eprint_and_url() -> None:
    """No venue: @misc with the arXiv id and its abs URL (kept verbatim)."""
    paper = _paper(3, venue=None, arxiv_id="2401.01234", authors=())
    [(kind, key, fields)] = parse_bibtex(to_bibtex([paper]))
    assert kind == "misc"
    assert key.startswith("anon2017")
    assert fields["eprint"] == "2401.01234"
    assert fields["url"] == "https://arxiv.org/abs/2401.01234"


def test_url_with_underscores_is_kept_verbatim_and_braces_are_encoded() -> None:
    """URLs are not LaTeX-escaped (biblatex reads them verbatim) but cannot unbalance the entry."""
    paper = _paper(4, url="https://example.org/a_b%20c/{x}")
    [(_, _, fields)] = parse_bibtex(to_bibtex([paper]))
    assert fields["url"] == "https://example.org/a_b%20c/%7Bx%7D"


def test_derived_title_is_noted() -> None:
    """A title paperbot derived from the abstract says so in a note."""
    [(_, _, fields)] = parse_bibtex(to_bibtex([_paper(5, title_derived=True)]))
    assert "derived" in fields["note"]


def test_key_falls_back_when_nothing_is_usable() -> None:
    """A paper with no authors, year or Latin title still gets a usable key."""
    assert base_key(_paper(6, authors=(), year=None, title="深度学习")) == "anon"
