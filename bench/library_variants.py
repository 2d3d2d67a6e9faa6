"""What a library person's day 1 is made of: paperbot's picks beside rankings of the same library in
our features and in the baselines', and which part of the baselines' TF-IDF carries them.

For the people of ``library_eval.py`` (same split rule, same libraries), day-1 precision@5 of:

* paperbot (its real ``Recommender``, as ``library_eval.py`` runs it);
* the centroid of the library (Rocchio without 👎) in TF-IDF 1–2-grams, in our unit BM25 vectors (the
  words of paperbot's model), and in the paper space (LSA cosine);
* ``LinearSVC(class_weight="balanced", C=0.1)`` on TF-IDF, on our unit BM25 vectors, and on those
  beside the LSA place;
* with ``--ablate``: Rocchio and the SVM on TF-IDF variants (unigrams only, no ``max_df`` cut, no
  sublinear tf, no feature cap), to say which part of TF-IDF carries them; and on TF-IDF weights over
  our own terms (:mod:`paperindex.tokenizer`): unigrams, a paper as the index holds it (the title's
  terms three times and its phrase terms), and either with the abstract's phrase terms as well.

``--show``: each person's picks by paperbot and by the SVM, relevant or not, with their titles.
Settings are read, never chosen, here; run on the tune split.
Run: ``.venv/bin/python bench/library_variants.py --source ICLR --split tune [--per-area 4] [--ablate]``
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import library_eval as L  # noqa: E402

from bot.services.recommend.learner import unit_rows  # noqa: E402
from paperindex.tokenizer import phrase_terms, tokenize  # noqa: E402

TFIDF_VARIANTS: dict[str, dict[str, Any]] = {
    "1–2-grams (the baseline's)": {},
    "unigrams": {"ngram_range": (1, 1)},
    "no max_df cut": {"max_df": 1.0},
    "no sublinear tf": {"sublinear_tf": False},
    "no feature cap": {"max_features": None},
}


def top5(scores: np.ndarray, allowed: np.ndarray, person: L.Person) -> np.ndarray:
    ok = allowed.copy()
    ok[list(person.library)] = False
    candidates = np.flatnonzero(ok)
    return candidates[np.lexsort((candidates, -scores[candidates]))[: L.PER_DAY]]


def precision(picks: Sequence[int], person: L.Person, labels: Sequence[set[str]]) -> float:
    return float(np.mean([bool(labels[r] & set(person.areas)) for r in picks]))


def svm_scores(matrix: Any, library: list[int]) -> np.ndarray:
    from sklearn.svm import LinearSVC

    y = np.zeros(matrix.shape[0], dtype=int)
    y[library] = 1
    model = LinearSVC(class_weight="balanced", C=L.SETTINGS["svm"]["C"], max_iter=10000)
    return np.asarray(model.fit(matrix, y).decision_function(matrix))


def centroid(matrix: Any, library: list[int]) -> np.ndarray:
    return np.asarray(matrix @ np.asarray(matrix[library].mean(axis=0)).ravel()).ravel()


async def variants(args: argparse.Namespace) -> None:
    rows, labels = L.load_source(args.source)
    group = L.people(
        args.source, rows, labels, args.split, sizes=[args.size], two=False, seed=7, per_area=args.per_area
    )
    early = np.array([r["year"] in L.LIBRARY_YEARS[args.source] for r in rows])
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        store = await L.Store.open(Path(folder), rows)
        index = store.engine.index
        allowed = ~early & np.array([p >= 0 for p in store.ids])
        slots = np.array([index.slot_of(p) if p >= 0 else 0 for p in store.ids])
        papers = index.doc_weights([int(index.slot_ids[s]) for s in slots])
        bm25 = unit_rows(papers, np.arange(int(papers[1].max()) + 1))  # one row per source row
        coords = store.space.coords[slots].astype(np.float64)
        place = coords / np.maximum(np.linalg.norm(coords, axis=1, keepdims=True), 1e-12)
        beside = sp.hstack([bm25, sp.csr_matrix(place)]).tocsr()
        tfidf = L.tfidf(rows)
        pick = L.paperbot(store, {store.ids[i] for i in np.flatnonzero(early) if store.ids[i] >= 0})
        for person in group:
            library = list(person.library)
            ours = await pick(person, [], [], set(library), 0)
            scores = {
                "Rocchio, TF-IDF 1–2-grams": centroid(tfidf, library),
                "centroid, our unit BM25": centroid(bm25, library),
                "centroid, paper space (LSA)": place @ place[library].mean(axis=0),
                "SVM, TF-IDF 1–2-grams (the baseline)": svm_scores(tfidf, library),
                "SVM, our unit BM25": svm_scores(bm25, library),
                "SVM, our unit BM25 + LSA place": svm_scores(beside, library),
            }
            results.setdefault("paperbot", []).append(precision(ours, person, labels))
            for name, values in scores.items():
                results.setdefault(name, []).append(precision(top5(values, allowed, person), person, labels))
            if args.show:
                print(f"\n{person.areas}: paperbot {results['paperbot'][-1]:.1f}")
                svm_top = top5(scores["SVM, TF-IDF 1–2-grams (the baseline)"], allowed, person)
                for who, picks in (("ours", ours), ("SVM ", svm_top)):
                    for r in picks:
                        mark = "+" if labels[r] & set(person.areas) else "-"
                        print(f"  {who} {mark} {rows[r]['year']} {rows[r]['title'][:90]}")
        await store.db.close()
    print(f"\n{args.source}, {args.split} split, {args.size}-paper libraries: {len(group)} people, day 1 p@5")
    for name, values in results.items():
        print(f"| {name} | {np.mean(values):.3f} |")
    if args.ablate:
        ablate(rows, labels, group, allowed)


def ablate(
    rows: Sequence[dict[str, Any]], labels: Sequence[set[str]], group: list[L.Person], allowed: Any
) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [f"{r['title']}. {r.get('abstract') or ''}" for r in rows]
    settings: dict[str, Any] = {  # library_eval.tfidf's
        "strip_accents": "unicode",
        "lowercase": True,
        "stop_words": "english",
        "token_pattern": r"(?u)\b[a-zA-Z_][a-zA-Z0-9_]+\b",
        "ngram_range": (1, 2),
        "max_features": 20000,
        "sublinear_tf": True,
        "min_df": 3,
        "max_df": 0.3,
    }
    print("\n| TF-IDF | Rocchio | SVM |\n|---|---|---|")
    for name, change in TFIDF_VARIANTS.items():
        matrix = TfidfVectorizer(**{**settings, **change}).fit_transform(texts)
        rocchio, svm = [], []
        for person in group:
            library = list(person.library)
            rocchio.append(precision(top5(centroid(matrix, library), allowed, person), person, labels))
            svm.append(precision(top5(svm_scores(matrix, library), allowed, person), person, labels))
        print(f"| {name} | {np.mean(rocchio):.3f} | {np.mean(svm):.3f} |", flush=True)

    def words(r: dict[str, Any]) -> list[str]:
        return tokenize(r["title"]) + tokenize(r.get("abstract") or "")

    def indexed(r: dict[str, Any]) -> list[str]:
        return tokenize(r["title"]) * 3 + tokenize(r.get("abstract") or "") + phrase_terms(r["title"])

    def phrases(r: dict[str, Any]) -> list[str]:
        return phrase_terms(r["title"]) + phrase_terms(r.get("abstract") or "")

    ours: dict[str, Any] = {
        "our terms": words,
        "our terms, as the index holds a paper": indexed,
        "our terms + every phrase": lambda r: words(r) + phrases(r),
        "as the index holds a paper + the abstract's phrases": lambda r: (
            indexed(r) + phrase_terms(r.get("abstract") or "")
        ),
    }
    for name, terms in ours.items():
        matrix = TfidfVectorizer(analyzer=lambda t: t, sublinear_tf=True, min_df=3, max_df=0.3).fit_transform(
            [terms(r) for r in rows]
        )
        rocchio, svm = [], []
        for person in group:
            library = list(person.library)
            rocchio.append(precision(top5(centroid(matrix, library), allowed, person), person, labels))
            svm.append(precision(top5(svm_scores(matrix, library), allowed, person), person, labels))
        print(f"| TF-IDF of {name} | {np.mean(rocchio):.3f} | {np.mean(svm):.3f} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", choices=("IJCAI", "ICLR"), default="ICLR")
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    parser.add_argument("--size", type=int, default=20)
    parser.add_argument("--per-area", type=int, default=1)
    parser.add_argument("--ablate", action="store_true", help="which part of TF-IDF carries the baselines")
    parser.add_argument("--show", action="store_true", help="each person's picks, paperbot's and the SVM's")
    asyncio.run(variants(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
