"""PostgreSQL + pgvector: the backend for many processes over one database.

Everything shared with SQLite lives in :class:`~deepcontext.store.sql.SQLStore`; this module adds:

- the engine: psycopg 3 (``postgresql+psycopg``; ``postgresql://``, ``postgres://`` and the seed's
  ``postgresql+asyncpg://`` URLs are accepted and normalised), a QueuePool of ``pool_size``
  connections with ``pool_pre_ping``;
- the vector leg: pgvector cosine distance (``<=>``) over an HNSW index (m=16, ef_construction=64),
  ``hnsw.ef_search`` = max(ef_search, k) per query (a session setting of the pooled connection, sent
  only when it changes), pgvector 0.8's iterative index scans so the user / status / filter
  conditions of the same query still get ``k`` rows, and an exact scan as the fallback when the
  index scan stops short;
- the keyword leg: ``memory_fts`` (memory id, user id, tsvector) kept by the store in the same
  transaction as the memory, a GIN index, an OR of the stemmed query terms, ranked BM25-style
  (idf per user x saturated term frequency; ``ts_rank_cd`` has no idf, and memories that all say
  "User ..." need it);
- concurrency: per-user writes serialise on the ``users`` row (the first statement of every write
  locks it), migrations on a transaction-level advisory lock, lifecycle work on per-user session-level
  advisory locks (:mod:`deepcontext.store.locks`).

Transactions stay short: a store call is one transaction and no store call waits on an embedder or
an LLM.
"""

from __future__ import annotations

import functools
import logging
import math
import secrets
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    BigInteger,
    Integer,
    Connection,
    Engine,
    Float,
    bindparam,
    case,
    cast,
    column,
    create_engine,
    delete,
    event,
    func,
    literal,
    or_,
    select,
    table,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, TSQUERY, aggregate_order_by
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError

from deepcontext.errors import ConfigurationError, DeepContextError, MigrationError, StorageError, ValidationError
from deepcontext.store.base import (
    COMMON_TERM_SHARE,
    DEFAULT_FILTERS,
    DF_TTL_S,
    RANK_CAP,
    AddOutcome,
    AddPlan,
    MemoryFilters,
    entity_limits,
)
from deepcontext.store.keyword_policy import dominant_terms, fetch_sizes, informative_terms
from deepcontext.store.locks import UserLockMixin
from deepcontext.store.migrations import PG_TS_CONFIG, pg_vector_mode
from deepcontext.store.schema import VectorType
from deepcontext.store.postgres_reads import PostgresGraphReads, PostgresMemoryReads, PostgresProvenanceReads
from deepcontext.store.sql import SQLStore
from deepcontext.store.sqlparts import chunks
from deepcontext.store.ttlcache import TTLCache
from deepcontext.text import search_text
from deepcontext.clock import as_utc
from deepcontext.types import Memory, MemoryStatus, Provenance

__all__ = ["PostgresStore", "fold_diacritics", "normalize_url"]

log = logging.getLogger("deepcontext.store")

#: the keyword index (created by migration 1)
_FTS = table("memory_fts", column("memory_id"), column("user_id"), column("tsv"))
#: key of the transaction-level advisory lock that serialises migrations
_MIGRATION_LOCK_KEY = 0x6463_6D69_6772_6174  # "dcmigrat"
#: keyword ranking: document frequencies are counted up to this many rows, or up to the share of the
#: user's rows that makes a lexeme too common to rank by (as on SQLite), whichever is more
_DF_CAP = 1000
#: memories indexed per statement by PostgresStore._index_texts
_INDEX_CHUNK = 2000
#: rows written by a process between two looks at the planner's statistics
_STATS_CHECK_ROWS = 2000
#: tables whose statistics the search plans depend on
_ANALYZED_TABLES = ("memories", "memory_fts", "memory_sources", "memory_entities", "memory_links", "turns", "entities", "relations")
#: pgvector caps hnsw.ef_search at 1000
_MAX_EF_SEARCH = 1000
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


@functools.cache
def _latin_fold_table() -> dict[int, str]:
    table_: dict[int, str] = {}
    for cp in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        ch = chr(cp)
        base = "".join(c for c in unicodedata.normalize("NFD", ch) if not unicodedata.combining(c))
        if base and base != ch:
            table_[cp] = base
    return table_


def fold_diacritics(s: str) -> str:
    """Drop diacritics from Latin letters ("café" -> "cafe"), like SQLite's ``remove_diacritics 2``;
    other scripts (kana voicing marks, Hangul...) are left alone."""
    return s.translate(_latin_fold_table())


def _ts_body(text_: str) -> str:
    """What the keyword index holds for a memory: search_text (CJK split into characters and bigrams),
    Latin diacritics folded; to_tsvector(PG_TS_CONFIG) then stems it."""
    return fold_diacritics(search_text(text_))


@functools.lru_cache(maxsize=64)
def _rank_sql(n: int) -> str:
    """PostgresStore.keyword_search's ranking for ``n`` lexemes under the default filters (psycopg
    parameters: u, tsq, rank_cap, fetch, now, k, and l<i> / w<i>, each lexeme's tsquery and idf)."""
    score = " + ".join(f"CASE WHEN cand.tsv @@ %(l{i})s::tsquery THEN %(w{i})s::float8 ELSE 0.0::float8 END" for i in range(n))
    return (
        f"SELECT m.id, best.score FROM (SELECT cand.memory_id, ({score}) AS score FROM ("
        "SELECT memory_id, tsv FROM memory_fts WHERE user_id = %(u)s AND tsv @@ %(tsq)s::tsquery "
        "ORDER BY memory_id + 0 DESC LIMIT %(rank_cap)s) AS cand "
        "ORDER BY score DESC, cand.memory_id DESC LIMIT %(fetch)s) AS best "
        "JOIN memories AS m ON m.id = best.memory_id "
        "WHERE (m.user_id || '') = %(u)s AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > %(now)s) "
        "ORDER BY best.score DESC, m.id DESC LIMIT %(k)s"
    )


def _quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken verbatim (no parsing, no stemming)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresStore(UserLockMixin, SQLStore):
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
    ) -> None:
        if dim <= 0:
            raise ConfigurationError(f"vector dimension must be positive, got {dim}")
        if pool_size < 1:
            raise ConfigurationError(f"pool_size must be >= 1, got {pool_size}")
        if not 1 <= ef_search <= _MAX_EF_SEARCH:
            raise ConfigurationError(f"ef_search must be within 1..{_MAX_EF_SEARCH}, got {ef_search}")
        try:
            import pgvector.sqlalchemy  # noqa: F401
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(
                "the PostgreSQL backend needs psycopg 3 and pgvector: pip install 'deepcontext[postgres]'"
            ) from exc
        super().__init__(normalize_url(url), dim, tracer=tracer)
        self.ef_search = ef_search
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
        #: the keyword leg's lexemes per query text (the same for every user), reused for DF_TTL_S seconds
        self._lexemes: TTLCache[list[str]] = TTLCache(DF_TTL_S)
        #: rows this process has written since it last looked at the planner's statistics
        self._written_since_check = 0
        self._stats_lock = threading.Lock()
        self._stats_thread: threading.Thread | None = None

    def _new_engine(self) -> Engine:
        return self.trace(create_engine(self.url, **self._engine_args))

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
        return int(conn.execute(stmt.on_conflict_do_update(index_elements=[u.c.user_id], set_=set_).returning(u.c.version)).scalar_one())

    # --- planner statistics ------------------------------------------------------------------------
    def apply_add(self, plan: AddPlan) -> AddOutcome:
        outcome = super().apply_add(plan)
        self._note_writes(len(outcome.turn_ids) + sum(outcome.inserted))
        return outcome

    def _note_writes(self, rows: int) -> None:
        """Every :data:`_STATS_CHECK_ROWS` rows written by this process, compare the tables' sizes
        with the planner's statistics and ANALYZE them in the background when they have more than
        doubled since: plans chosen for a table of 100 rows read 11k rows per candidate at 10k
        (autovacuum does this too, when it is on, within a minute or so; servers run without it)."""
        with self._stats_lock:
            self._written_since_check += rows
            if self._written_since_check < _STATS_CHECK_ROWS or (self._stats_thread is not None and self._stats_thread.is_alive()):
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
                stale = [name for name, seen, pages in rows if force or (int(pages) >= 8 and int(pages) > 2 * max(int(seen or 0), 0))]
                if stale:
                    conn.exec_driver_sql("ANALYZE " + ", ".join(stale))
                    log.info("planner statistics refreshed: %s", ", ".join(stale))
                return stale
        except (DeepContextError, SQLAlchemyError) as exc:
            log.warning("could not refresh the planner statistics: %s", exc)
            return []

    def close(self) -> None:
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
        return super().migrate()

    def _check_pgvector(self) -> None:
        """A clear error when the server lacks the vector extension (before any DDL runs)."""
        try:
            with self.connection() as conn:
                available = conn.execute(
                    text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
                ).first()
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
    def index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Index memories' texts, :data:`_INDEX_CHUNK` rows per statement (the ids and bodies as two
        arrays). One statement per chunk, not one per row: the lexeme-count triggers on memory_fts
        fire once per statement, and one transaction upserting the same counters (the user's row
        count, common words) once per row made every later update walk a longer chain of row
        versions (an import of 114k memories was stuck there for over 18 minutes)."""
        latest = {int(mid): _ts_body(t) for mid, t in rows}  # a memory indexed twice: its last text
        items = sorted(latest.items())  # in key order: concurrent writers lock rows in the same order
        for chunk in chunks(items, _INDEX_CHUNK):
            conn.execute(
                text(
                    "INSERT INTO memory_fts (memory_id, user_id, tsv) "
                    f"SELECT m.id, m.user_id, to_tsvector('{PG_TS_CONFIG}'::regconfig, b.body) "
                    "FROM unnest(CAST(:ids AS bigint[]), CAST(:bodies AS text[])) AS b(id, body) JOIN memories AS m ON m.id = b.id "
                    "ON CONFLICT (memory_id) DO UPDATE SET tsv = EXCLUDED.tsv"
                ),
                {"ids": [mid for mid, _ in chunk], "bodies": [body for _, body in chunk]},
            )

    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        for chunk in chunks([int(i) for i in memory_ids]):
            conn.execute(delete(_FTS).where(_FTS.c.memory_id.in_(list(chunk))))

    def keyword_search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """Memories holding any of the terms, ranked by the summed idf of the lexemes they hold
        (BM25 with binary term frequency and no length normalisation: memories are short).

        ``terms`` are the engine's lower-case tokens; they are stemmed by the same text search
        configuration as the index. Document frequencies per user are exact and current: the table
        ``memory_lexemes`` holds them, kept by triggers on ``memory_fts`` (one primary-key read per
        search, where counting through the GIN index took ~6 ms per lexeme). As on SQLite, a
        lexeme in more than :data:`COMMON_TERM_SHARE` of them (and at least ``_DF_CAP``) is left
        out when a rarer one is asked for; when all are that common, the rarest is kept unless it
        is in more than :data:`MAX_TERM_SHARE`. Only the :data:`RANK_CAP` most recent matches are ranked (scoring
        every one of 20k matches took 280 ms at 100k memories), except where the rarest lexemes
        outweigh all the others together and have at most that many matches: then only their
        matches can make the top ``k``, and every one of them is ranked (see
        :func:`~deepcontext.store.keyword_policy.dominant_terms`). One common lexeme left: every match
        scores the same, so the most recent matches are the answer, read by walking the keyword
        table's primary key backwards (0.2 ms instead of 13 ms for a lexeme in 17k of 114k rows).
        """
        terms = [t for t in dict.fromkeys(terms) if t and t.strip()]
        if not terms or k <= 0:
            return []
        body = " ".join(fold_diacritics(t) for t in terms[:64])
        with self.connection() as conn:
            lexes = self._lexemes.get(body)
            if lexes is None:
                lexes = [
                    str(r[0])
                    for r in conn.execute(
                        text(f"SELECT unnest(tsvector_to_array(to_tsvector('{PG_TS_CONFIG}'::regconfig, :body)))"),
                        {"body": body},
                    )
                ]
                self._lexemes.put(body, lexes)
            # exact document frequencies, kept by memory_fts's triggers (migration 3): the lexemes'
            # rows and, under '', the number of the user's indexed memories
            dfs = {
                str(lx): int(df)
                for lx, df in conn.execute(
                    text("SELECT lexeme, df FROM memory_lexemes WHERE user_id = :u AND lexeme = ANY(CAST(:lexes AS text[]))"),
                    {"u": user_id, "lexes": [*lexes, ""]},
                )
            }
            n_user = dfs.pop("", 0)
            # the idf's document count, and the least frequency of a common lexeme
            cap = max(_DF_CAP, int(COMMON_TERM_SHARE * n_user))
            present = [(lx, dfs[lx]) for lx in lexes if dfs.get(lx, 0) > 0]
            if not present:
                return []
            lexemes, common_only = informative_terms(present, n_user, floor=_DF_CAP)
            if not lexemes:
                return []
            if common_only and filters == DEFAULT_FILTERS:
                return self._most_recent_matches(conn, user_id, lexemes[0], cap, k, now)
            weighted = [(lx, math.log(1.0 + cap / (df + 0.5))) for lx, df in lexemes]

            def rank(match: list[str], n: int) -> list[tuple[int, float]]:
                # the memories holding one of `match` number at most their summed frequencies
                return self._ranked(conn, user_id, weighted, match, sum(dfs[lx] for lx in match), n, filters, now)

            every = [lx for lx, _ in lexemes]
            dominant = dominant_terms(lexemes, [w for _, w in weighted])
            if dominant is None:
                return rank(every, k)
            # the rarest lexemes outweigh all the others together: every memory holding one of them
            # ranks above every other, so those are ranked first, all of them; the others only when
            # fewer than k of them pass the filters
            top = rank(dominant, k)
            if len(top) >= k:
                return top
            seen = {mid for mid, _ in top}
            rest = [row for row in rank(every, k + len(top)) if row[0] not in seen]
            return top + rest[: k - len(top)]

    def _ranked(
        self,
        conn: Connection,
        user_id: str,
        weighted: list[tuple[str, float]],
        match: list[str],
        matches: int,
        k: int,
        filters: MemoryFilters,
        now: datetime,
    ) -> list[tuple[int, float]]:
        """The best ``k`` of the :data:`RANK_CAP` most recent memories holding any lexeme of ``match``,
        by the summed weights of the ``weighted`` lexemes they hold (ties: the newer first).

        ``matches`` bounds how many memories hold one of ``match`` (their summed document
        frequencies): rounds stop when there is nothing more to read (:func:`~deepcontext.store.keyword_policy.fetch_sizes`; a user
        with fewer than k matches paid three statements per search)."""
        mt = self.t.memories
        if filters == DEFAULT_FILTERS:
            return self._rank_lexemes(conn, user_id, weighted, match, matches, k, now)
        # the query inline, not a parameter: psycopg prepares a statement run five times, and
        # PostgreSQL's generic plan for `tsv @@ $1` cannot know how common the lexemes are
        # (a walk that takes 0.1 ms for a common lexeme took 65 ms under the generic plan)
        tsq = cast(bindparam("tsq", " | ".join(_quote_lexeme(lx) for lx in match), literal_execute=True), TSQUERY)
        cand = (
            select(_FTS.c.memory_id, _FTS.c.tsv)
            .where(_FTS.c.user_id == user_id, _FTS.c.tsv.op("@@")(tsq))
            # "+ 0": ordered by the primary key, the planner walks it backwards filtering every
            # row for a rare lexeme (94 ms for 16 matches); this way the GIN index finds the
            # matches and only those are sorted
            .order_by((_FTS.c.memory_id + 0).desc())
            .limit(RANK_CAP)
            .subquery("cand")
        )
        score = sum(
            (
                case((cand.c.tsv.op("@@")(cast(literal(_quote_lexeme(lx)), TSQUERY)), w), else_=0.0)
                for lx, w in weighted
            ),
            start=literal(0.0),
        ).label("score")
        # scored on the side table alone; only the best `fetch` meet the memories table for the
        # filters (2,000 primary-key lookups cost 10 ms), more if the filters dropped too many
        rows: list[Any] = []
        for fetch in fetch_sizes(k, matches):
            best = (
                select(cand.c.memory_id, score)
                .order_by(score.desc(), cand.c.memory_id.desc())
                .limit(fetch)
                .subquery("best")
            )
            stmt = (
                select(mt.c.id, best.c.score)
                .select_from(best.join(mt, mt.c.id == best.c.memory_id))
                .where(self._owner(mt.c.user_id) == user_id, *self.filter_clause(filters, now))
                .order_by(best.c.score.desc(), mt.c.id.desc())
                .limit(k)
            )
            rows = list(conn.execute(stmt).all())
            if len(rows) >= k:
                break
        return [(int(mid), float(sc or 0.0)) for mid, sc in rows]

    def _rank_lexemes(
        self, conn: Connection, user_id: str, weighted: list[tuple[str, float]], match: list[str], matches: int, k: int, now: datetime
    ) -> list[tuple[int, float]]:
        """:meth:`_ranked` under the default filters, as one statement text per lexeme count sent
        straight to the driver with ``prepare=False`` (never a prepared statement, so PostgreSQL plans
        every run with the actual tsquery; building the SQLAlchemy form cost ~2.5 ms a search)."""
        n = len(weighted)
        params: dict[str, Any] = {"u": user_id, "now": now, "k": k, "rank_cap": RANK_CAP}
        params["tsq"] = " | ".join(_quote_lexeme(lx) for lx in match)
        for i, (lx, w) in enumerate(weighted):
            params[f"l{i}"] = _quote_lexeme(lx)
            params[f"w{i}"] = w
        rows: list[Any] = []
        for fetch in fetch_sizes(k, matches):
            params["fetch"] = fetch
            rows = self.raw(conn, _rank_sql(n), params, prepare=False).fetchall()
            if len(rows) >= k:
                break
        return [(int(mid), float(sc or 0.0)) for mid, sc in rows]

    def _most_recent_matches(
        self, conn: Connection, user_id: str, lexeme: tuple[str, int], cap: int, k: int, now: datetime
    ) -> list[tuple[int, float]]:
        """The ``k`` most recent active, unexpired memories holding one common lexeme (in at least
        ``cap`` of the user's rows): dense enough that walking the primary key backwards meets them
        within a few thousand rows, where the GIN index would collect every match first."""
        lx, df = lexeme
        mt = self.t.memories
        stmt = (
            select(mt.c.id)
            .select_from(_FTS.join(mt, mt.c.id == _FTS.c.memory_id))
            .where(
                _FTS.c.user_id == user_id,
                _FTS.c.tsv.op("@@")(cast(bindparam("tsq", _quote_lexeme(lx), literal_execute=True), TSQUERY)),
                self._owner(mt.c.user_id) == user_id,
                *self.filter_clause(DEFAULT_FILTERS, now),
            )
            .order_by(_FTS.c.memory_id.desc())
            .limit(k)
        )
        score = math.log(1.0 + cap / (df + 0.5))
        return [(int(r[0]), score) for r in conn.execute(stmt)]


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
                agg(tt.c.id, "turn_ids"), agg(tt.c.conversation_id, "conversations"), agg(tt.c.role, "roles"),
                agg(tt.c.name, "speakers"), agg(tt.c.said_at, "said"),
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
        lk = (
            select(func.array_agg(aggregate_order_by(best.c.other_id, best.c.similarity.desc(), best.c.other_id)).label("others"))
            .lateral("lk")
        )
        stmt = (
            select(*self.memories.memory_columns(), ents.c.names, srcs.c.turn_ids, srcs.c.conversations, srcs.c.roles,
                   srcs.c.speakers, srcs.c.said, lk.c.others)  # fmt: skip
            .select_from(mt.outerjoin(ents, true()).outerjoin(srcs, true()).outerjoin(lk, true()))
            .where(self._owner(mt.c.user_id) == uid, mt.c.id == func.any(bindparam("ids", type_=ARRAY(BigInteger))))
        )
        return stmt

    def result_details(
        self, user_id: str, memory_ids: Sequence[int], *, max_sources: int, links_per_memory: int
    ) -> tuple[dict[int, Memory], dict[int, list[int]]]:
        """The results of a search in one round trip: each memory with its entities, its oldest
        sources and its most similar active links aggregated by LATERAL subqueries (four statements
        cost ~6 ms of a 30 ms search at 100k memories)."""
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
                    Provenance.model_construct(
                        turn_id=int(t), conversation_id=c, role=role, speaker=sp, said_at=as_utc(at)
                    )
                    for t, c, role, sp, at in zip(r.turn_ids or [], r.conversations or [], r.roles or [], r.speakers or [], r.said or [], strict=True)
                ]
                mems[mem.id] = mem
                if links_per_memory > 0 and r.others:
                    links[mem.id] = [int(o) for o in r.others]
        return mems, links




    def default_conditions(self) -> list[Any]:
        """``_filter_clause(DEFAULT_FILTERS, now)`` with ``now`` a bound parameter, for statements built once."""
        mt = self.t.memories
        return [mt.c.status == MemoryStatus.ACTIVE.value, or_(mt.c.expires_at.is_(None), mt.c.expires_at > bindparam("now"))]



    # --- vector leg ----------------------------------------------------------------------------------
    def _distance(self) -> Any:
        """Cosine distance to the ``qvec`` parameter, written exactly like the HNSW index expression."""
        mt = self.t.memories
        param = bindparam("qvec", type_=VectorType(self.dim))
        if self.vector_mode == "halfvec":
            from pgvector.sqlalchemy import HALFVEC

            return cast(mt.c.embedding, HALFVEC(self.dim)).op("<=>", return_type=Float())(cast(param, HALFVEC(self.dim)))
        return mt.c.embedding.op("<=>", return_type=Float())(param)

    def _vector_select(self, conditions: list[Any], *, exact: bool) -> Any:
        """The nearest ``k`` memories of ``uid`` to ``qvec`` under ``conditions``."""
        mt = self.t.memories
        dist = self._distance()
        # exact: order by an expression the HNSW index cannot serve, so the planner scans the user's
        # rows (through the user_id index) and sorts them: a complete answer
        order = (dist + 0.0) if exact else dist
        return (
            select(mt.c.id, dist.label("distance"))
            .where(mt.c.user_id == bindparam("uid"), mt.c.embedding.is_not(None), *conditions)
            .order_by(order)
            .limit(bindparam("k"))
        )

    @functools.cached_property
    def _vector_stmts(self) -> dict[bool, Any]:
        """The vector leg's statements under the default filters (index scan, exact scan), built once:
        building and keying one cost about as much as the HNSW scan. Parameters uid, qvec, k, now."""
        default = self.default_conditions()
        return {exact: self._vector_select(default, exact=exact) for exact in (False, True)}

    def _vector_stmt(self, filters: MemoryFilters, now: datetime, *, exact: bool) -> Any:
        if filters == DEFAULT_FILTERS:
            return self._vector_stmts[exact]
        return self._vector_select(self.filter_clause(filters, now), exact=exact)

    def _hnsw_session(self, conn: Connection, ef_search: int) -> None:
        """The HNSW settings of this pooled connection's session, sent only when they change (reads run in
        autocommit, so a session-level SET costs one round trip per connection and change, where SET
        LOCAL would cost a transaction and a round trip per query)."""
        iterative = self.pgvector_version() >= (0, 8)
        info = conn.connection.info
        if info.get("dc_hnsw") == (ef_search, iterative):
            return
        conn.exec_driver_sql(f"SET hnsw.ef_search = {int(ef_search)}")
        if iterative:
            conn.exec_driver_sql("SET hnsw.iterative_scan = relaxed_order")
        info["dc_hnsw"] = (ef_search, iterative)

    def vector_search(
        self, user_id: str, query: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        return self.vector_search_batch(user_id, np.asarray(query).reshape(1, -1), k, filters, now)[0]

    def vector_search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        """Nearest active memories by cosine, ``(id, cosine similarity)`` best first, per query row.

        One connection for all queries. The HNSW index answers first (``hnsw.ef_search`` = max(configured,
        k); with pgvector >= 0.8 an iterative scan in relaxed order keeps walking the graph until k rows
        pass the user and filter conditions, all in the same query); if it returns fewer than ``k``
        rows, an exact scan of the user's rows gives the complete answer.
        """
        if not filters.only_active:
            raise ConfigurationError("vector search covers active memories only")
        qs = np.asarray(queries, dtype=np.float32)
        if qs.ndim != 2 or qs.shape[1] != self.dim:
            raise ValidationError(f"query vectors must have {self.dim} dimensions, got shape {qs.shape}", field="query")
        if k <= 0 or len(qs) == 0:
            return [[] for _ in range(len(qs))]
        out: list[list[tuple[int, float]]] = []
        with self.connection() as conn:
            exact = self.vector_mode == "none"
            if not exact:
                self._hnsw_session(conn, min(max(self.ef_search, k), _MAX_EF_SEARCH))
            for q in qs:
                params = {"uid": user_id, "qvec": q, "k": k, "now": now}
                rows = conn.execute(self._vector_stmt(filters, now, exact=exact), params).all()
                if len(rows) < k and not exact:
                    # the index scan stopped short (or the user has fewer than k matching rows): exact
                    # scans from here on (the other queries share the user and the filters)
                    exact = True
                    rows = conn.execute(self._vector_stmt(filters, now, exact=True), params).all()
                # relaxed order: the index may return rows slightly out of order
                ranked = sorted(((int(mid), float(d)) for mid, d in rows if d is not None), key=lambda r: (r[1], r[0]))
                out.append([(mid, 1.0 - d) for mid, d in ranked])
        return out



    def _owner(self, col: Any) -> Any:
        # `user_id || ''`: the same value, no index on it (see SQLStore._owner)
        return col.op("||")(literal(""))

    def forget_user_caches(self, user_id: str) -> None:
        """No in-process caches on PostgreSQL."""
