"""What a researcher reads is true and readable: LaTeX shown as text, cuts at a word's end, "matched:"
naming only words that say something, and a result count that says what it counts."""

from __future__ import annotations

import random
import re
from typing import TYPE_CHECKING, Any

from lab_papers import add_papers

from bot.services.papers.bibtex import to_bibtex
from paperindex.tokenizer import tokenize

if TYPE_CHECKING:
    from paperbot_e2e import E2E

LATEX_PAPER = {
    "title": r"Faster $\alpha$-Decoding: a 2.2$\times$ Speedup in $O(n^2)$ Time",
    "abstract": (
        r"We make \textit{speculative} decoding $\alpha$-adaptive: each draft costs $O(n^2)$ and the "
        r"verifier keeps an $\epsilon$-bound, for a 2.2$\times$ speedup."
    ),
    "authors": ["Ada Lovelace"],
    "openreview_id": "LaTeXdEcOd",
}

# one query word ("zorblax") just before the snippet's width, the word after it straddling the cut
FILLER = " ".join(["serving"] * 36)  # 287 characters
CUT_PAPER = {
    "title": "Serving throughput at scale",
    "abstract": f"{FILLER} a zorblax Cachelines everywhere and more words after them.",
    "authors": ["Grace Hopper"],
    "openreview_id": "ZoRbLaXcUt",
}


async def test_latex_in_titles_and_abstracts_is_shown_as_text(e2e: E2E) -> None:
    (paper_id,) = await add_papers(e2e, [LATEX_PAPER])
    found = await e2e.server.run_command(
        "bob", "paper search", query="speculative decoding verifier", limit=3
    )
    listing = found.embed["description"]
    assert "Faster α-Decoding: a 2.2× Speedup in O(n²) Time" in listing, listing
    assert "α-adaptive" in listing
    assert "$" not in listing
    assert "times" not in listing
    assert "textit" not in listing

    shown = await e2e.server.run_command("bob", "paper show", paper=str(paper_id))
    assert shown.embed["title"] == "Faster α-Decoding: a 2.2× Speedup in O(n²) Time"
    abstract = shown.embed["description"]
    assert "We make speculative decoding α-adaptive: each draft costs O(n²)" in abstract, abstract
    assert "ε-bound, for a 2.2× speedup." in abstract

    # the stored text keeps the LaTeX, and a BibTeX export its source (escaped), not the display's text
    stored = await e2e.services.papers.get(paper_id)
    assert stored is not None
    assert stored.title == LATEX_PAPER["title"]
    bibtex = to_bibtex([stored])
    assert "alpha" in bibtex
    assert "α" not in bibtex


async def test_a_snippet_ends_at_a_word_s_end(e2e: E2E) -> None:
    await add_papers(e2e, [CUT_PAPER])
    found = await e2e.server.run_command("bob", "paper search", query="zorblax", limit=3)
    listing = found.embed["description"]
    assert "**zorblax** Cachelines…" in listing, listing  # not "**zorblax** Cac…"
    for cut in re.findall(r"(\w+)…", listing):
        assert cut in CUT_PAPER["abstract"].split() + CUT_PAPER["title"].split() or cut.isdigit(), cut


async def test_matched_names_distinctive_words_and_the_count_says_what_it_counts(e2e: E2E) -> None:
    """'learning' is in most papers here: a paper holding 'cache' and 'learning' but not 'kv' shows
    "matched: cache"; the footer says how many papers hold all three words, and how many one or more."""
    await add_papers(
        e2e,
        [
            {
                "title": "Cache-aware scheduling for learning systems",
                "abstract": "Learning systems stall on cache misses; we schedule learning jobs by cache use.",
                "authors": ["Barbara Liskov"],
                "openreview_id": "CaChElEaRn",
            }
        ],
    )
    rows = await e2e.db.fetchall("SELECT title, abstract FROM papers")
    holding = [set(tokenize(f"{title} {abstract}")) for title, abstract in rows]
    learning, cache, kv = (tokenize(w)[0] for w in ("learning", "cache", "kv"))
    assert sum(learning in terms for terms in holding) > len(holding) / 4, "the corpus this test needs"

    found = await e2e.server.run_command("bob", "paper search", query="kv cache learning", limit=10)
    listing = found.embed["description"]
    block = next(b for b in listing.split("\n\n") if "Cache-aware scheduling" in b)
    assert block.splitlines()[-1] == "matched: cache", block
    assert not re.search(r"matched: .*\blearning\b", listing), listing
    assert "matched: kv cache" in listing  # the phrase, where a paper holds it

    footer = found.embed["footer"]["text"]
    counts = re.search(r"· ([\d,]+) with all 3 words, ([\d,]+) with one or more ·", footer)
    assert counts, footer
    every = sum({learning, cache, kv} <= terms for terms in holding)
    some = sum(bool({learning, cache, kv} & terms) for terms in holding)
    assert (int(counts[1].replace(",", "")), int(counts[2].replace(",", ""))) == (every, some)

    single = await e2e.server.run_command("bob", "paper search", query="cache", limit=3)
    assert re.search(r"page 1 of \d+ · \d+ papers? ·", single.embed["footer"]["text"])


LEARNED_TOPICS = {
    "graph": "graph nodes edges molecules spectral",
    "vision": "image pixels convolution segmentation detection video frames",
    "speech": "audio speech spectrogram speaker phonemes recognition acoustic",
    "proteins": "protein folding residues backbone sidechain docking ligand",
    "markets": "auction bidders pricing revenue mechanism buyers sellers",
    "robots": "robot grasping manipulation gripper trajectories torque actuators",
    "weather": "precipitation forecasting climate rainfall atmospheric storms radar",
    "circuits": "circuit transistor voltage layout routing chip placement",
}


def _topic_papers() -> list[dict[str, object]]:
    """63 papers a topic, each of its words (504 in all: enough for the paper space to tell a field's
    words from general English; fewer, and no learned word is listed); two of every topic also say
    'despite' and 'remarkably' (general English, in every field), three of the graph papers and the
    first of six other topics 'obviates' and 'ameliorates'."""
    rng = random.Random(11)
    records: list[dict[str, object]] = []
    for topic, words in LEARNED_TOPICS.items():
        for k in range(63):
            chosen = " ".join(rng.choice(words.split()) for _ in range(14))
            english = " despite remarkably" if k < 2 else ""
            if (k == 0 and topic not in {"weather", "circuits"}) or (topic == "graph" and k < 3):
                english += " which obviates and ameliorates"
            records.append(
                {
                    "title": f"{topic.title()} study {k}: {chosen[:40]}",
                    "abstract": f"{chosen}{english}.",
                    "authors": ["Ada Lovelace"],
                    "openreview_id": f"LeArN{topic[:3]}{k:02d}",
                }
            )
    return records


async def _likes_stored(e2e: E2E, count: int) -> bool:
    stored = await e2e.db.fetchval("SELECT COUNT(*) FROM feedback WHERE user_id = ?", (e2e.server.bob.id,))
    return bool(stored >= count)


async def test_the_words_an_interest_learned_are_words_of_its_field(start_paperbot: Any) -> None:
    """Three 👍 on the graph papers that say 'obviates' and 'ameliorates': `/paper interests show`
    names graph words, not these words of every field (nor 'despite' or 'remarkably')."""
    async with start_paperbot(load_shipped_corpus=False) as e2e:
        await _learned_words_of_the_field(e2e)


async def _learned_words_of_the_field(e2e: E2E) -> None:
    ids = await add_papers(e2e, _topic_papers())
    space, index = e2e.services.recommender.space, e2e.services.search.index
    await e2e.server.eventually(
        lambda: space.ready and space.placed == index.n_slots, what="the papers placed", timeout=30
    )
    for paper_id in ids[:3]:
        shown_paper = await e2e.server.run_command("bob", "paper show", paper=str(paper_id))
        await e2e.server.react("bob", shown_paper, "👍")
    await e2e.server.eventually(lambda: _likes_stored(e2e, 3), what="bob's three 👍 stored")
    shown = await e2e.server.run_command("bob", "paper interests show")
    description = str(shown.embeds[0].get("description", ""))
    learned = re.findall(r"`([^`]+)`", description.split("for:", 1)[1].split("\n", 1)[0])
    assert learned, description
    graph_terms = set(tokenize(LEARNED_TOPICS["graph"]))
    assert all(set(tokenize(word)) <= graph_terms for word in learned), learned
