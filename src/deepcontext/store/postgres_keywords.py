"""PostgreSQL's keyword index: ``memory_fts`` kept in the memory's own transaction, exact document
frequencies per user in ``memory_lexemes`` (kept by triggers), BM25-style ranking."""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, and_, bindparam, case, cast, column, delete, func, literal, select, table, text
from sqlalchemy.dialects.postgresql import TSQUERY

from deepcontext.store.indexes import KeywordIndex
from deepcontext.store.interface import DEFAULT_FILTERS, MemoryFilters
from deepcontext.store.keyword_policy import (
    COMMON_TERM_SHARE,
    DF_TTL_S,
    RANK_CAP,
    dominant_terms,
    fetch_sizes,
    informative_terms,
    walk_fell_short,
    walk_rows,
)
from deepcontext.store.migrations import PG_TS_CONFIG
from deepcontext.store.repository import Lookups, Raw
from deepcontext.store.sqlparts import chunks
from deepcontext.store.ttlcache import TTLCache
from deepcontext.text import search_text

__all__ = ["DF_CAP", "INDEX_CHUNK", "PostgresKeywordIndex", "fold_diacritics"]

#: the keyword index (created by migration 1)
_FTS = table("memory_fts", column("memory_id"), column("user_id"), column("tsv"))

#: keyword ranking: document frequencies are counted up to this many rows, or up to the share of the
#: user's rows that makes a lexeme too common to rank by (as on SQLite), whichever is more
DF_CAP = 1000

#: memories indexed per statement by PostgresStore._index_texts
INDEX_CHUNK = 2000


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


#: the newest matches, found two ways: walking the user's newest ``walk`` memories (the (user_id,
#: memory_id) index backwards) testing each; or, "+ 0" hiding the primary key's order from the
#: planner, collecting every match through the GIN index and keeping the newest
_NEWEST = {
    True: "SELECT memory_id, tsv FROM (SELECT memory_id, tsv FROM memory_fts WHERE user_id = %(u)s "
    "ORDER BY memory_id DESC LIMIT %(walk)s) AS walked WHERE tsv @@ %(tsq)s::tsquery "
    "ORDER BY memory_id DESC LIMIT %(rank_cap)s",
    False: "SELECT memory_id, tsv FROM memory_fts WHERE user_id = %(u)s AND tsv @@ %(tsq)s::tsquery "
    "ORDER BY memory_id + 0 DESC LIMIT %(rank_cap)s",
}


@functools.lru_cache(maxsize=64)
def _rank_sql(n: int, walk: bool) -> str:
    """PostgresStore.keyword_search's ranking for ``n`` lexemes under the default filters (psycopg
    parameters: u, tsq, rank_cap, fetch, now, k, walk, and l<i> / w<i>, each lexeme's tsquery and
    idf); with ``walk`` each row also carries ``found``, how many newest matches the walk ranked
    (see :data:`_NEWEST`)."""
    score = " + ".join(f"CASE WHEN cand.tsv @@ %(l{i})s::tsquery THEN %(w{i})s::float8 ELSE 0.0::float8 END" for i in range(n))
    best = f"SELECT cand.memory_id, ({score}) AS score FROM {{cand}} ORDER BY score DESC, cand.memory_id DESC LIMIT %(fetch)s"
    if walk:  # the walk's matches are counted too: fewer than rank_cap, it stopped short
        query = f"WITH cand AS MATERIALIZED ({_NEWEST[True]}) SELECT m.id, best.score, (SELECT count(*) FROM cand) AS found "
        query += f"FROM ({best.format(cand='cand')}) AS best "
    else:
        query = f"SELECT m.id, best.score FROM ({best.format(cand=f'({_NEWEST[False]}) AS cand')}) AS best "
    return query + (
        "JOIN memories AS m ON m.id = best.memory_id "
        "WHERE (m.user_id || '') = %(u)s AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > %(now)s) "
        "ORDER BY best.score DESC, m.id DESC LIMIT %(k)s"
    )


def _quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsquery operand, taken verbatim (no parsing, no stemming)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class _Context(Lookups, Raw, Protocol):
    """What the keyword index uses of its store."""


class PostgresKeywordIndex(KeywordIndex):
    """``memory_fts`` (memory id, user id, tsvector) with a GIN index, ranked BM25-style: the summed
    idf of the query's lexemes a memory holds (``ts_rank_cd`` has no idf)."""

    def __init__(self, store: _Context) -> None:
        self.s = store
        #: the lexemes per query text (the same for every user), reused for DF_TTL_S seconds
        self._lexemes: TTLCache[list[str]] = TTLCache(DF_TTL_S)

    def index(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Index memories' texts, :data:`INDEX_CHUNK` rows per statement (the ids and bodies as two
        arrays). One statement per chunk, not one per row: the lexeme-count triggers on memory_fts
        fire once per statement, and one transaction upserting the same counters (the user's row
        count, common words) once per row makes every later update walk a longer chain of row
        versions."""
        latest = {int(mid): _ts_body(t) for mid, t in rows}  # a memory indexed twice: its last text
        items = sorted(latest.items())  # in key order: concurrent writers lock rows in the same order
        for chunk in chunks(items, INDEX_CHUNK):
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

    def search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """Memories holding any of the stemmed ``terms``, ranked by the summed idf of the lexemes
        they hold (BM25 with binary term frequency, no length normalisation: memories are short).

        Document frequencies are exact, from ``memory_lexemes``. Common lexemes are pruned and only
        the :data:`RANK_CAP` most recent matches ranked, unless the rarest lexemes dominate
        (:mod:`~deepcontext.store.keyword_policy`). With one common lexeme left every match scores
        the same: the most recent matches are read by walking the primary key backwards.
        """
        terms = [t for t in dict.fromkeys(terms) if t and t.strip()]
        if not terms or k <= 0:
            return []
        body = " ".join(fold_diacritics(t) for t in terms[:64])
        with self.s.connection() as conn:
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
            cap = max(DF_CAP, int(COMMON_TERM_SHARE * n_user))
            present = [(lx, dfs[lx]) for lx in lexes if dfs.get(lx, 0) > 0]
            if not present:
                return []
            lexemes, common_only = informative_terms(present, n_user, floor=DF_CAP)
            if not lexemes:
                return []
            if common_only and filters == DEFAULT_FILTERS:
                return self.most_recent_matches(conn, user_id, lexemes[0], cap, k, now)
            weighted = [(lx, math.log(1.0 + cap / (df + 0.5))) for lx, df in lexemes]

            def rank(match: list[str], n: int) -> list[tuple[int, float]]:
                # the memories holding one of `match` number at most their summed frequencies
                counts = (sum(dfs[lx] for lx in match), max(dfs[lx] for lx in match), n_user)
                if filters == DEFAULT_FILTERS:
                    return self.rank_lexemes(conn, user_id, weighted, match, counts, n, now)
                return self.ranked(conn, user_id, weighted, match, counts, n, filters, now)

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

    def ranked(
        self,
        conn: Connection,
        user_id: str,
        weighted: list[tuple[str, float]],
        match: list[str],
        counts: tuple[int, int, int],
        k: int,
        filters: MemoryFilters,
        now: datetime,
    ) -> list[tuple[int, float]]:
        """The best ``k`` of the :data:`RANK_CAP` most recent memories holding any lexeme of ``match``,
        by the summed weights of the ``weighted`` lexemes they hold (ties: the newer first), under
        ``filters``. ``counts`` as for :meth:`rank_lexemes`; the summed matches also bound how many
        memories hold one of ``match``: rounds stop when there is nothing more to read
        (:func:`~deepcontext.store.keyword_policy.fetch_sizes`)."""
        matches, largest, n_user = counts
        walk = walk_rows(matches, largest, n_user)
        rows: list[Any] = []
        for fetch in fetch_sizes(k, matches):
            rows = list(conn.execute(self._ranked_stmt(user_id, weighted, match, k, fetch, filters, now, walk)).all())
            if walk_fell_short(walk, n_user, rows[0].found if walk is not None and rows else None):
                walk = None  # the newest matches lie further back than the walk went: collect them all
                rows = list(conn.execute(self._ranked_stmt(user_id, weighted, match, k, fetch, filters, now, walk)).all())
            if len(rows) >= k:
                break
        return [(int(r.id), float(r.score or 0.0)) for r in rows]

    def _ranked_stmt(
        self, user_id: str, weighted: list[tuple[str, float]], match: list[str], k: int, fetch: int,
        filters: MemoryFilters, now: datetime, walk: int | None,
    ) -> Any:  # fmt: skip
        """:meth:`ranked`'s statement: the newest matches found as :data:`_NEWEST` says, scored on the
        side table alone; only the best ``fetch`` meet the memories table for the filters."""
        mt = self.s.t.memories
        # the query inline, not a parameter: psycopg prepares a statement run five times, and
        # PostgreSQL's generic plan for `tsv @@ $1` cannot know how common the lexemes are
        tsq = cast(bindparam("tsq", " | ".join(_quote_lexeme(lx) for lx in match), literal_execute=True), TSQUERY)
        if walk is None:
            cand: Any = (
                select(_FTS.c.memory_id, _FTS.c.tsv)
                .where(_FTS.c.user_id == user_id, _FTS.c.tsv.op("@@")(tsq))
                .order_by((_FTS.c.memory_id + 0).desc())  # collect every match (see _NEWEST)
                .limit(RANK_CAP)
                .subquery("cand")
            )
        else:
            walked = (
                select(_FTS.c.memory_id, _FTS.c.tsv)
                .where(_FTS.c.user_id == user_id)
                .order_by(_FTS.c.memory_id.desc())
                .limit(walk)
                .subquery("walked")
            )
            cand = (
                select(walked.c.memory_id, walked.c.tsv)
                .where(walked.c.tsv.op("@@")(tsq))
                .order_by(walked.c.memory_id.desc())
                .limit(RANK_CAP)
                .cte("cand")
                .prefix_with("MATERIALIZED")
            )
        score = sum(
            (case((cand.c.tsv.op("@@")(cast(literal(_quote_lexeme(lx)), TSQUERY)), w), else_=0.0) for lx, w in weighted),
            start=literal(0.0),
        ).label("score")
        best = select(cand.c.memory_id, score).order_by(score.desc(), cand.c.memory_id.desc()).limit(fetch).subquery("best")
        found = [select(func.count()).select_from(cand).scalar_subquery().label("found")] if walk is not None else []
        return (
            select(mt.c.id, best.c.score, *found)
            .select_from(best.join(mt, mt.c.id == best.c.memory_id))
            .where(self.s.owner_clause(mt.c.user_id) == user_id, *self.s.filter_clause(filters, now))
            .order_by(best.c.score.desc(), mt.c.id.desc())
            .limit(k)
        )

    def rank_lexemes(
        self,
        conn: Connection,
        user_id: str,
        weighted: list[tuple[str, float]],
        match: list[str],
        counts: tuple[int, int, int],
        k: int,
        now: datetime,
    ) -> list[tuple[int, float]]:
        """:meth:`ranked` under the default filters, as one statement text per lexeme count sent
        straight to the driver with ``prepare=False`` (never a prepared statement, so PostgreSQL plans
        every run with the actual tsquery; building the SQLAlchemy form costs more than running it).
        ``counts``: the lexemes' matches (summed), the most common one's, and the user's indexed
        memories, which choose how the newest matches are found (:func:`~deepcontext.store.keyword_policy.walk_rows`)."""
        matches, largest, n_user = counts
        walk = walk_rows(matches, largest, n_user)
        n = len(weighted)
        params: dict[str, Any] = {"u": user_id, "now": now, "k": k, "rank_cap": RANK_CAP, "walk": walk}
        params["tsq"] = " | ".join(_quote_lexeme(lx) for lx in match)
        for i, (lx, w) in enumerate(weighted):
            params[f"l{i}"] = _quote_lexeme(lx)
            params[f"w{i}"] = w
        rows: list[Any] = []
        for fetch in fetch_sizes(k, matches):
            params["fetch"] = fetch
            rows = self.s.raw(conn, _rank_sql(n, walk is not None), params, prepare=False).fetchall()
            if walk_fell_short(walk, n_user, rows[0][2] if walk is not None and rows else None):
                # the newest matches lie further back than the walk went: collect them all
                walk = None
                rows = self.s.raw(conn, _rank_sql(n, False), params, prepare=False).fetchall()
            if len(rows) >= k:
                break
        return [(int(r[0]), float(r[1] or 0.0)) for r in rows]

    def most_recent_matches(
        self, conn: Connection, user_id: str, lexeme: tuple[str, int], cap: int, k: int, now: datetime
    ) -> list[tuple[int, float]]:
        """The ``k`` most recent active, unexpired memories holding one common lexeme (in at least
        ``cap`` of the user's rows): dense enough that walking the primary key backwards meets them
        within a few thousand rows, where the GIN index would collect every match first."""
        lx, df = lexeme
        mt = self.s.t.memories
        # the memory's own test as a subquery per row, not a join: joined, the planner takes the
        # memories side for a few dozen rows (it cannot estimate the hidden owner test) and reads all
        # of the user's active memories first; per row, the walk stops at k
        live = (
            select(and_(mt.c.user_id == user_id, *self.s.filter_clause(DEFAULT_FILTERS, now)))
            .where(mt.c.id == _FTS.c.memory_id)
            .scalar_subquery()
        )
        stmt = (
            select(_FTS.c.memory_id)
            .where(
                _FTS.c.user_id == user_id,
                _FTS.c.tsv.op("@@")(cast(bindparam("tsq", _quote_lexeme(lx), literal_execute=True), TSQUERY)),
                live,
            )
            .order_by(_FTS.c.memory_id.desc())
            .limit(k)
        )
        score = math.log(1.0 + cap / (df + 0.5))
        return [(int(r[0]), score) for r in conn.execute(stmt)]
