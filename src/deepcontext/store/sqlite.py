"""The embedded default: one SQLite file.

WAL journal, a busy timeout, foreign keys on. Write transactions start with ``BEGIN IMMEDIATE`` so
two processes writing the same file queue up on the busy timeout instead of failing with
"database is locked" when a read transaction tries to upgrade. Keyword search is FTS5 with bm25;
vector search is a per-user numpy matrix kept in RAM (:mod:`deepcontext.store.vectors`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote
from typing import Any, cast

import numpy as np
from sqlalchemy import (
    Connection,
    bindparam,
    column,
    func,
    create_engine,
    event,
    select,
    text,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import UnaryExpression

from deepcontext.clock import from_epoch, to_epoch
from deepcontext.errors import ConfigurationError, MigrationError
from deepcontext.store.base import (
    COMMON_TERM_SHARE,
    DEFAULT_FILTERS,
    DF_TTL_S,
    MAX_TERM_SHARE,
    RANK_CAP,
    MemoryFilters,
    RankFields,
    entity_limits,
)
from deepcontext.store.keyword_policy import informative_terms
from deepcontext.store.migrations import latest_version
from deepcontext.store.sql import SQLStore
from deepcontext.store.sqlite_reads import SQLiteGraphReads, SQLiteMemoryReads, SQLiteProvenanceReads, SQLiteTurnReads
from deepcontext.store.sqlparts import chunks
from deepcontext.store.ttlcache import TTLCache
from deepcontext.store.vectors import VectorCache, VectorRow
from deepcontext.text import search_text
from deepcontext.types import Memory, MemoryStatus, Provenance

__all__ = ["COMMON_TERM_SHARE", "MAX_TERM_SHARE", "RANK_CAP", "SQLiteStore", "user_token"]

log = logging.getLogger("deepcontext.store")


def user_token(user_id: str) -> str:
    """The token naming a user in the keyword index (hex, so the tokenizer keeps it whole)."""
    return "u" + hashlib.blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()


@functools.cache
def _porter() -> Any:
    """FTS5's porter tokenizer stems index terms; the vocabulary is looked up with the same stems."""
    import Stemmer

    return Stemmer.Stemmer("porter")


def _unindexed(col: Any) -> Any:
    """``+col``: tells SQLite not to use an index on ``col``. Lookups by id must go through the
    primary key; with one big user, the user_id index would otherwise win and scan all its rows."""
    return UnaryExpression(col, operator=operators.custom_op("+"), type_=col.type)


#: which of the memory ids of a JSON array (1) are active, unexpired (now as epoch: 3) memories of a user (2)
_ALLOWED_SQL = (
    "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?1)) AND +user_id = ?2 "
    "AND status = 'active' AND (expires_at IS NULL OR expires_at > ?3)"
)

#: the best ?2 rows of the keyword index matching ?1 by bm25, after ?3 of them
_RANK_SQL = "SELECT rowid, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?1 ORDER BY s LIMIT ?2 OFFSET ?3"
#: bm25 of the most recent ?2 matches of ?1, the best ?3 after ?4 of them (ties: newest first)
_CAPPED_RANK_SQL = (
    "SELECT rowid, s FROM (SELECT rowid, bm25(memory_fts) AS s FROM memory_fts WHERE memory_fts MATCH ?1 "
    "ORDER BY rowid DESC LIMIT ?2) ORDER BY s, rowid DESC LIMIT ?3 OFFSET ?4"
)


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
        vector_cache_max_rows: int = 2_000_000,
        vector_index_min_rows: int = 20_000,
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
        #: document frequencies of index terms, kept DF_TTL_S seconds (fts5vocab counts them by reading
        #: the term's whole posting list: 3 ms for a user token at 100k rows)
        self._df_cache: TTLCache[int] = TTLCache(DF_TTL_S)
        event.listen(self.engine, "connect", self._on_connect)
        event.listen(self.engine, "begin", self._on_begin)
        self.trace(self.engine)
        self.vectors = VectorCache(dim, vector_cache_max_rows, ann_min_rows=vector_index_min_rows)

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

    def migrate(self) -> int:
        if not self.read_only:
            return super().migrate()
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

    # --- keyword index --------------------------------------------------------------------------
    def index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        if not rows:
            return
        mt = self.t.memories
        owners: dict[int, str] = {}
        for chunk in chunks([mid for mid, _ in rows]):
            owners.update((int(i), u) for i, u in conn.execute(select(mt.c.id, mt.c.user_id).where(mt.c.id.in_(list(chunk)))))
        conn.execute(
            text("INSERT INTO memory_fts(rowid, body, uid) VALUES (:id, :body, :uid)"),
            [{"id": mid, "body": search_text(t), "uid": user_token(owners[mid])} for mid, t in rows if mid in owners],
        )

    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        for chunk in chunks(list(memory_ids)):
            conn.execute(
                text(f"DELETE FROM memory_fts WHERE rowid IN ({','.join(str(int(i)) for i in chunk)})")
            )

    def _doc_frequency(self, conn: Connection, term: str) -> int:
        """Rows of the keyword index holding ``term`` (cached :data:`DF_TTL_S` seconds)."""
        hit = self._df_cache.get(term)
        if hit is not None:
            return hit
        # one term at a time: fts5vocab answers `term = ?` from the index (an IN list can miss rows)
        got = conn.execute(text("SELECT doc FROM memory_fts_vocab WHERE term = :t"), {"t": term}).first()
        df = int(got[0]) if got is not None else 0
        self._df_cache.put(term, df)
        return df

    def _informative_terms(self, conn: Connection, user_id: str, terms: list[str]) -> tuple[list[str], int, int | None]:
        """Drop terms found in more than :data:`COMMON_TERM_SHARE` of the user's indexed memories:
        they cost the most to rank (every matching row is scored) and weigh least in bm25. If every
        term is that common, the rarest one is kept unless it is in more than
        :data:`MAX_TERM_SHARE` of them (then the keyword leg has nothing useful to say).
        Returns (terms, rows indexed for the user, the kept terms' summed document frequencies or
        None when not counted: under 1,000 rows)."""
        n_user = self._doc_frequency(conn, user_token(user_id))
        if n_user < 1000:
            return terms, n_user, None
        df = [self._doc_frequency(conn, stem) for stem in _porter().stemWords(terms)]
        keep = informative_terms(list(zip(terms, df, strict=True)), n_user).terms
        return [t for t, _ in keep], n_user, sum(d for _, d in keep)

    def keyword_search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """bm25 over the user's memories: FTS5 ranks matching rows on its own (fast
        ``ORDER BY rank LIMIT``), then ownership and filters are checked for the best rows by id;
        more are fetched if too many were dropped. When the user owns a small share of the index the
        query also ANDs the user's token, so other users' rows are never ranked. When the terms match
        more than :data:`RANK_CAP` rows, only the most recent :data:`RANK_CAP` matches are ranked."""
        terms = list(dict.fromkeys(t for t in terms if t))[:64]
        if not terms or k <= 0:
            return []
        mt = self.t.memories
        with self.connection() as conn:
            terms, n_user, matches = self._informative_terms(conn, user_id, terms)
            if not terms:
                return []
            body = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
            highest = self.raw(conn, "SELECT max(id) FROM memories").fetchone()[0] or 0
            if n_user >= 0.5 * highest:  # (nearly) alone in the index: the user token would only cost
                match = f"body : ({body})"
            else:
                match = f'uid : "{user_token(user_id)}" AND body : ({body})'

            def allowed(ids: list[int]) -> set[int]:
                if filters == DEFAULT_FILTERS:  # the usual case: a prepared statement on the driver
                    rows = self.raw(conn, _ALLOWED_SQL, (json.dumps(ids), user_id, to_epoch(now)))
                    return {int(r[0]) for r in rows}
                return {
                    int(r[0])
                    for r in conn.execute(
                        select(mt.c.id).where(self._ids_in(mt.c.id, ids), _unindexed(mt.c.user_id) == user_id, *self.filter_clause(filters, now))
                    )
                }

            out: list[tuple[int, float]] = []

            def take(rows: list[tuple[int, float]]) -> None:
                # ownership checked for 2k rows at a time (the first slice usually suffices); bm25 is
                # lower-is-better and negative: report a positive relevance
                for i in range(0, len(rows), 2 * k):
                    part = rows[i : i + 2 * k]
                    ok = allowed([int(r[0]) for r in part])
                    out.extend((int(mid), float(-score)) for mid, score in part if int(mid) in ok)
                    if len(out) >= k:
                        return

            # inactive memories stay in the index until purged: ask for enough rows that one round
            # usually suffices, since every round ranks every match
            fetch = max(4 * k, 200)
            if matches is not None and matches > RANK_CAP:
                # rank the most recent RANK_CAP matches; SQLite sorts them and returns the best
                # `fetch` (ties: the newer memory first), a further round only if too many of those
                # are inactive or filtered out; straight on the driver (SQLAlchemy's rows cost more)
                offset = 0
                while len(out) < k and offset < RANK_CAP:
                    rows = self.raw(conn, _CAPPED_RANK_SQL, (match, RANK_CAP, fetch, offset)).fetchall()
                    take(rows)
                    if len(rows) < fetch:
                        break
                    offset += fetch
                return out[:k]
            offset = 0
            while len(out) < k:
                rows = self.raw(conn, _RANK_SQL, (match, fetch, offset)).fetchall()
                take(rows)
                if len(rows) < fetch:
                    break
                offset += fetch
                fetch *= 4
        return out[:k]

    # --- memories by id (search results, get) ------------------------------------------------------


    # --- graph ------------------------------------------------------------------------------------


    # --- details of search results ---------------------------------------------------------------


    # --- vector leg -----------------------------------------------------------------------------


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
        with self.connection() as conn:
            uv = self.vectors.refresh(
                user_id,
                lambda: self.memories.user_state(conn, user_id),
                lambda since: self._vector_rows(conn, user_id, since),
            )
            allowed = None
            if filters.needs_sql:
                mt = self.t.memories
                allowed = np.fromiter(
                    (
                        r[0]
                        for r in conn.execute(
                            select(mt.c.id).where(mt.c.user_id == user_id, *self.filter_clause(filters, now))
                        )
                    ),
                    dtype=np.int64,
                )
        if uv is None:
            return [[] for _ in range(len(queries))]
        with uv.lock:
            return uv.search_many(queries, k, filters, now.timestamp(), allowed)

    def _owner(self, col: Any) -> Any:
        return _unindexed(col)

    def _ids_in(self, col: Any, ids: Sequence[int]) -> Any:
        # the ids as one JSON array read by json_each: one bound parameter, and one statement shape
        # whatever the count (SQLAlchemy renders an IN list per count; 0.58 -> 0.12 ms for 200 ids)
        listed: Any = select(column("value")).select_from(func.json_each(bindparam(None, json.dumps([int(i) for i in ids]))))
        return col.in_(listed.scalar_subquery())

    def _purge_deleted(self, conn: Connection) -> None:
        # FTS5 deletes only add "deleted" markers; the deleted rows' terms stay in the index's segments
        # until they are merged. 'optimize' merges every segment into one, without them.
        conn.execute(text("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')"))

    def delete_user(self, user_id: str) -> dict[str, int]:
        """As :meth:`SQLStore.delete_user`; then the WAL is checkpointed and truncated (best effort:
        a reader still on an older snapshot keeps it), so the user's text is in neither file."""
        counts = super().delete_user(user_id)
        try:
            with self.engine.connect() as conn:
                self.raw(conn, "PRAGMA wal_checkpoint(TRUNCATE)")
        except (SQLAlchemyError, sqlite3.Error) as exc:
            log.warning("WAL checkpoint after delete_user failed: %s", exc)
        return counts

    def forget_user_caches(self, user_id: str) -> None:
        self.vectors.drop(user_id)
        self.turns.forget(user_id)


    def close(self) -> None:
        self.vectors.clear()
        super().close()
