"""The embedded default: one SQLite file.

WAL journal, a busy timeout, foreign keys on. Write transactions start with ``BEGIN IMMEDIATE`` so
two processes writing the same file queue up on the busy timeout instead of failing with
"database is locked" when a read transaction tries to upgrade. Keyword search is FTS5 with bm25;
vector search is a per-user numpy matrix kept in RAM (:mod:`deepcontext.store.vectors`).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import (
    Connection,
    bindparam,
    column,
    create_engine,
    event,
    func,
    select,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from deepcontext.errors import ConfigurationError, DiskFullError, MigrationError
from deepcontext.settings import KEYWORD_CONTEXT_TURNS
from deepcontext.store.ann_files import GraphFiles
from deepcontext.store.migrations import latest_version
from deepcontext.store.sql import SQLStore
from deepcontext.store.sqlite_keywords import SQLiteKeywordIndex, unindexed, user_token
from deepcontext.store.sqlite_reads import SQLiteGraphReads, SQLiteMemoryReads, SQLiteProvenanceReads, SQLiteTurnReads
from deepcontext.store.sqlite_vectors import SQLiteVectorIndex
from deepcontext.store.vector_cache import VectorCache

__all__ = ["SQLiteStore", "user_token"]

log = logging.getLogger("deepcontext.store")


class SQLiteStore(SQLStore):
    backend = "sqlite"
    memory_reads_cls = SQLiteMemoryReads
    turn_reads_cls = SQLiteTurnReads
    graph_reads_cls = SQLiteGraphReads
    provenance_reads_cls = SQLiteProvenanceReads
    turns: SQLiteTurnReads

    def __init__(
        self,
        url: str,
        dim: int,
        *,
        busy_timeout_ms: int = 60_000,
        reserve_bytes: int = 0,
        vector_cache_max_rows: int = 2_000_000,
        vector_index_min_rows: int = 20_000,
        vector_index_files: bool = True,
        tracer: Any = None,
        keyword_context_turns: int = KEYWORD_CONTEXT_TURNS,
    ) -> None:
        super().__init__(url, dim, tracer=tracer, keyword_context_turns=keyword_context_turns)
        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite":
            raise ConfigurationError(f"not a sqlite URL: {url!r}")
        database = parsed.database or ""
        if database in ("", ":memory:"):
            raise ConfigurationError("an in-memory SQLite database cannot be shared between connections; give a file path")
        self.path = Path(database).expanduser()
        # a mistyped path must not quietly start a new, empty memory (the default folder under
        # data_dir is created by DeepContext itself)
        if not self.path.parent.is_dir():
            raise ConfigurationError(
                f"no folder {str(self.path.parent)!r} for the SQLite database {str(self.path)!r}: "
                "create it first, or check the path"
            )
        from deepcontext.store.v01 import is_v01_database

        if self.path.is_file() and is_v01_database(self.path):
            # recognised before our connections touch it (they would switch it to WAL)
            from deepcontext.errors import LegacyDatabaseError

            raise LegacyDatabaseError(str(self.path))
        #: an existing file this process may not write (or in a directory it may not write: SQLite
        #: could not make its WAL files there): opened read-only, writes fail with StorageError
        self.read_only = self.path.exists() and not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK))
        if not self.read_only:
            address = f"sqlite:///{self.path}"
        else:
            address = f"sqlite:///file:{quote(str(self.path))}?mode=ro&uri=true"
            if not os.access(self.path.parent, os.W_OK) and not Path(f"{self.path}-shm").exists():
                # a WAL database needs its -shm file to be read; where none can be made, nobody can
                # write the file either: read it as immutable
                address += "&immutable=1"
        self.engine = create_engine(
            address,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            pool_size=8,
            max_overflow=8,
            pool_pre_ping=False,
        )
        self._busy_timeout_ms = busy_timeout_ms
        #: space held in a file next to the database, given up by delete_user on a full disk
        self.reserve_bytes = 0 if self.read_only else max(0, int(reserve_bytes))
        self.reserve_path = Path(f"{self.path}-reserve")
        event.listen(self.engine, "connect", self._on_connect)
        event.listen(self.engine, "begin", self._on_begin)
        self.trace(self.engine)
        files = None
        if vector_index_files:
            # users' HNSW graphs beside the file (a read-only database's are read, never written)
            files = GraphFiles(Path(f"{self.path}.vectors"), dim, writable=not self.read_only)
        self.vectors = VectorCache(dim, vector_cache_max_rows, ann_min_rows=vector_index_min_rows, files=files)
        self.keyword_index = SQLiteKeywordIndex(self)
        self.sqlite_vectors = SQLiteVectorIndex(self, self.vectors)
        self.vector_index = self.sqlite_vectors
        self._closing = threading.Event()
        self._read_ahead: threading.Thread | None = None

    # --- connection setup -----------------------------------------------------------------------
    def _on_connect(self, dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        if not self.read_only:
            self._ensure_wal(cur)
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        # deleted rows are overwritten with zeros, not left in free pages: a deleted user's text
        # leaves the file (see delete_user)
        cur.execute("PRAGMA secure_delete = ON")
        cur.execute("PRAGMA temp_store = MEMORY")
        cur.execute("PRAGMA cache_size = -65536")  # 64 MiB page cache
        cur.execute("PRAGMA mmap_size = 268435456")
        cur.close()

    def _ensure_wal(self, cur: sqlite3.Cursor) -> None:
        """Switch the file to WAL (persistent; once per database). Converting needs an exclusive lock
        and SQLite does not wait for it on the busy handler, so several processes opening a new
        file at once retry here until the first one has converted it."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        delay = 0.005
        while True:
            try:
                if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
                    return
                cur.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

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

    def warm_up(self) -> None:
        if self._read_ahead is None:
            self._read_ahead = threading.Thread(target=self._read_ahead_run, name="deepcontext-vector-read-ahead", daemon=True)
            self._read_ahead.start()

    def _read_ahead_run(self) -> None:
        try:
            self.sqlite_vectors.read_ahead(self._closing)
        except Exception as exc:  # noqa: BLE001 - a search reads what this did not
            log.warning("reading saved vectors ahead failed: %s: %s", type(exc).__name__, exc)

    def close(self) -> None:
        self._closing.set()
        if self._read_ahead is not None:
            self._read_ahead.join()  # it stops after the user it is reading (a second or so at most)
        super().close()

    def migrate(self) -> int:
        if not self.read_only:
            version = super().migrate()
            self.keep_reserve()
            return version
        current, target = self.schema_version(), latest_version()
        if current != target:
            raise MigrationError(
                f"{self.path} is read-only and at schema version {current}; this deepcontext needs {target}: "
                "open it once with write access to upgrade it"
            )
        return current

    def _begin_migration(self) -> Any:
        @contextmanager
        def cm() -> Iterator[Connection]:
            with self.engine.connect() as conn:
                # outside a transaction (SQLite ignores it inside one): rebuilding a table drops the
                # old one, which must not cascade to the rows referring to it
                self.raw(conn, "PRAGMA foreign_keys = OFF")
                try:
                    with conn.execution_options(sqlite_begin="IMMEDIATE").begin():
                        yield conn
                finally:
                    self.raw(conn, "PRAGMA foreign_keys = ON")

        return cm()

    def upsert(self, table: Any) -> Any:
        return sqlite_insert(table)

    # --- statements ---------------------------------------------------------------------------
    def owner_clause(self, col: Any) -> Any:
        return unindexed(col)

    def ids_in(self, col: Any, ids: Sequence[int]) -> Any:
        # the ids as one JSON array read by json_each: one bound parameter, and one statement shape
        # whatever the count (SQLAlchemy renders an IN list per count)
        listed: Any = select(column("value")).select_from(func.json_each(bindparam(None, json.dumps([int(i) for i in ids]))))
        return col.in_(listed.scalar_subquery())

    def delete_user(self, user_id: str) -> dict[str, int]:
        """As :meth:`SQLStore.delete_user`; then the WAL is checkpointed and truncated (best effort:
        a reader still on an older snapshot keeps it), so the user's text is in neither file; the
        user's saved vector graph is deleted.

        On a full disk the reserve file (``sqlite_reserve_mb``), if there is one, is given up and
        the delete tried again; the reserve is made again once there is room."""
        try:
            counts = super().delete_user(user_id)
        except DiskFullError:
            if not self._release_reserve():
                raise
            log.warning("disk full: gave up the reserve %s to delete user %r", self.reserve_path, user_id)
            self._checkpoint()  # the WAL into the file, then emptied: room for the delete's own WAL
            counts = super().delete_user(user_id)
        self.vectors.erase(user_id)
        self._checkpoint()
        self.keep_reserve()
        return counts

    def _checkpoint(self) -> None:
        try:
            with self.engine.connect() as conn:
                self.raw(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
        except (SQLAlchemyError, sqlite3.Error) as exc:
            log.warning("WAL checkpoint failed: %s", exc)

    def keep_reserve(self) -> None:
        """Make the reserve file its full size, if there is room (best effort)."""
        if not self.reserve_bytes:
            return
        try:
            if self.reserve_path.exists() and self.reserve_path.stat().st_size >= self.reserve_bytes:
                return
            with open(self.reserve_path, "wb") as f:
                if hasattr(os, "posix_fallocate"):  # blocks really allocated, not a sparse file
                    os.posix_fallocate(f.fileno(), 0, self.reserve_bytes)
                else:
                    chunk = b"\0" * (1 << 20)
                    for start in range(0, self.reserve_bytes, len(chunk)):
                        f.write(chunk[: self.reserve_bytes - start])
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            log.warning("no room for the disk reserve %s (%s): it is made when there is", self.reserve_path, exc.strerror or exc)
            self._release_reserve()

    def _release_reserve(self) -> bool:
        """Delete the reserve file; whether there was one."""
        try:
            self.reserve_path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            log.warning("could not delete the disk reserve %s: %s", self.reserve_path, exc)
            return False
        return True

    def size_bytes(self) -> int | None:
        files = (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
        return sum(f.stat().st_size for f in files if f.exists())

    def forget_user_caches(self, user_id: str) -> None:
        super().forget_user_caches(user_id)
        self.turns.forget(user_id)
