"""SQLite's vector index: per-user matrices in RAM (:mod:`deepcontext.store.vectors`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import Connection, select

from deepcontext.clock import to_epoch
from deepcontext.errors import ConfigurationError
from deepcontext.store.indexes import VectorIndex
from deepcontext.store.interface import MemoryFilters
from deepcontext.store.vectors import VectorCache, VectorRow

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

__all__ = ["SQLiteVectorIndex"]


class SQLiteVectorIndex(VectorIndex):
    """A per-user numpy matrix kept in RAM, refreshed from the rows changed since it was read."""

    def __init__(self, store: SQLStore, cache: VectorCache) -> None:
        self.s = store
        self.cache = cache
        if cache.files is not None:
            cache.files.current = self.incarnation

    def incarnation(self, user_id: str) -> str | None:
        with self.s.connection() as conn:
            state = self.s.memories.user_state(conn, user_id)
        return None if state is None else state[0]

    def _embedder(self, conn: Connection) -> str:
        m = self.s.t.meta
        return str(conn.execute(select(m.c.value).where(m.c.key == "embedder")).scalar() or "")

    def forget(self, user_id: str) -> None:
        self.cache.drop(user_id)

    def close(self) -> None:
        self.cache.clear()

    def vector_rows(self, conn: Connection, user_id: str, since: int) -> list[VectorRow]:
        mt = self.s.t.memories
        q = select(
            mt.c.id, mt.c.status, mt.c.tier, mt.c.memory_type, mt.c.said_at, mt.c.created_at,
            mt.c.expires_at, mt.c.conversation_id, mt.c.embedding,
        ).where(mt.c.user_id == user_id)  # fmt: skip
        if since >= 0:
            q = q.where(mt.c.rev > since)
        return [
            VectorRow(
                id=int(r.id),
                active=r.status == "active",
                tier=r.tier,
                memory_type=r.memory_type,
                when=to_epoch(r.said_at or r.created_at) or 0.0,
                expires_at=to_epoch(r.expires_at),
                conversation_id=r.conversation_id,
                embedding=r.embedding,
            )
            for r in conn.execute(q)
        ]

    def search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        if not filters.only_active:
            raise ConfigurationError("vector search covers active memories only")
        with self.s.connection() as conn:
            files = self.cache.files
            if files is not None and files.embedder is None:
                files.embedder = self._embedder(conn)  # saved graphs name it (set once, before any)
            uv = self.cache.refresh(
                user_id,
                lambda: self.s.memories.user_state(conn, user_id),
                lambda since: self.vector_rows(conn, user_id, since),
            )
            allowed = None
            if filters.needs_sql:
                mt = self.s.t.memories
                allowed = np.fromiter(
                    (
                        r[0]
                        for r in conn.execute(select(mt.c.id).where(mt.c.user_id == user_id, *self.s.filter_clause(filters, now)))
                    ),
                    dtype=np.int64,
                )
        if uv is None:
            return [[] for _ in range(len(queries))]
        with uv.lock:
            return uv.search_many(queries, k, filters, now.timestamp(), allowed)
