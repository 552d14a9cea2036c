"""PostgreSQL + pgvector: the backend for many processes over one database.

This module holds the engine (psycopg 3; ``postgresql://``, ``postgres://`` and
``postgresql+asyncpg://`` URLs are normalised; a QueuePool with ``pool_pre_ping``), transactions
and locking (per-user writes serialise on the ``users`` row, migrations on an advisory lock) and
the planner statistics. The keyword leg is :mod:`deepcontext.store.postgres_keywords`, the vector
leg :mod:`deepcontext.store.postgres_vectors`, the faster reads :mod:`deepcontext.store.postgres_reads`;
everything shared with SQLite is :class:`~deepcontext.store.sql.SQLStore`. A store call is one
short transaction and never waits on an embedder or an LLM.
"""

from __future__ import annotations

import functools
import logging
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Engine,
    Integer,
    bindparam,
    create_engine,
    event,
    func,
    literal,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError

from deepcontext.clock import as_utc
from deepcontext.errors import ConfigurationError, DeepContextError, MigrationError, StorageError
from deepcontext.settings import KEYWORD_CONTEXT_TURNS
from deepcontext.store.interface import AddOutcome, AddPlan
from deepcontext.store.migrations import pg_vector_mode
from deepcontext.store.postgres_index_build import PostgresVectorBuild
from deepcontext.store.postgres_keywords import PostgresKeywordIndex
from deepcontext.store.postgres_reads import PostgresGraphReads, PostgresMemoryReads, PostgresProvenanceReads
from deepcontext.store.postgres_vectors import MAX_EF_SEARCH, PostgresVectorIndex
from deepcontext.store.sql import SQLStore
from deepcontext.types import Memory, MemoryStatus, Provenance

__all__ = ["PostgresStore", "normalize_url"]

log = logging.getLogger("deepcontext.store")

#: key of the transaction-level advisory lock that serialises migrations
_MIGRATION_LOCK_KEY = 0x6463_6D69_6772_6174  # "dcmigrat"
#: rows written by a process between two looks at the planner's statistics
_STATS_CHECK_ROWS = 2000
#: tables whose statistics the search plans depend on
_ANALYZED_TABLES = (
    "memories",
    "memory_fts",
    "memory_sources",
    "memory_entities",
    "memory_links",
    "turns",
    "entities",
    "relations",
)
#: query parameters of asyncpg URLs that libpq does not know
_ASYNCPG_ONLY = {"prepared_statement_cache_size", "statement_cache_size", "prepared_statement_name_func"}
_SSL_MODES = {"true": "require", "false": "disable", "1": "require", "0": "disable"}


def normalize_url(url: str | URL) -> str:
    """A SQLAlchemy URL for psycopg 3 from any PostgreSQL URL a user may give.

    ``postgres://``, ``postgresql://``, ``postgresql+psycopg2://`` and ``postgresql+asyncpg://`` all
    become ``postgresql+psycopg://``; asyncpg's ``ssl=`` becomes libpq's ``sslmode=`` and its
    statement-cache parameters are dropped. Anything else raises ConfigurationError.
    """
    try:
        u = make_url(url) if isinstance(url, str) else url
    except ArgumentError as exc:
        raise ConfigurationError(f"not a database URL: {url!r}") from exc
    if u.get_backend_name() not in ("postgresql", "postgres"):
        raise ConfigurationError(f"not a PostgreSQL URL: {u.render_as_string(hide_password=True)!r}")
    driver = u.get_driver_name() if "+" in u.drivername else ""
    if driver not in ("", "psycopg", "psycopg2", "asyncpg", "psycopg_async"):
        raise ConfigurationError(
            f"unsupported PostgreSQL driver {driver!r}: use postgresql://user@host/db (deepcontext uses psycopg 3)"
        )
    query: dict[str, Any] = {}
    for key, value in u.query.items():
        if key in _ASYNCPG_ONLY:
            continue
        if key == "ssl":
            value = value if isinstance(value, str) else value[-1]
            query["sslmode"] = _SSL_MODES.get(value.lower(), value)
            continue
        query[key] = value
    return u.set(drivername="postgresql+psycopg", query=query).render_as_string(hide_password=False)


def _utc_session(dbapi_connection: Any, _record: Any) -> None:
    # times load in the session's time zone: west of UTC the first supported time (0001-01-01Z)
    # would be one of year 0, which no datetime holds
    with dbapi_connection.cursor() as cur:
        cur.execute("SET TIME ZONE 'UTC'")
    dbapi_connection.commit()


class PostgresStore(SQLStore):
    """The PostgreSQL + pgvector store. ``dim`` is the configured embedder's vector size."""

    backend = "postgresql"
    memory_reads_cls = PostgresMemoryReads
    graph_reads_cls = PostgresGraphReads
    provenance_reads_cls = PostgresProvenanceReads

    def __init__(
        self,
        url: str,
        dim: int,
        *,
        pool_size: int = 5,
        max_overflow: int | None = None,
        pool_timeout: float = 30.0,
        connect_timeout: int = 10,
        ef_search: int = 100,
        tracer: Any = None,
        keyword_context_turns: int = KEYWORD_CONTEXT_TURNS,
        index_build_memory_mb: int = 1024,
    ) -> None:
        if dim <= 0:
            raise ConfigurationError(f"vector dimension must be positive, got {dim}")
        if pool_size < 1:
            raise ConfigurationError(f"pool_size must be >= 1, got {pool_size}")
        if not 1 <= ef_search <= MAX_EF_SEARCH:
            raise ConfigurationError(f"ef_search must be within 1..{MAX_EF_SEARCH}, got {ef_search}")
        try:
            import pgvector.sqlalchemy  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(
                "the PostgreSQL backend needs psycopg 3 and pgvector: pip install 'deepcontext[postgres]'"
            ) from exc
        super().__init__(normalize_url(url), dim, tracer=tracer, keyword_context_turns=keyword_context_turns)
        self.ef_search = ef_search
        #: maintenance_work_mem of an HNSW index build (see PostgresVectorBuild)
        self.index_build_memory_mb = index_build_memory_mb
        self.vector_mode = pg_vector_mode(dim)
        self._engine_args: dict[str, Any] = {
            "pool_size": pool_size,
            "max_overflow": pool_size if max_overflow is None else max_overflow,
            "pool_timeout": pool_timeout,
            "pool_pre_ping": True,
            "connect_args": {"connect_timeout": connect_timeout, "application_name": "deepcontext"},
        }
        self.engine = self._new_engine()
        #: the pool of side_reading (a search's vector leg), opened on first use
        self._side_engine: Engine | None = None
        self._side_lock = threading.Lock()
        self._pgvector_version: tuple[int, ...] | None = None
        self.keyword_index = PostgresKeywordIndex(self)
        self.vector_index = PostgresVectorIndex(self)
        self.vector_build = PostgresVectorBuild(self)
        #: rows this process has written since it last looked at the planner's statistics
        self._written_since_check = 0
        self._stats_lock = threading.Lock()
        self._stats_thread: threading.Thread | None = None

    def _new_engine(self) -> Engine:
        engine = create_engine(self.url, **self._engine_args)
        event.listen(engine, "connect", _utc_session)
        return self.trace(engine)

    def __repr__(self) -> str:
        return f"PostgresStore({make_url(self.url).render_as_string(hide_password=True)!r}, dim={self.dim})"

    # --- transactions and locking ---------------------------------------------------------------
    @contextmanager
    def _open_read(self) -> Iterator[Connection]:
        """Reads run in autocommit: under READ COMMITTED every statement has its own snapshot anyway,
        and no BEGIN / ROLLBACK round trips are spent."""
        with self._read_on(self.engine) as conn:
            yield conn

    @contextmanager
    def _read_on(self, engine: Engine) -> Iterator[Connection]:
        try:
            with engine.connect() as conn:
                yield conn.execution_options(isolation_level="AUTOCOMMIT")
        except DeepContextError:
            raise
        except SQLAlchemyError as exc:
            raise StorageError(f"database read failed: {exc.__class__.__name__}: {getattr(exc, 'orig', None) or exc}") from exc

    #: the server runs each connection's statements in a process of its own: a search's vector leg
    #: (embedding, then the HNSW scan) overlaps its keyword and graph legs
    concurrent_vector_leg = True

    @property
    def side_engine(self) -> Engine | None:
        """The pool of :meth:`side_reading`, None until a side read opened it."""
        return self._side_engine

    def _open_side_read(self) -> AbstractContextManager[Connection]:
        """A connection of the side pool (same size as the main one). A thread holds one only for
        reads that never wait on another connection, so searches holding a main-pool connection
        while waiting for a side one cannot deadlock, whatever the load."""
        if self._side_engine is None:
            with self._side_lock:
                if self._side_engine is None:
                    self._side_engine = self._new_engine()
        return self._read_on(self._side_engine)

    def upsert(self, table_: Any) -> Any:
        return pg_insert(table_)

    def migration_lock(self, conn: Connection) -> None:
        conn.execute(select(func.pg_advisory_xact_lock(_MIGRATION_LOCK_KEY)))

    def lock_user(self, conn: Connection, user_id: str) -> None:
        """Lock the user's row for the rest of the transaction: per-user writes serialise on it."""
        u = self.t.users
        conn.execute(select(u.c.user_id).where(u.c.user_id == user_id).with_for_update())

    def bump_user(self, conn: Connection, user_id: str, now: datetime, *, consolidation_due: bool = False) -> int:
        # one statement, so two processes adding the first rows of a new user cannot both insert it;
        # it locks the users row until commit, which serialises the rest of the user's write
        u = self.t.users
        stmt = pg_insert(u).values(
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
        return int(
            conn.execute(stmt.on_conflict_do_update(index_elements=[u.c.user_id], set_=set_).returning(u.c.version)).scalar_one()
        )

    # --- planner statistics ------------------------------------------------------------------------
    def apply_add(self, plan: AddPlan) -> AddOutcome:
        outcome = super().apply_add(plan)
        self.note_writes(len(outcome.turn_ids) + sum(outcome.inserted))
        return outcome

    def note_writes(self, rows: int) -> None:
        """Every :data:`_STATS_CHECK_ROWS` rows written by this process, compare the tables' sizes
        with the planner's statistics and ANALYZE them in the background when they have more than
        doubled since: plans chosen for a small table read far too many rows once it has grown
        (autovacuum does this too, when it is on; servers run without it)."""
        with self._stats_lock:
            self._written_since_check += rows
            if self._written_since_check < _STATS_CHECK_ROWS or (
                self._stats_thread is not None and self._stats_thread.is_alive()
            ):
                return
            self._written_since_check = 0
            self._stats_thread = threading.Thread(target=self.refresh_statistics, name="deepcontext-analyze", daemon=True)
            self._stats_thread.start()

    def refresh_statistics(self, *, force: bool = False) -> list[str]:
        """ANALYZE the tables whose planner statistics lag their size (more than twice the pages
        the last ANALYZE saw, and 8 pages or more), or all of them with ``force``; returns the tables analyzed. Errors are logged, not raised
        (it runs in the background after writes)."""
        try:
            with self._open_read() as conn:
                # sizes on disk against the page counts the last ANALYZE saw (the activity
                # statistics' live-row counts lag by a second or so; the file sizes do not)
                rows = conn.execute(
                    text(
                        "SELECT relname, relpages, pg_relation_size(oid) / current_setting('block_size')::int "
                        "FROM pg_class WHERE relname = ANY(:names) AND relkind = 'r' AND relnamespace = to_regnamespace(current_schema())::oid"
                    ),
                    {"names": list(_ANALYZED_TABLES)},
                ).all()
                stale = [
                    name for name, seen, pages in rows if force or (int(pages) >= 8 and int(pages) > 2 * max(int(seen or 0), 0))
                ]
                if stale:
                    conn.exec_driver_sql("ANALYZE " + ", ".join(stale))
                    log.info("planner statistics refreshed: %s", ", ".join(stale))
                return stale
        except (DeepContextError, SQLAlchemyError) as exc:
            log.warning("could not refresh the planner statistics: %s", exc)
            return []

    def size_bytes(self) -> int | None:
        try:
            with self.connection() as conn:
                return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())
        except SQLAlchemyError:
            return None

    def close(self) -> None:
        self.vector_build.join(timeout=1)  # an index build left running ends with its connection
        thread = self._stats_thread
        if thread is not None:
            thread.join(timeout=30)  # an ANALYZE under way finishes before the pool goes
        with self._side_lock:
            side, self._side_engine = self._side_engine, None
        if side is not None:
            side.dispose()
        super().close()

    # --- schema ----------------------------------------------------------------------------------
    def migrate(self) -> int:
        self._check_pgvector()
        version = super().migrate()
        self.vector_build.repair_in_background()  # a bulk import killed before it built the index
        return version

    @contextmanager
    def deferred_vector_index(self) -> Iterator[None]:
        with self.vector_build.deferred():
            yield
        self.refresh_statistics()  # after a bulk load, before its first searches are planned

    def _check_pgvector(self) -> None:
        """A clear error when the server lacks the vector extension (before any DDL runs)."""
        try:
            with self.connection() as conn:
                available = conn.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
        except StorageError as exc:
            raise MigrationError(f"cannot reach PostgreSQL: {exc}") from exc
        if available is None:
            raise MigrationError(
                "the PostgreSQL server has no pgvector extension ('vector'). Install it on the server "
                "(packages postgresql-<major>-pgvector, or scripts/install-pgvector.sh on Debian bookworm), "
                "or ask your provider to enable it; then run the migration again"
            )

    def ensure_embedder(self, model_id: str, dimensions: int) -> None:
        try:
            super().ensure_embedder(model_id, dimensions)
        except StorageError as exc:
            # two processes recording the embedder of a fresh database at once: the loser re-reads
            if not isinstance(exc.__cause__, IntegrityError):
                raise
            super().ensure_embedder(model_id, dimensions)

    def pgvector_version(self) -> tuple[int, ...]:
        """The installed pgvector version of this database, e.g. (0, 8, 0)."""
        if self._pgvector_version is None:
            with self.connection() as conn:
                v = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
            if v is None:
                raise ConfigurationError("the vector extension is not installed in this database: run migrate()")
            self._pgvector_version = tuple(int(p) for p in str(v).split(".") if p.isdigit())
        return self._pgvector_version

    # --- keyword leg -------------------------------------------------------------------------------

    @functools.cached_property
    def _details_stmt(self) -> Any:
        """result_details' statement, built once (constructing and keying its four LATERAL
        subqueries cost more than running them); parameters uid, ids, nsrc, nlinks."""
        uid: Any = bindparam("uid")
        mt, me, et, ms, tt, ml = (
            self.t.memories, self.t.memory_entities, self.t.entities, self.t.memory_sources, self.t.turns, self.t.memory_links,
        )  # fmt: skip
        ents = (
            select(func.array_agg(aggregate_order_by(et.c.name, et.c.name)).label("names"))
            .select_from(me.join(et, et.c.id == me.c.entity_id))
            .where(me.c.memory_id == mt.c.id, me.c.user_id == uid)
            .lateral("ents")
        )
        first = (
            select(ms.c.turn_id)
            .where(ms.c.memory_id == mt.c.id, ms.c.user_id == uid)
            .order_by(ms.c.turn_id)
            .limit(bindparam("nsrc", type_=Integer))
            .correlate(mt)
            .lateral("first")
        )

        def agg(col: Any, name: str) -> Any:
            return func.array_agg(aggregate_order_by(col, tt.c.id)).label(name)

        srcs = (
            select(
                agg(tt.c.id, "turn_ids"),
                agg(tt.c.conversation_id, "conversations"),
                agg(tt.c.role, "roles"),
                agg(tt.c.name, "speakers"),
                agg(tt.c.said_at, "said"),
            )  # fmt: skip
            .select_from(first.join(tt, tt.c.id == first.c.turn_id))
            .lateral("srcs")
        )
        other = mt.alias("other")
        best = (
            select(ml.c.other_id, ml.c.similarity)
            .join(other, other.c.id == ml.c.other_id)
            .where(ml.c.memory_id == mt.c.id, ml.c.user_id == uid, other.c.status == MemoryStatus.ACTIVE.value)
            .order_by(ml.c.similarity.desc(), ml.c.other_id)
            .limit(bindparam("nlinks", type_=Integer))
            .correlate(mt)
            .lateral("best")
        )
        lk = select(
            func.array_agg(aggregate_order_by(best.c.other_id, best.c.similarity.desc(), best.c.other_id)).label("others")
        ).lateral("lk")
        stmt = (
            select(
                *self.memories.memory_columns(),
                ents.c.names,
                srcs.c.turn_ids,
                srcs.c.conversations,
                srcs.c.roles,
                srcs.c.speakers,
                srcs.c.said,
                lk.c.others,
            )  # fmt: skip
            .select_from(mt.outerjoin(ents, true()).outerjoin(srcs, true()).outerjoin(lk, true()))
            .where(self.owner_clause(mt.c.user_id) == uid, mt.c.id == func.any(bindparam("ids", type_=ARRAY(BigInteger))))
        )
        return stmt

    def result_details(
        self, user_id: str, memory_ids: Sequence[int], *, max_sources: int, links_per_memory: int
    ) -> tuple[dict[int, Memory], dict[int, list[int]]]:
        """The results of a search in one round trip: each memory with its entities, its oldest
        sources and its most similar active links aggregated by LATERAL subqueries."""
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if not ids:
            return {}, {}
        stmt = self._details_stmt
        params = {"uid": user_id, "ids": ids, "nsrc": max(int(max_sources), 0), "nlinks": max(int(links_per_memory), 0)}
        mems: dict[int, Memory] = {}
        links: dict[int, list[int]] = {}
        with self.connection() as conn:
            for r in conn.execute(stmt, params):
                mem = self.memories.memory_from_row(r)
                mem.entities = list(r.names or [])
                mem.sources = [
                    Provenance.model_construct(turn_id=int(t), conversation_id=c, role=role, speaker=sp, said_at=as_utc(at))
                    for t, c, role, sp, at in zip(
                        r.turn_ids or [], r.conversations or [], r.roles or [], r.speakers or [], r.said or [], strict=True
                    )
                ]
                mems[mem.id] = mem
                if links_per_memory > 0 and r.others:
                    links[mem.id] = [int(o) for o in r.others]
        return mems, links

    def default_conditions(self) -> list[Any]:
        """``filter_clause(DEFAULT_FILTERS, now)`` with ``now`` a bound parameter, for statements built once."""
        mt = self.t.memories
        return [mt.c.status == MemoryStatus.ACTIVE.value, or_(mt.c.expires_at.is_(None), mt.c.expires_at > bindparam("now"))]

    # --- vector leg ----------------------------------------------------------------------------------

    def owner_clause(self, col: Any) -> Any:
        # `user_id || ''`: the same value, no index on it (see SQLStore.owner_clause)
        return col.op("||")(literal(""))

    def forget_user_caches(self, user_id: str) -> None:
        """No in-process caches on PostgreSQL."""
