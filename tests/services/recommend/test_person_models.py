"""A person's model over a real index and paper space: examples from reactions, scores, words."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np
import pytest

from bot.services.recommend.paper_space import PaperSpace
from bot.services.recommend.person_models import PersonModels
from paperindex.index import BM25Index
from paperindex.tokenizer import tokenize
from storage.repositories.feedback import FeedbackRow

NOW = datetime(2026, 3, 1, 9, tzinfo=UTC)
TOPICS = {
    "graphs": "graph nodes edges message passing molecules neighbours spectral",
    "vision": "image pixels convolution segmentation detection video frames",
    "speech": "audio speech spectrogram speaker phonemes recognition acoustic",
}


@pytest.fixture
def models() -> PersonModels:
    """30 papers of each topic, each of a dozen of its words plus common ones and its number in the
    topic (as a title may have); paper 0 alone says 'zyzzyva'."""
    rng = np.random.default_rng(3)
    index = BM25Index()
    ids, docs = [], []
    for t, words in enumerate(TOPICS.values()):
        for k in range(30):
            ids.append(100 * t + k)
            docs.append([*rng.choice(words.split(), 12).tolist(), "learning", "model", str(k)])
    docs[0].append("zyzzyva")
    index.add(ids, docs)
    return PersonModels(index, PaperSpace(index, dims=8))


def _terms(words: Iterable[str]) -> set[str]:
    """The index terms of words (a word is shown in whichever form the process saw first)."""
    return {t for w in words for t in tokenize(w)}


def _row(paper_id: int, signal: str, when: datetime = NOW) -> FeedbackRow:
    return FeedbackRow(paper_id, signal, when.isoformat())  # type: ignore[arg-type]


def _by_topic(models: PersonModels, signals: list[FeedbackRow], seen: set[int] = frozenset()) -> list[float]:  # type: ignore[assignment]
    """The model's mean score of each topic's papers that were not rated."""
    fitted = models.fit({}, signals, seen, now=NOW)
    assert fitted is not None
    rated = {r.paper_id for r in signals}
    means = []
    for t in range(len(TOPICS)):
        slots = np.array([models.index.slot_of(100 * t + k) for k in range(30) if 100 * t + k not in rated])
        means.append(float(models.scores(fitted, slots).mean()))
    return means


def test_likes_lift_their_topic_and_dislikes_lower_theirs(models: PersonModels) -> None:
    graphs, vision, speech = _by_topic(models, [_row(1, "like"), _row(2, "like"), _row(101, "dislike")])
    assert graphs > speech > vision


def test_the_words_shown_are_words_of_the_field_not_of_one_paper_nor_of_every_paper(
    models: PersonModels,
) -> None:
    """The words shown for (against) an interest are over-represented among the papers near it (near
    what it was 👎'd): not a word only one liked paper has, nor one every paper has ("learning")."""
    fitted = models.fit({}, [_row(0, "like"), _row(101, "dislike")], set(), now=NOW)
    assert fitted is not None
    graphs = np.array([models.index.slot_of(k) for k in range(30)])
    vision = np.array([models.index.slot_of(100 + k) for k in range(30)])
    liked, _ = models.words(fitted.model, 5, graphs)
    _, disliked = models.words(fitted.model, 5, vision)
    assert liked
    assert disliked
    assert _terms(w for w, _ in liked) <= _terms(TOPICS["graphs"].split())
    assert _terms(w for w, _ in disliked) <= _terms(TOPICS["vision"].split())
    assert all(weight > 0 for _, weight in liked)
    assert all(weight < 0 for _, weight in disliked)
    assert "zyzzyva" not in {w for w, _ in liked}  # one paper's word says little
    assert not {"learning", "model"} & {w for w, _ in liked + disliked}  # every paper's word says nothing
    assert not any(w.isdigit() for w, _ in liked + disliked)  # nor does a number


def test_a_save_counts_as_wanted_unless_the_paper_was_also_disliked(models: PersonModels) -> None:
    saved = _by_topic(models, [_row(201, "save")])
    assert saved[2] > max(saved[:2])
    fitted = models.fit({}, [_row(201, "save"), _row(201, "dislike")], set(), now=NOW)
    assert fitted is not None
    assert not fitted.liked


def test_older_reactions_count_less(models: PersonModels) -> None:
    """A graph paper liked two years ago and a speech paper liked today: speech leads."""
    long_ago = datetime(2024, 3, 1, 9, tzinfo=UTC)
    graphs, _, speech = _by_topic(models, [_row(1, "like", long_ago), _row(201, "like")])
    assert speech > graphs


def test_papers_shown_and_ignored_count_a_little_against_their_topic(models: PersonModels) -> None:
    liked = [_row(1, "like")]
    plain = _by_topic(models, liked)
    ignored = _by_topic(models, liked, seen={*range(100, 120)})
    assert ignored[1] < plain[1]
    assert ignored[0] > ignored[1]  # a little: the liked topic still leads


def test_no_model_without_a_rated_paper_in_the_index(models: PersonModels) -> None:
    assert models.fit({}, [_row(999, "like")], set(), now=NOW) is None


def test_typed_topics_stay_the_interest_s_prior_after_a_like(models: PersonModels) -> None:
    """Typing "speech" with one 👎 on a graph paper: speech papers lead; after a 👍 on a vision paper the
    typed word still counts (its weight starts at a smaller prior and moves with the reactions), so
    the interest stays about what was typed."""
    query = {"speech": 1.0}
    fitted = models.fit(query, [_row(1, "dislike")], set(), now=NOW)
    assert fitted is not None
    assert not fitted.liked
    assert fitted.model.topic_weight > 5
    fitted = models.fit(query, [_row(1, "dislike"), _row(101, "like")], set(), now=NOW)
    assert fitted is not None
    assert fitted.liked
    assert 0.5 < fitted.model.topic_weight <= models.params.prior_liked


def test_a_word_spread_over_every_field_is_not_shown_even_where_it_clusters_by_chance() -> None:
    """'despite' is in a third of the papers of every topic: general English, not a word of the
    field. Among the graph papers that hold it (the papers near an interest, by chance) it is
    over-represented, yet it is not shown: the papers holding it lie all over the paper space."""
    rng = np.random.default_rng(5)
    index = BM25Index()
    ids, docs = [], []
    for t, words in enumerate(TOPICS.values()):
        for k in range(30):
            ids.append(100 * t + k)
            docs.append([*rng.choice(words.split(), 12).tolist(), *(["despite"] if k < 10 else [])])
    index.add(ids, docs)
    models = PersonModels(index, PaperSpace(index, dims=8))
    fitted = models.fit({}, [_row(0, "like"), _row(1, "like"), _row(2, "like")], set(), now=NOW)
    assert fitted is not None
    near = np.array([index.slot_of(k) for k in range(10)])  # graph papers, all holding "despite"
    liked, _ = models.words(fitted.model, 8, near)
    shown = {w for w, _ in liked}
    assert shown  # the graph words are
    assert _terms(shown) <= _terms(TOPICS["graphs"].split()), shown
    assert "despite" not in shown


def test_a_library_s_dislikes_weigh_less_than_the_papers_it_was_made_of(models: PersonModels) -> None:
    """A group of liked papers (a library imported) keeps to its field after a day of 👎 on picks
    of that field: the papers the person chose say what it is, a 👎 on a pick says less than in an
    interest taught by reactions alone."""
    library = [_row(k, "like") for k in range(10)]
    disliked = [_row(k, "dislike") for k in range(10, 16)]  # six picks of the same field 👎'd
    slots = {
        name: np.array([models.index.slot_of(100 * t + k) for k in range(16, 30)])
        for t, name in enumerate(TOPICS)
    }

    def lead(grouped: bool) -> float:
        """How far the library's field (its unrated papers) stands above the best other field."""
        fitted = models.fit({}, library + disliked, set(), now=NOW, grouped=grouped)
        assert fitted is not None
        means = {name: float(models.scores(fitted, at).mean()) for name, at in slots.items()}
        return means["graphs"] - max(means["vision"], means["speech"])

    assert lead(grouped=True) > 0
    assert lead(grouped=True) > lead(grouped=False)


def test_a_kept_topic_match_is_packed_when_few_papers_match_and_reads_back_the_same() -> None:
    from bot.services.recommend.person_models import _packed, _unpacked

    rng = np.random.default_rng(3)
    sparse = np.zeros(1000, dtype=np.float32)
    sparse[rng.choice(1000, 40, replace=False)] = rng.random(40, dtype=np.float32)
    kept = _packed(sparse.copy())
    assert isinstance(kept, tuple)
    assert sum(part.nbytes for part in kept) < sparse.nbytes / 10
    dense = rng.random(1000, dtype=np.float32)
    assert not isinstance(_packed(dense.copy()), tuple)
    for match in (sparse, dense, np.zeros(1000, dtype=np.float32)):
        back = _unpacked(_packed(match.copy()), 1000)
        assert back.dtype == np.float64
        assert np.array_equal(back, match.astype(np.float64))


def test_topic_match_is_the_same_from_the_cache(models: PersonModels) -> None:
    n = len(models.index)
    first = models.topic_match({"graph": 1.0}, n)
    again = models.topic_match({"graph": 1.0}, n)
    assert np.array_equal(first, again)
    again[:] = -1  # the caller's copy: the kept match is not changed
    assert np.array_equal(models.topic_match({"graph": 1.0}, n), first)
