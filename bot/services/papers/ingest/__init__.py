"""Corpus ingestion: parsers per format (paper-list text, JSON/JSONL records, arXiv Atom), derived
titles, id normalisation, and the runner that merges files into the store one transaction at a time."""

from bot.services.papers.ingest.runner import ensure_shipped_corpus, ingest_bytes, ingest_paths

__all__ = ["ensure_shipped_corpus", "ingest_bytes", "ingest_paths"]
