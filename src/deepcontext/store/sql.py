"""What SQLite and PostgreSQL stores share: connections, transactions, the schema, and the
repositories each concern is written once in (memories, writes, turns, graph, provenance, kv,
export / import); the Store methods a repository answers are handed to it by
:class:`~deepcontext.store.sql_calls.RepositoryCalls`.

Backends subclass :class:`SQLStore`: they provide the engine, the transaction flavour, the keyword
index and the vector leg, and may replace a repository by a subclass with faster reads.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, event, false, func, insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.elements import ColumnElement

from deepcontext.errors import (
    ConfigurationError,
    DeepContextError,
    DiskFullError,
    MigrationError,
    ReadOnlyDatabaseError,
    StorageError,
    TurnNotFoundError,
)
from deepcontext.settings import KEYWORD_CONTEXT_TURNS
from deepcontext.store import lifecycle
from deepcontext.store.indexes import KeywordIndex, VectorIndex
from deepcontext.store.interface import (
    ColumnKind,
    MemoryFilters,
    Store,
)
from deepcontext.store.locks import UserLockMixin
from deepcontext.store.metafilter import compile_filter, parse_metadata_filter
from deepcontext.store.migrations import MIGRATIONS, latest_version
from deepcontext.store.schema import Tables, build_metadata, import_columns
from deepcontext.store.sql_activity import SQLActivityLog
from deepcontext.store.sql_add import AddWriter
from deepcontext.store.sql_apikeys import SQLApiKeys
from deepcontext.store.sql_calls import RepositoryCalls
from deepcontext.store.sql_conversations import SQLConversationRows
from deepcontext.store.sql_graph import GraphReads
from deepcontext.store.sql_inspection import SQLInspection
from deepcontext.store.sql_kv import KeyValues
from deepcontext.store.sql_memories import MemoryReads
from deepcontext.store.sql_provenance import ProvenanceReads
from deepcontext.store.sql_summaries import SQLSummaries
from deepcontext.store.sql_transfer import IMPORTS_NAMESPACE, Transfer
from deepcontext.store.sql_turns import TurnReads
from deepcontext.store.sql_writes import MemoryWriter
from deepcontext.store.summaries import Summaries

__all__ = ["IMPORTS_NAMESPACE", "SQLStore"]

_META_VERSION = "schema_version"
#: the primary result codes of SQLite, and the SQLSTATEs of PostgreSQL, a write can fail with
_SQLITE_READONLY, _SQLITE_FULL = 8, 13
_PG_READ_ONLY, _PG_DISK_FULL = "25006", "53100"


class SQLStore(UserLockMixin, RepositoryCalls, Store):
    """Common SQL implementation. Subclasses set ``engine`` and implement the abstract hooks."""

    engine: Engine
    keyword_index: KeywordIndex
    vector_index: VectorIndex
    #: the repositories a backend may replace by faster subclasses
    memory_reads_cls: type[MemoryReads] = MemoryReads
    turn_reads_cls: type[TurnReads] = TurnReads
    graph_reads_cls: type[GraphReads] = GraphReads
    provenance_reads_cls: type[ProvenanceReads] = ProvenanceReads

    def __init__(self, url: str, dim: int, *, tracer: Any = None, keyword_context_turns: int = KEYWORD_CONTEXT_TURNS) -> None:
        self.url = url
        self.dim = dim
        #: earlier turns indexed for keyword search with each verbatim turn (see MemoryWriter.index)
        self.keyword_context_turns = keyword_context_turns
        self.metadata = build_metadata(dim)
        self.t = Tables(self.metadata)
        self.tracer = tracer
        self._pinned = threading.local()
        self.memories = self.memory_reads_cls(self)
        self.writer = MemoryWriter(self)
        self.adds = AddWriter(self)
        self.turns = self.turn_reads_cls(self)
        self.graph = self.graph_reads_cls(self)
        self.provenance = self.provenance_reads_cls(self)
        self.kv = KeyValues(self)
        self.transfer = Transfer(self)
        self.inspection = SQLInspection(self)
        self.keys = SQLApiKeys(self)
        self.activity_log = SQLActivityLog(self)
        self.summaries: Summaries | None = SQLSummaries(self)

    # the memory lifecycle's steps: functions of the store (store/lifecycle.py), bound as its methods
    count_short_term = lifecycle.count_short_term
    set_consolidation_due = lifecycle.set_consolidation_due
    consolidation_flag = lifecycle.consolidation_flag
    users_due = lifecycle.users_due
    speaker_entity_ids = lifecycle.speaker_entity_ids
    decay_rows = lifecycle.decay_rows
    apply_decay = lifecycle.apply_decay
    soft_delete_faded = lifecycle.soft_delete_faded
    purge = lifecycle.purge
    consolidation_candidates = lifecycle.consolidation_candidates
    write_consolidations = lifecycle.write_consolidations

    # ------------------------------------------------------------------------------------------
    # transactions
    # ------------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, begin: Callable[[], Any] | None = None) -> Iterator[Connection]:
        """A write transaction. Errors roll back and surface as StorageError (ours pass through):
        ReadOnlyDatabaseError on a read-only database, DiskFullError when the disk is full."""
        if self.read_only:
            raise ReadOnlyDatabaseError(f"the database is read-only ({self.describe()}): nothing was written")
        try:
            with (begin or self._begin_write)() as conn:
                yield conn
        except DeepContextError:
            raise
        except SQLAlchemyError as exc:
            raise self.write_error(exc) from exc
        self.disk_full = False

    def write_error(self, exc: SQLAlchemyError) -> StorageError:
        """The StorageError of a failed write; notes a full disk for readiness."""
        cause = getattr(exc, "orig", None) or exc
        said = f"database write failed: {exc.__class__.__name__}: {cause}"
        code = getattr(cause, "sqlite_errorcode", None)
        state = getattr(cause, "sqlstate", None)
        if (code is not None and code & 0xFF == _SQLITE_FULL) or state == _PG_DISK_FULL:
            self.disk_full = True
            return DiskFullError(f"disk full: the disk holding the database has no space left; nothing was written ({said})")
        if (code is not None and code & 0xFF == _SQLITE_READONLY) or state == _PG_READ_ONLY:
            return ReadOnlyDatabaseError(f"the database is read-only ({self.describe()}): nothing was written ({said})")
        return StorageError(said)

    def describe(self) -> str:
        """The database, for messages (a file's path, a URL without its password)."""
        path = getattr(self, "path", None)
        return str(path) if path is not None else self.engine.url.render_as_string(hide_password=True)

    def trace(self, engine: Engine) -> Engine:
        """Report every statement SQLAlchemy runs on ``engine`` to the tracer (when there is one)."""
        tracer = self.tracer
        if tracer is not None:
            event.listen(
                engine,
                "before_cursor_execute",
                lambda conn, cursor, statement, params, context, executemany: tracer(statement, params),
            )
        return engine

    def raw(self, conn: Connection, sql: str, params: Any = (), **options: Any) -> Any:
        """Run ``sql`` straight on the driver of ``conn`` (the hot reads: no SQLAlchemy row handling),
        reported to the tracer like every other statement; returns the driver's cursor."""
        if self.tracer is not None:
            self.tracer(sql, params)
        return conn.connection.driver_connection.execute(sql, params, **options)  # type: ignore[union-attr]

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Run the reads inside on one connection of this thread (one snapshot on SQLite, and no
        pool checkout per call): search wraps its legs in it."""
        with self._pin(self._open_read):
            yield

    @contextmanager
    def side_reading(self) -> Iterator[None]:
        """As :meth:`reading`, on a connection from :meth:`_open_side_read` (see Store.side_reading)."""
        with self._pin(self._open_side_read):
            yield

    @contextmanager
    def _pin(self, opener: Callable[[], AbstractContextManager[Connection]]) -> Iterator[None]:
        if getattr(self._pinned, "conn", None) is not None:
            yield
            return
        with opener() as conn:
            self._pinned.conn = conn
            try:
                yield
            finally:
                self._pinned.conn = None

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        pinned = getattr(self._pinned, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._open_read() as conn:
            yield conn

    @contextmanager
    def _open_read(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except DeepContextError:
            raise
        except SQLAlchemyError as exc:
            raise StorageError(f"database read failed: {exc.__class__.__name__}: {getattr(exc, 'orig', None) or exc}") from exc

    def _open_side_read(self) -> AbstractContextManager[Connection]:
        """A read connection for :meth:`side_reading` (default: the main pool's)."""
        return self._open_read()

    def _begin_write(self) -> Any:
        """Context manager yielding a connection inside a write transaction."""
        return self.engine.begin()

    def _begin_migration(self) -> Any:
        """As :meth:`_begin_write`, for the migrations' transaction."""
        return self._begin_write()

    # hooks for the backend --------------------------------------------------------------------
    def index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Add (memory_id, text) rows to the keyword index."""
        self.keyword_index.index(conn, rows)

    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        """Remove memories from the keyword index."""
        self.keyword_index.unindex(conn, memory_ids)

    def migration_lock(self, conn: Connection) -> None:
        """Serialise migrations across processes (inside the transaction)."""

    def forget_user_caches(self, user_id: str) -> None:
        """Drop in-process caches of a user."""
        self.vector_index.forget(user_id)

    def purge_deleted(self, conn: Connection) -> None:
        """After a user's rows were deleted, in the same transaction: remove what the database keeps
        of them beyond the rows."""
        self.keyword_index.purge_deleted(conn)

    def ids_in(self, col: Any, ids: Sequence[int]) -> ColumnElement[bool]:
        """``col IN (ids)`` for the hot paths of search (a hundred candidate ids); backends pass the
        list as one parameter where they can (rendering and binding one placeholder per id costs more
        than the lookups)."""
        return col.in_([int(i) for i in ids])

    def owner_clause(self, col: Any) -> Any:
        """The user_id column as used in lookups by primary key: both backends hide it from the
        planner so the primary key is used, never a user_id index (a user's rows are many; with
        statistics older than a bulk insert, a planner may take the user index for a 1-row estimate
        and read all of the user's rows once per candidate)."""
        return col

    def lock_user(self, conn: Connection, user_id: str) -> None:
        """Serialise this write with the user's other writes, before it reads anything (PostgreSQL:
        the users row FOR UPDATE; SQLite: nothing, BEGIN IMMEDIATE already serialises writers)."""

    def upsert(self, table: Any) -> Any:
        """The dialect's INSERT supporting ON CONFLICT (sqlite / postgresql insert())."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------------
    # schema
    # ------------------------------------------------------------------------------------------
    def schema_version(self) -> int:
        with self.connection() as conn:
            return self._version(conn)

    def _version(self, conn: Connection) -> int:
        if not self.engine.dialect.has_table(conn, "dc_meta"):
            return 0
        row = conn.execute(select(self.t.meta.c.value).where(self.t.meta.c.key == _META_VERSION)).first()
        return int(row[0]) if row else 0

    def migrate(self) -> int:
        target = latest_version()
        try:
            with self.transaction(self._begin_migration) as conn:
                self.migration_lock(conn)
                current = self._version(conn)
                if current == 0 and all(self.engine.dialect.has_table(conn, t) for t in ("memories", "relationships")):
                    # DeepContext 0.1's tables: creating ours would fail on "memories"
                    from deepcontext.errors import LegacyDatabaseError

                    path = getattr(self, "path", None)
                    raise LegacyDatabaseError(str(path) if path else self.engine.url.render_as_string(hide_password=True))
                if current > target:
                    raise MigrationError(
                        f"database schema version {current} is newer than this deepcontext ({target}); upgrade deepcontext"
                    )
                if current == target:
                    return current
                from sqlalchemy import MetaData

                md = MetaData()
                for migration in MIGRATIONS:
                    for step in migration.steps:
                        step.model(md, self.dim)
                        if migration.version > current:
                            step.apply(conn, md, self.dim)
                self.set_meta(conn, _META_VERSION, str(target))
                return target
        except MigrationError:
            raise
        except StorageError as exc:
            raise MigrationError(f"migration failed: {exc}") from exc

    def set_meta(self, conn: Connection, key: str, value: str) -> None:
        m = self.t.meta
        if conn.execute(select(m.c.key).where(m.c.key == key)).first():
            conn.execute(update(m).where(m.c.key == key).values(value=value))
        else:
            conn.execute(insert(m).values(key=key, value=value))

    def ensure_embedder(self, model_id: str, dimensions: int) -> None:
        m = self.t.meta
        with self.connection() as conn:  # the usual case, and the only one a read-only database allows
            known = dict(conn.execute(select(m.c.key, m.c.value).where(m.c.key.in_(["embedder", "dimensions"]))).all())
        if known.get("embedder") == model_id and known.get("dimensions") == str(dimensions):
            return
        if self.read_only:  # nothing can be recorded: only a mismatch is worth saying
            if known:
                raise self._embedder_mismatch(known, model_id, dimensions)
            return
        with self.transaction() as conn:
            rows = dict(conn.execute(select(m.c.key, m.c.value).where(m.c.key.in_(["embedder", "dimensions"]))).all())
            if not rows:
                self.set_meta(conn, "embedder", model_id)
                self.set_meta(conn, "dimensions", str(dimensions))
                return
            if rows.get("embedder") != model_id or rows.get("dimensions") != str(dimensions):
                raise self._embedder_mismatch(rows, model_id, dimensions)

    @staticmethod
    def _embedder_mismatch(rows: Mapping[str, str], model_id: str, dimensions: int) -> ConfigurationError:
        return ConfigurationError(
            f"this database holds vectors of embedder {rows.get('embedder')!r} "
            f"({rows.get('dimensions')} dims) but the configured embedder is {model_id!r} "
            f"({dimensions} dims); use the same embedder or another database"
        )

    def recorded_embedder(self) -> tuple[str, int] | None:
        """The embedder (model id, dimensions) the database's vectors were made with; None for a
        database that has recorded none yet."""
        if self.schema_version() == 0:
            return None
        m = self.t.meta
        with self.connection() as conn:
            rows = dict(conn.execute(select(m.c.key, m.c.value).where(m.c.key.in_(["embedder", "dimensions"]))).all())
        if not rows.get("embedder") or not str(rows.get("dimensions", "")).isdigit():
            return None
        return str(rows["embedder"]), int(rows["dimensions"])

    def close(self) -> None:
        self.vector_index.close()
        self.engine.dispose()

    # --- the search legs, by the indexes --------------------------------------------------------
    def keyword_search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        return self.keyword_index.search(user_id, terms, k, filters, now)

    def vector_search(
        self, user_id: str, query: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        return self.vector_index.search_batch(user_id, np.asarray(query).reshape(1, -1), k, filters, now)[0]

    def vector_search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        return self.vector_index.search_batch(user_id, queries, k, filters, now)

    # ------------------------------------------------------------------------------------------
    # writes
    # ------------------------------------------------------------------------------------------
    def bump_user(self, conn: Connection, user_id: str, now: datetime, *, consolidation_due: bool = False) -> int:
        """Create the user row if needed and increment its version; returns the new version.

        An upsert, so two writers creating the same user cannot collide. On PostgreSQL the row
        lock it takes also serialises concurrent writes of one user until commit."""
        u = self.t.users
        stmt = self.upsert(u).values(
            user_id=user_id,
            version=1,
            incarnation=secrets.token_hex(8),
            created_at=now,
            updated_at=now,
            consolidation_due=consolidation_due,
        )
        set_: dict[str, Any] = {"version": u.c.version + 1, "updated_at": now}
        if consolidation_due:
            set_["consolidation_due"] = True
        stmt = stmt.on_conflict_do_update(index_elements=[u.c.user_id], set_=set_).returning(u.c.version)
        return int(conn.execute(stmt).scalar_one())

    def check_turns(self, conn: Connection, user_id: str, turn_ids: Sequence[int]) -> None:
        ids = sorted(set(turn_ids))
        if not ids:
            return
        tt = self.t.turns
        found = {
            r[0] for r in conn.execute(select(tt.c.id).where(self.owner_clause(tt.c.user_id) == user_id, tt.c.id.in_(ids))).all()
        }
        missing = [i for i in ids if i not in found]
        if missing:
            raise TurnNotFoundError(missing[0], user_id)

    def scope_clause(self, scope: tuple[str | None, str | None]) -> list[ColumnElement[bool]]:
        """Memories of this agent and run, where given (None: any)."""
        mt = self.t.memories
        return [col == v for col, v in ((mt.c.agent_id, scope[0]), (mt.c.run_id, scope[1])) if v is not None]

    def filter_clause(self, filters: MemoryFilters, now: datetime) -> list[ColumnElement[bool]]:
        mt = self.t.memories
        c: list[ColumnElement[bool]] = [mt.c.status.in_([s.value for s in filters.statuses])]
        if not filters.include_expired:
            c.append(or_(mt.c.expires_at.is_(None), mt.c.expires_at > now))
        if filters.tiers is not None:
            c.append(mt.c.tier.in_([x.value for x in filters.tiers]))
        if filters.types is not None:
            c.append(mt.c.memory_type.in_([x.value for x in filters.types]))
        if filters.conversation_ids is not None:
            c.append(mt.c.conversation_id.in_(list(filters.conversation_ids)))
        when = func.coalesce(mt.c.said_at, mt.c.created_at)
        if filters.after is not None:
            c.append(when >= filters.after)
        if filters.before is not None:
            c.append(when < filters.before)
        for col, wanted in ((mt.c.agent_id, filters.agent_ids), (mt.c.run_id, filters.run_ids)):
            if wanted is not None:
                named = [v for v in wanted if v is not None]
                either = ([col.in_(named)] if named else []) + ([col.is_(None)] if None in wanted else [])
                c.append(or_(*either) if either else false())
        if filters.metadata is not None:
            meta = filters.metadata
            tree = parse_metadata_filter(meta) if isinstance(meta, Mapping) else meta
            if tree is not None:
                c.append(compile_filter(tree, mt.c.metadata, self.engine.dialect.name))
        return c

    def conversation_rows(self, user_id: str, conversation_id: str) -> SQLConversationRows:
        return SQLConversationRows(self, user_id, conversation_id)

    def import_columns(self, table: str) -> dict[str, ColumnKind] | None:
        return import_columns(self.metadata, table)
