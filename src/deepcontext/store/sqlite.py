"""The embedded default: one SQLite file.

WAL journal, a busy timeout, foreign keys on. Write transactions start with ``BEGIN IMMEDIATE`` so
two processes writing the same file queue up on the busy timeout instead of failing with
"database is locked" when a read transaction tries to upgrade. Keyword search is FTS5 with bm25;
vector search is a per-user numpy matrix kept in RAM (:mod:`deepcontext.store.vectors`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, column, create_engine, event, literal_column, select, table, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url

from deepcontext.clock import to_epoch
from deepcontext.errors import ConfigurationError
from deepcontext.store.base import MemoryFilters
from deepcontext.store.sql import SQLStore, _chunks
from deepcontext.store.vectors import VectorCache, VectorRow
from deepcontext.text import search_text

__all__ = ["SQLiteStore"]

#: the FTS5 virtual table (created by migration 1): rowid = memories.id, body = search_text(text)
_FTS = table("memory_fts", column("rowid"), column("body"))


class SQLiteStore(SQLStore):
    backend = "sqlite"

    def __init__(
        self,
        url: str,
        dim: int,
        *,
        busy_timeout_ms: int = 60_000,
        vector_cache_max_rows: int = 2_000_000,
        tracer: Any = None,
    ) -> None:
        super().__init__(url, dim, tracer=tracer)
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite":
            raise ConfigurationError(f"not a sqlite URL: {url!r}")
        database = parsed.database or ""
        if database in ("", ":memory:"):
            raise ConfigurationError(
                "an in-memory SQLite database cannot be shared between connections; give a file path"
            )
        self.path = Path(database).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(
            f"sqlite:///{self.path}",
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            pool_size=8,
            max_overflow=8,
            pool_pre_ping=False,
        )
        self._busy_timeout_ms = busy_timeout_ms
        event.listen(self.engine, "connect", self._on_connect)
        event.listen(self.engine, "begin", self._on_begin)
        if tracer is not None:
            event.listen(
                self.engine,
                "before_cursor_execute",
                lambda conn, cursor, statement, params, context, executemany: tracer(statement, params),
            )
        self.vectors = VectorCache(dim, vector_cache_max_rows)

    # --- connection setup -----------------------------------------------------------------------
    def _on_connect(self, dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA temp_store = MEMORY")
        cur.execute("PRAGMA cache_size = -65536")  # 64 MiB page cache
        cur.execute("PRAGMA mmap_size = 268435456")
        cur.close()

    @staticmethod
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    def _begin_write(self) -> Any:
        @contextmanager
        def cm() -> Iterator[Connection]:
            with self.engine.connect() as conn:
                conn = conn.execution_options(sqlite_begin="IMMEDIATE")
                with conn.begin():
                    yield conn

        return cm()

    def _upsert(self, table: Any) -> Any:
        return sqlite_insert(table)

    # --- keyword index --------------------------------------------------------------------------
    def _index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        if rows:
            conn.execute(
                text("INSERT INTO memory_fts(rowid, body) VALUES (:id, :body)"),
                [{"id": mid, "body": search_text(t)} for mid, t in rows],
            )

    def _unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        for chunk in _chunks(list(memory_ids)):
            conn.execute(
                text(f"DELETE FROM memory_fts WHERE rowid IN ({','.join(str(int(i)) for i in chunk)})")
            )

    def keyword_search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        terms = [t for t in terms if t]
        if not terms or k <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms[:64])
        mt = self.t.memories
        score = literal_column("bm25(memory_fts)").label("score")
        stmt = (
            select(mt.c.id, score)
            .select_from(_FTS.join(mt, mt.c.id == _FTS.c.rowid))
            .where(text("memory_fts MATCH :match"), mt.c.user_id == user_id, *self._filter_clause(filters, now))
            .order_by(score)
            .limit(k)
        )
        with self._read() as conn:
            rows = conn.execute(stmt, {"match": match}).all()
        # bm25() is lower-is-better and negative; report a positive relevance
        return [(int(mid), float(-score)) for mid, score in rows]

    # --- vector leg -----------------------------------------------------------------------------
    def _vector_state(self, conn: Connection, user_id: str) -> tuple[str, int] | None:
        u = self.t.users
        row = conn.execute(select(u.c.incarnation, u.c.version).where(u.c.user_id == user_id)).first()
        return None if row is None else (row[0], int(row[1]))

    def _vector_rows(self, conn: Connection, user_id: str, since: int) -> list[VectorRow]:
        mt = self.t.memories
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

    def vector_search(
        self, user_id: str, query: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        return self.vector_search_batch(user_id, np.asarray(query).reshape(1, -1), k, filters, now)[0]

    def vector_search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        if not filters.only_active:
            raise ConfigurationError("vector search covers active memories only")
        with self._read() as conn:
            uv = self.vectors.refresh(
                user_id,
                lambda: self._vector_state(conn, user_id),
                lambda since: self._vector_rows(conn, user_id, since),
            )
            allowed = None
            if filters.metadata:
                mt = self.t.memories
                allowed = np.fromiter(
                    (
                        r[0]
                        for r in conn.execute(
                            select(mt.c.id).where(mt.c.user_id == user_id, *self._filter_clause(filters, now))
                        )
                    ),
                    dtype=np.int64,
                )
        if uv is None:
            return [[] for _ in range(len(queries))]
        with uv.lock:
            return uv.search_many(queries, k, filters, now.timestamp(), allowed)

    def _forget_user_caches(self, user_id: str) -> None:
        self.vectors.drop(user_id)

    def close(self) -> None:
        self.vectors.clear()
        super().close()
