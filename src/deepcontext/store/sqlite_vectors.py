"""SQLite's vector index: per-user matrices in RAM (:mod:`deepcontext.store.vectors`)."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import numpy as np
from sqlalchemy import Connection, select

from deepcontext.errors import ConfigurationError
from deepcontext.store.indexes import VectorIndex
from deepcontext.store.interface import MemoryFilters
from deepcontext.store.repository import Lookups, Raw
from deepcontext.store.vector_cache import VectorCache
from deepcontext.store.vectors import UserVectors, VectorRow

if TYPE_CHECKING:
    from deepcontext.store.sql_memories import MemoryReads

__all__ = ["SQLiteVectorIndex"]

#: a user's rows as the vector cache holds them (times are epoch seconds on SQLite)
_VECTOR_ROWS_SQL = (
    "SELECT id, status, tier, memory_type, COALESCE(said_at, created_at), expires_at, conversation_id, embedding "
    "FROM memories WHERE user_id = ?"
)


class _Context(Lookups, Raw, Protocol):
    """What the vector index uses of its store: lookups, SQL text, the memory reads."""

    @property
    def memories(self) -> MemoryReads: ...


class SQLiteVectorIndex(VectorIndex):
    """A per-user numpy matrix kept in RAM, refreshed from the rows changed since it was read."""

    def __init__(self, store: _Context, cache: VectorCache) -> None:
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
        # straight on the driver: a restart reads all of a big user's rows before its first search,
        # and SQLAlchemy's row handling (epochs made datetimes and back) was most of that time
        sql = _VECTOR_ROWS_SQL if since < 0 else _VECTOR_ROWS_SQL + " AND rev > ?"
        params = (user_id,) if since < 0 else (user_id, since)
        return [
            VectorRow(
                id=mid, active=status == "active", tier=tier, memory_type=mtype, when=when or 0.0,
                expires_at=expires, conversation_id=conv,
                embedding=None if blob is None else np.frombuffer(blob, dtype=np.float32),
            )
            for mid, status, tier, mtype, when, expires, conv, blob in self.s.raw(conn, sql, params)
        ]  # fmt: skip

    def live_count(self, conn: Connection, user_id: str) -> int:
        # from the (user_id, status, tier) index alone: a restart's check of a saved matrix
        sql = "SELECT count(*) FROM memories WHERE user_id = ? AND status = 'active'"
        return int(self.s.raw(conn, sql, (user_id,)).fetchone()[0])

    def _refresh(self, conn: Connection, user_id: str) -> UserVectors | None:
        files = self.cache.files
        if files is not None and files.embedder is None:
            files.embedder = self._embedder(conn)  # saved files name it (set once, before any is read)
        return self.cache.refresh(
            user_id,
            lambda: self.s.memories.user_state(conn, user_id),
            lambda since: self.vector_rows(conn, user_id, since),
            lambda: self.live_count(conn, user_id),
        )

    def read_ahead(self, stop: threading.Event) -> int:
        """Read the saved matrices of the users saved most recently, as many as the cache holds,
        and start loading their graphs, as their first searches would (start-up, in a background
        thread; ``stop`` ends it between two users). The number of users read."""
        files = self.cache.files
        if files is None or self.cache.ann_min_rows <= 0:
            return 0
        budget, done = self.cache.max_rows, 0
        for user_id, rows in files.saved_users():
            if stop.is_set():
                break
            if rows > budget:
                continue
            budget -= rows
            with self.s.connection() as conn:
                self._refresh(conn, user_id)
            done += 1
        return done

    def search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        if not filters.only_active:
            raise ConfigurationError("vector search covers active memories only")
        with self.s.connection() as conn:
            uv = self._refresh(conn, user_id)
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
