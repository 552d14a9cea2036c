"""PostgreSQL's HNSW index built once after a bulk import instead of row by row.

pgvector maintains the HNSW graph on every insert, most of a large import's time. Inside
:meth:`PostgresVectorBuild.deferred` the index is dropped, the rows go in at the table's own pace, and the index is built once at the
end (pgvector builds in memory up to ``maintenance_work_mem`` and in parallel workers). Meanwhile
searches stay correct: without the index the vector leg scans the user's rows exactly.

A process killed inside the scope leaves the table without its index. The scope holds a
session-level advisory lock, and every process that opens the database checks for the index: when
it is missing (or left invalid) and no bulk import holds the lock, a background thread builds it
again (``CREATE INDEX CONCURRENTLY``: writes go on meanwhile).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from deepcontext.errors import StorageError
from deepcontext.store.migrations import hnsw_index_sql
from deepcontext.store.repository import Reads

__all__ = ["INDEX_NAME", "PostgresVectorBuild"]

log = logging.getLogger("deepcontext.store")

INDEX_NAME = "ix_memories_embedding_hnsw"
#: key of the session-level advisory lock a bulk import holds while the index is away
_BULK_LOCK_KEY = 0x64635F62756C6B  # "dc_bulk"


class _Context(Reads, Protocol):
    """What the index build uses of its store: the engine, the vector size and index mode, the
    build's memory."""

    @property
    def engine(self) -> Engine: ...

    @property
    def dim(self) -> int: ...

    @property
    def vector_mode(self) -> str: ...

    @property
    def index_build_memory_mb(self) -> int:
        """maintenance_work_mem of a build: pgvector builds the graph in memory up to this, then on
        disk, many times slower."""


class PostgresVectorBuild:
    """Dropping and building a PostgreSQL store's HNSW index."""

    def __init__(self, store: _Context) -> None:
        self.s = store
        self._repair: threading.Thread | None = None

    def state(self, conn: Connection) -> str:
        """``"valid"``, ``"invalid"`` (a concurrent build that failed) or ``"missing"``."""
        row = conn.execute(
            text(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                "WHERE c.relname = :name AND c.relnamespace = to_regnamespace(current_schema())::oid"
            ),
            {"name": INDEX_NAME},
        ).first()
        return "missing" if row is None else "valid" if row[0] else "invalid"

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """A scope without the HNSW index, built again when it closes (see the module docstring)."""
        if self.s.vector_mode == "none":
            yield
            return
        conn = self._autocommit()
        try:
            if not conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _BULK_LOCK_KEY}).scalar():
                raise StorageError("another bulk import holds the vector index of this database; try again when it ends")
            try:
                conn.execute(text(f"DROP INDEX IF EXISTS {INDEX_NAME}"))
                yield
            finally:
                self._build(conn, concurrently=False)
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _BULK_LOCK_KEY})
        finally:
            conn.close()

    def repair_in_background(self) -> None:
        """When the index is missing or invalid (a bulk import killed before it built it), build it
        on a background thread, unless a bulk import is under way."""
        if self.s.vector_mode == "none":
            return
        with self.s.connection() as conn:
            if self.state(conn) == "valid":
                return
        log.warning("the HNSW index %s is missing: building it in the background (searches scan exactly meanwhile)", INDEX_NAME)
        self._repair = threading.Thread(target=self._repair_now, name="deepcontext-hnsw-build", daemon=True)
        self._repair.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for a background build (at close; the server finishes or cancels it)."""
        if self._repair is not None:
            self._repair.join(timeout)

    def _repair_now(self) -> None:
        try:
            conn = self._autocommit()
        except StorageError as exc:
            log.error("could not build the HNSW index: %s", exc)
            return
        try:
            if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _BULK_LOCK_KEY}).scalar():
                try:
                    self._build(conn, concurrently=True)
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _BULK_LOCK_KEY})
        except SQLAlchemyError as exc:
            log.error("building the HNSW index failed: %s", exc)
        finally:
            conn.close()

    def _build(self, conn: Connection, *, concurrently: bool) -> None:
        state = self.state(conn)
        if state == "valid":
            return
        if state == "invalid":
            conn.execute(text(f"DROP INDEX IF EXISTS {INDEX_NAME}"))
        conn.execute(text(f"SET maintenance_work_mem = '{int(self.s.index_build_memory_mb)}MB'"))
        conn.execute(text(hnsw_index_sql(self.s.dim, concurrently=concurrently)))
        conn.execute(text("RESET maintenance_work_mem"))

    def _autocommit(self) -> Connection:
        try:
            return self.s.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as exc:
            raise StorageError(f"could not connect to PostgreSQL: {exc}") from exc
