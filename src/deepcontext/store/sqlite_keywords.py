"""SQLite's keyword index: FTS5 with bm25, the user named by a token in each row."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, select, text
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import UnaryExpression

from deepcontext.clock import to_epoch
from deepcontext.store.indexes import KeywordIndex
from deepcontext.store.interface import DEFAULT_FILTERS, MemoryFilters
from deepcontext.store.keyword_policy import DF_TTL_S, RANK_CAP, informative_terms
from deepcontext.store.repository import Lookups, Raw
from deepcontext.store.sqlite_bm25 import bm25, fts_tokens, rank_rows, sizes_of, varints
from deepcontext.store.sqlparts import chunks
from deepcontext.store.ttlcache import TTLCache
from deepcontext.text import search_text
from deepcontext.types import MemoryStatus

__all__ = ["SQLiteKeywordIndex", "unindexed", "user_token"]

#: a user's rows matching a query that are ranked here rather than by FTS5 (see :meth:`SQLiteKeywordIndex._small_bm25`)
SMALL_RANK_ROWS = 2000


def user_token(user_id: str) -> str:
    """The token naming a user in the keyword index (hex, so the tokenizer keeps it whole)."""
    return "u" + hashlib.blake2b(user_id.encode("utf-8"), digest_size=10).hexdigest()


@functools.cache
def _porter() -> Any:
    """FTS5's porter tokenizer stems index terms; the vocabulary is looked up with the same stems."""
    import Stemmer

    return Stemmer.Stemmer("porter")


def _stemmed_token(user_id: str) -> str:
    """The user's token as the index holds it (the porter tokenizer stems it too: ``...e`` loses its e)."""
    return str(_porter().stemWords([user_token(user_id)])[0])


def unindexed(col: Any) -> Any:
    """``+col``: tells SQLite not to use an index on ``col``. Lookups by id must go through the
    primary key; with one big user, the user_id index would otherwise win and scan all its rows."""
    return UnaryExpression(col, operator=operators.custom_op("+"), type_=col.type)


#: which of the memory ids of a JSON array (1) are active, unexpired (now as epoch: 3) memories of a user (2)
_ALLOWED_SQL = (
    "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?1)) AND +user_id = ?2 "
    "AND status = 'active' AND (expires_at IS NULL OR expires_at > ?3)"
)


class _Context(Lookups, Raw, Protocol):
    """What the keyword index uses of its store."""


@dataclass(frozen=True)
class _FtsTable:
    """One FTS5 table of the keyword index and the statements that rank its rows."""

    name: str
    #: its fts5vocab table ('row': the rows holding each term)
    vocab: str

    @functools.cached_property
    def rank_sql(self) -> str:
        """The best ?2 rows matching ?1 by bm25, after ?3 of them."""
        return f"SELECT rowid, bm25({self.name}) AS s FROM {self.name} WHERE {self.name} MATCH ?1 ORDER BY s LIMIT ?2 OFFSET ?3"

    @functools.cached_property
    def match_rows_sql(self) -> str:
        """At most ?2 rows matching ?1, with their text, unranked."""
        return f"SELECT rowid, body FROM {self.name} WHERE {self.name} MATCH ?1 LIMIT ?2"

    @functools.cached_property
    def docsize_sql(self) -> str:
        """The size records of the rows of a JSON array (?1)."""
        return f"SELECT id, sz FROM {self.name}_docsize WHERE id IN (SELECT value FROM json_each(?1))"

    @functools.cached_property
    def averages_sql(self) -> str:
        """The table's averages record: its rows and tokens per column."""
        return f"SELECT block FROM {self.name}_data WHERE id = 1"

    @functools.cached_property
    def capped_rank_sql(self) -> str:
        """bm25 of the most recent ?2 matches of ?1, the best ?3 after ?4 of them (ties: newest first)."""
        return (
            f"SELECT rowid, s FROM (SELECT rowid, bm25({self.name}) AS s FROM {self.name} WHERE {self.name} MATCH ?1 "
            "ORDER BY rowid DESC LIMIT ?2) ORDER BY s, rowid DESC LIMIT ?3 OFFSET ?4"
        )


#: The keyword index holds active memories only, so a search ranks no row it must then drop (an
#: older version scores as high as the memory that replaced it, and a search ranked every match
#: again to find enough active ones). Superseded memories, which questions about the past still
#: look for, have a table of their own; other inactive memories leave the index. A trigger on
#: memories moves the rows (migration 8).
_TABLES: dict[MemoryStatus, _FtsTable] = {
    MemoryStatus.ACTIVE: _FtsTable("memory_fts", "memory_fts_vocab"),
    MemoryStatus.SUPERSEDED: _FtsTable("memory_fts_past", "memory_fts_past_vocab"),
}


class SQLiteKeywordIndex(KeywordIndex):
    """FTS5 with bm25; the user's token ANDed to the query when the user owns a small share of the
    index. Active memories in one table, superseded ones in another (see :data:`_TABLES`)."""

    def __init__(self, store: _Context) -> None:
        self.s = store
        #: document frequencies of index terms by (vocabulary table, term), kept DF_TTL_S seconds
        #: (fts5vocab counts them by reading the term's whole posting list)
        self._df_cache: TTLCache[int] = TTLCache(DF_TTL_S)

    def index(self, conn: Connection, rows: list[tuple[int, str]]) -> None:
        """Index (memory id, text) rows in the table of each memory's status (none for memories
        neither active nor superseded)."""
        if not rows:
            return
        mt = self.s.t.memories
        owners: dict[int, tuple[str, str]] = {}
        for chunk in chunks([mid for mid, _ in rows]):
            owners.update(
                (int(i), (u, st))
                for i, u, st in conn.execute(select(mt.c.id, mt.c.user_id, mt.c.status).where(mt.c.id.in_(list(chunk))))
            )
        for status, table in _TABLES.items():
            batch = [
                {"id": mid, "body": search_text(t), "uid": user_token(owners[mid][0])}
                for mid, t in rows
                if mid in owners and owners[mid][1] == status.value
            ]
            if batch:
                conn.execute(text(f"INSERT INTO {table.name}(rowid, body, uid) VALUES (:id, :body, :uid)"), batch)

    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None:
        for chunk in chunks(list(memory_ids)):
            for table in _TABLES.values():
                conn.execute(text(f"DELETE FROM {table.name} WHERE rowid IN ({','.join(str(int(i)) for i in chunk)})"))

    def doc_frequency(self, conn: Connection, term: str, table: _FtsTable = _TABLES[MemoryStatus.ACTIVE]) -> int:
        """Rows of a table of the keyword index (default: the active memories') holding ``term``
        (cached :data:`DF_TTL_S` seconds)."""
        key = f"{table.vocab} {term}"
        hit = self._df_cache.get(key)
        if hit is not None:
            return hit
        # one term at a time: fts5vocab answers `term = ?` from the index (an IN list can miss rows)
        got = conn.execute(text(f"SELECT doc FROM {table.vocab} WHERE term = :t"), {"t": term}).first()
        df = int(got[0]) if got is not None else 0
        self._df_cache.put(key, df)
        return df

    def informative_terms(
        self, conn: Connection, user_id: str, terms: list[str], table: _FtsTable = _TABLES[MemoryStatus.ACTIVE]
    ) -> tuple[list[str], int, int | None]:
        """Drop terms found in more than :data:`COMMON_TERM_SHARE` of the user's indexed memories:
        they cost the most to rank (every matching row is scored) and weigh least in bm25. If every
        term is that common, the rarest one is kept unless it is in more than
        :data:`MAX_TERM_SHARE` of them (then the keyword leg has nothing useful to say).
        Returns (terms, rows indexed for the user, the kept terms' summed document frequencies or
        None when not counted: under 1,000 rows)."""
        n_user = self.doc_frequency(conn, _stemmed_token(user_id), table)
        if n_user < 1000:
            return terms, n_user, None
        df = [self.doc_frequency(conn, stem, table) for stem in _porter().stemWords(terms)]
        keep = informative_terms(list(zip(terms, df, strict=True)), n_user).terms
        return [t for t, _ in keep], n_user, sum(d for _, d in keep)

    def search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """bm25 over the user's memories: FTS5 ranks matching rows on its own (fast
        ``ORDER BY rank LIMIT``), then ownership and filters are checked for the best rows by id;
        more are fetched if too many were dropped. When the user owns a small share of the index the
        query also ANDs the user's token, so other users' rows are never ranked. When the terms match
        more than :data:`RANK_CAP` rows, only the most recent :data:`RANK_CAP` matches are ranked.
        Only active and superseded memories are indexed: other statuses in ``filters`` find none."""
        terms = list(dict.fromkeys(t for t in terms if t))[:64]
        tables = [table for status, table in _TABLES.items() if status in filters.statuses]
        if not terms or k <= 0 or not tables:
            return []
        with self.s.connection() as conn:
            found = [hit for table in tables for hit in self._search(conn, table, user_id, terms, k, filters, now)]
        if len(tables) > 1:
            found.sort(key=lambda hit: -hit[1])
        return found[:k]

    def _search(
        self, conn: Connection, table: _FtsTable, user_id: str, terms: list[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]:
        """:meth:`search` in one table."""
        mt = self.s.t.memories
        terms, n_user, matches = self.informative_terms(conn, user_id, terms, table)
        if not terms:
            return []
        body = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        highest = self.s.raw(conn, "SELECT max(id) FROM memories").fetchone()[0] or 0
        alone = n_user >= 0.5 * highest
        if alone:  # (nearly) alone in the index: the user token would only cost
            match = f"body : ({body})"
        else:
            match = f'uid : "{user_token(user_id)}" AND body : ({body})'

        def allowed(ids: list[int]) -> set[int]:
            if filters == DEFAULT_FILTERS:  # the usual case: a prepared statement on the driver
                rows = self.s.raw(conn, _ALLOWED_SQL, (json.dumps(ids), user_id, to_epoch(now)))
                return {int(r[0]) for r in rows}
            return {
                int(r[0])
                for r in conn.execute(
                    select(mt.c.id).where(
                        self.s.ids_in(mt.c.id, ids), unindexed(mt.c.user_id) == user_id, *self.s.filter_clause(filters, now)
                    )
                )
            }

        out: list[tuple[int, float]] = []
        own = None if alone else self._small_bm25(conn, table, user_id, terms, n_user, match)
        if own is not None:  # ranked here: FTS5 would count each term's rows in the whole table
            for i in range(0, len(own), 2 * k):
                part = own[i : i + 2 * k]
                ok = allowed([mid for mid, _ in part])
                out.extend((mid, -score) for mid, score in part if mid in ok)
                if len(out) >= k:
                    break
            return out[:k]

        def take(rows: list[tuple[int, float]]) -> None:
            # ownership checked for 2 * k rows at a time (the first slice usually suffices); bm25 is
            # lower-is-better and negative: report a positive relevance
            for i in range(0, len(rows), 2 * k):
                part = rows[i : i + 2 * k]
                ok = allowed([int(r[0]) for r in part])
                out.extend((int(mid), float(-score)) for mid, score in part if int(mid) in ok)
                if len(out) >= k:
                    return

        # other users' rows (when the user token is not ANDed), expired memories and those other
        # filters drop are ranked too: ask for enough rows that one round usually suffices, since
        # every round ranks every match
        fetch = max(4 * k, 200)
        if matches is not None and matches > RANK_CAP:
            # rank the most recent RANK_CAP matches; SQLite sorts them and returns the best
            # `fetch` (ties: the newer memory first), a further round only if too many of those
            # were dropped; straight on the driver (SQLAlchemy's rows cost more)
            rows = self.s.raw(conn, table.capped_rank_sql, (match, RANK_CAP, fetch, 0)).fetchall()
            take(rows)
            if len(out) < k and len(rows) == fetch:
                # every round ranks all the matches again, so one more round takes the rest
                take(self.s.raw(conn, table.capped_rank_sql, (match, RANK_CAP, RANK_CAP, fetch)).fetchall())
            return out[:k]
        offset = 0
        while len(out) < k:
            rows = self.s.raw(conn, table.rank_sql, (match, fetch, offset)).fetchall()
            take(rows)
            if len(rows) < fetch:
                break
            offset += fetch
            fetch *= 4
        return out[:k]

    def _small_bm25(
        self, conn: Connection, table: _FtsTable, user_id: str, terms: list[str], n_user: int, match: str
    ) -> list[tuple[int, float]] | None:
        """The rows of ``match`` (the user's token ANDed) with FTS5's bm25, best first, computed
        from the index's records (see :mod:`.sqlite_bm25`); None when a term is not one token or
        more than :data:`SMALL_RANK_ROWS` rows match (FTS5 then ranks them itself)."""
        stem = _porter().stemWords
        stems = [fts_tokens(t, stem) for t in terms]
        if any(len(t) != 1 for t in stems):
            return None
        rows = self.s.raw(conn, table.match_rows_sql, (match, SMALL_RANK_ROWS + 1)).fetchall()
        if len(rows) > SMALL_RANK_ROWS:
            return None
        if not rows:
            return []
        sizes = sizes_of(self.s.raw(conn, table.docsize_sql, (json.dumps([int(r[0]) for r in rows]),)))
        averages = self.s.raw(conn, table.averages_sql).fetchone()
        if averages is None or len(sizes) != len(rows):
            return None
        n_rows, *column_tokens = varints(averages[0])
        # the user's token is a phrase of the query too: one instance in each of its rows
        phrases = [(None, n_user), *((t[0], self.doc_frequency(conn, t[0], table)) for t in stems)]
        scored = bm25([(int(r), fts_tokens(body, stem), sizes[int(r)]) for r, body in rows], phrases, n_rows, sum(column_tokens))
        return rank_rows(scored)

    def purge_deleted(self, conn: Connection) -> None:
        # FTS5 deletes only add "deleted" markers; the deleted rows' terms stay in the index's segments
        # until they are merged. 'optimize' merges every segment into one, without them.
        for table in _TABLES.values():
            conn.execute(text(f"INSERT INTO {table.name}({table.name}) VALUES ('optimize')"))
