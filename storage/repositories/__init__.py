"""Repositories: all of paperbot's SQL, one module per aggregate."""

from storage.repositories.papers import IndexRow, PaperRepository, UpsertCounts
from storage.repositories.state import StateRepository

__all__ = ["IndexRow", "PaperRepository", "StateRepository", "UpsertCounts"]
