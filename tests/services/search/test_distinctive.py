"""Which words a reason may name: not those most of the indexed papers hold."""

from __future__ import annotations

from bot.services.search.distinctive import GENERIC_SHARE, MIN_PAPERS, distinctive, generic_terms, is_generic


class _Counts:
    def __init__(self, papers: int, df: dict[str, int]) -> None:
        self.papers, self.counts = papers, df

    def df(self, term: str) -> int:
        return self.counts.get(term, 0)

    def __len__(self) -> int:
        return self.papers


def test_a_word_most_papers_hold_is_generic_once_there_are_papers_enough_to_tell() -> None:
    assert is_generic(590, 1000)  # "learning" in machine learning
    assert not is_generic(8, 1000)  # "cache"
    assert not is_generic(int(GENERIC_SHARE * 1000), 1000)
    assert not is_generic(MIN_PAPERS - 1, MIN_PAPERS - 1)  # every paper of too few to tell


def test_matched_words_and_phrases_keep_what_says_something() -> None:
    counts = _Counts(1000, {"learn": 590, "cach": 8, "reinforc": 116, "model": 670})
    generic = generic_terms(["learn", "cach", "reinforc", "model"], counts)
    assert generic == {"learn", "model"}
    term_of = {"learning": "learn", "cache": "cach", "reinforcement": "reinforc", "models": "model"}
    assert distinctive(("cache", "learning"), term_of, generic) == ("cache",)
    assert distinctive(("reinforcement learning",), term_of, generic) == ("reinforcement learning",)
    assert distinctive(("learning", "models"), term_of, generic) == ()
