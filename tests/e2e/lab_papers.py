"""Papers with authors, venues and ids for end-to-end tests (the shipped seed lists have no authors),
added to a running bot's store and index as an ingest would."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bot.services.papers.ingest.runner import ingest_bytes

if TYPE_CHECKING:
    from paperbot_e2e import E2E

KV_ABSTRACT = (
    "Serving large language models is limited by the memory the key-value cache takes at long context. "
    "Earlier work quantizes weights but leaves the cache in 16 bits. "
    "In this paper, we propose KVSquash, a per-channel quantization of keys and a per-token quantization "
    "of values that keeps the cache in 2 bits without retraining the model. "
    "KVSquash fits a 1M-token context of LLaMA-7B on one 80 GB GPU. "
    "On LongBench it loses under 0.3 points while decoding 2.1x faster."
)

LAB = [
    {
        "title": "KVSquash: 2-bit Key-Value Cache Quantization without Retraining",
        "abstract": KV_ABSTRACT,
        "authors": ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra"],
        "venue": "ICML 2024",
        "year": 2024,
        "arxiv_id": "2405.00001",
        "doi": "10.5555/kvsquash.2024",
    },
    {
        "title": "Drafting in Trees: Speculative Decoding with Verified Branches",
        "abstract": (
            "Speculative decoding drafts tokens with a small model and verifies them with a large one. "
            "We introduce TreeDraft, which drafts a tree of continuations and verifies every branch in one "
            "forward pass of the target model with a tree attention mask."
        ),
        "authors": ["Grace Hopper", "Barbara Liskov"],
        "venue": "NeurIPS 2023",
        "year": 2023,
        "openreview_id": "TrEeDrAfT1",
        "pdf_url": "https://openreview.net/pdf?id=TrEeDrAfT1",
    },
]


async def add_papers(e2e: E2E, records: Sequence[dict[str, Any]], *, name: str = "lab.jsonl") -> list[int]:
    """Ingest ``records`` into the running bot's store, index them, and return their paper ids."""
    summary = await ingest_bytes(e2e.db, name, "\n".join(json.dumps(r) for r in records).encode())
    assert summary.rejected == 0, summary.problems
    await e2e.services.index.refresh()
    ids = []
    for record in records:
        paper = await e2e.services.papers.find_by_external(record.get("arxiv_id") or record["openreview_id"])
        assert paper is not None
        ids.append(paper.id)
    return ids
