"""Repositories: all of paperbot's SQL, one module per aggregate."""

from storage.repositories.papers import PaperRepository, UpsertCounts
from storage.repositories.state import StateRepository

__all__ = ["PaperRepository", "StateRepository", "UpsertCounts"]
