"""The two backend seams of search: a keyword index and a vector index per backend.

Each only executes: what to prune and how much to fetch is decided by the pure functions of
:mod:`deepcontext.store.keyword_policy`, which both keyword indexes use.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from sqlalchemy import Connection

from deepcontext.store.interface import MemoryFilters

__all__ = ["KeywordIndex", "VectorIndex"]


class KeywordIndex(ABC):
    """Full-text index of memory texts, written in the memory's own transaction."""

    @abstractmethod
    def index(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Add (memory_id, text) rows (a memory indexed again: its last text)."""

    @abstractmethod
    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        """Remove memories."""

    def purge_deleted(self, conn: Connection) -> None:
        """After a user's rows were deleted, in the same transaction: drop what the index keeps of
        them beyond its rows."""

    @abstractmethod
    def search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """The user's best ``k`` memories for ``terms``, (memory_id, relevance) best first."""


class VectorIndex(ABC):
    """Nearest active memories by cosine similarity."""

    @abstractmethod
    def search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        """Per query row: (memory_id, cosine similarity), best first."""

    def forget(self, user_id: str) -> None:
        """Drop what is kept in memory of a user."""

    def close(self) -> None:
        """Release what is kept in memory."""
