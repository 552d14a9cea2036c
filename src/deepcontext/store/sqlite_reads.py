"""SQLite's faster reads: the repositories' hot statements sent straight to the sqlite3 driver
(through the store's executor), with ids as one JSON array, converted by the columns' own
processors."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, Protocol

from sqlalchemy import Connection

from deepcontext.clock import to_epoch
from deepcontext.store.columns import stored_time
from deepcontext.store.interface import DEFAULT_FILTERS, MemoryFilters, RankFields
from deepcontext.store.repository import Raw
from deepcontext.store.sql_graph import GraphReads
from deepcontext.store.sql_memories import MemoryReads, MemoryReadsContext
from deepcontext.store.sql_provenance import ProvenanceReads
from deepcontext.store.sql_turns import TurnReads
from deepcontext.store.sqlparts import chunks, entity_limits
from deepcontext.types import Memory, MemoryStatus, Provenance

__all__ = ["SQLiteGraphReads", "SQLiteMemoryReads", "SQLiteProvenanceReads", "SQLiteTurnReads"]

#: the most recent active, unexpired memories mentioning an entity (entity, user, now as epoch, limit)
_ENTITY_MEMORIES_SQL = (
    "SELECT me.memory_id FROM memory_entities AS me JOIN memories AS m ON m.id = me.memory_id "
    "WHERE me.entity_id = ? AND me.user_id = ? AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ?) "
    "ORDER BY me.memory_id DESC LIMIT ?"
)

#: SQLStore._active_hashes: the user's (?1) active, unexpired (at ?3) memories with a content hash of
#: the JSON array ?2, oldest first, of agent ?4 and run ?5 where given (NULL: any); `+status` keeps the
#: planner on the (user_id, content_hash) index
_ACTIVE_HASHES_SQL = (
    "SELECT content_hash, id FROM memories WHERE user_id = ?1 AND content_hash IN (SELECT value FROM json_each(?2)) "
    "AND +status = 'active' AND (expires_at IS NULL OR expires_at > ?3) "
    "AND (?4 IS NULL OR agent_id = ?4) AND (?5 IS NULL OR run_id = ?5) ORDER BY id"
)

#: speakers' names of the user's (?1) user and assistant turns with an id in (?2, ?3], by the primary key
_SPEAKERS_SQL = (
    "SELECT DISTINCT name FROM turns WHERE id > ?2 AND id <= ?3 AND +user_id = ?1 "
    "AND role IN ('user', 'assistant') AND name IS NOT NULL"
)

#: the user's (incarnation, version), as SQLStore._user_state
_USER_STATE_SQL = "SELECT incarnation, version FROM users WHERE user_id = ?"

#: entities of user ?2 by normalised name, the names a JSON array (?1)
_MATCH_ENTITIES_SQL = (
    "SELECT norm_name, id, mention_count FROM entities WHERE user_id = ?2 AND norm_name IN (SELECT value FROM json_each(?1))"
)

#: the names of the entities of the memory ids of a JSON array (1) of a user (2), as SQLStore._memory_entities
_MEMORY_ENTITIES_SQL = (
    "SELECT me.memory_id, e.name FROM memory_entities AS me JOIN entities AS e ON e.id = me.entity_id "
    "WHERE me.user_id = ?2 AND me.memory_id IN (SELECT value FROM json_each(?1)) ORDER BY me.memory_id, e.name"
)

#: SQLStore.rank_fields for the memory ids of a JSON array (1) of a user (2)
_RANK_FIELDS_SQL = (
    "SELECT m.id, m.importance, m.confidence, coalesce(m.said_at, m.created_at), m.access_count, m.status, m.pinned, "
    "m.valid_to, json_extract(m.metadata, '$.standing'), json_extract(m.metadata, '$.slots'), "
    "m.conversation_id, m.occurred_at, "
    "(SELECT min(s.turn_id) FROM memory_sources AS s WHERE s.memory_id = m.id) "
    "FROM memories AS m WHERE m.id IN (SELECT value FROM json_each(?1)) AND +m.user_id = ?2"
)

#: the same fields of those stating a standing fact (the profile leg's deeper pool)
_RANK_FIELDS_STANDING_SQL = _RANK_FIELDS_SQL + " AND json_extract(m.metadata, '$.standing') IS NOT NULL"

#: the same fields of the user's (?2) active, unexpired (at ?3) memories citing a turn of the JSON
#: array ?1 (the search's default filters)
_RANK_FIELDS_CITING_SQL = _RANK_FIELDS_SQL.replace(
    "m.id IN (SELECT value FROM json_each(?1))",
    "m.id IN (SELECT s.memory_id FROM memory_sources AS s WHERE s.turn_id IN (SELECT value FROM json_each(?1)) "
    "AND s.user_id = ?2) AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > ?3)",
)

#: relations touching the entities of a JSON array (parameter 1) of a user (parameter 2), both
#: directions as index searches on (user, source) and (user, target), with the entity at the other
#: end; strongest first, then by relation id (see SQLStore._neighbours_stmt)
_RELATIONS_SQL = """
WITH ids(id) AS (SELECT value FROM json_each(?1))
SELECT here, there, relation, strength, name, entity_type, mention_count, rid, outgoing FROM (
  SELECT r.id AS rid, r.source_id AS here, r.target_id AS there, r.relation, r.strength, e.name, e.entity_type, e.mention_count, 1 AS outgoing
  FROM relations AS r JOIN entities AS e ON e.id = r.target_id AND e.user_id = ?2
  WHERE r.user_id = ?2 AND r.source_id IN (SELECT id FROM ids)
  UNION ALL
  SELECT r.id, r.target_id, r.source_id, r.relation, r.strength, e.name, e.entity_type, e.mention_count, 0
  FROM relations AS r JOIN entities AS e ON e.id = r.source_id AND e.user_id = ?2
  WHERE r.user_id = ?2 AND r.target_id IN (SELECT id FROM ids)
) ORDER BY strength DESC, rid
"""


@functools.lru_cache(maxsize=128)
def _sources_sql(n: int) -> str:
    """The oldest ``?`` sources of ``n`` memories with their turns; parameters (memory_id, user_id,
    limit) per memory."""
    one = "SELECT * FROM (SELECT memory_id, turn_id FROM memory_sources WHERE memory_id = ? AND user_id = ? ORDER BY turn_id LIMIT ?)"
    return (
        "SELECT x.memory_id, t.id, t.conversation_id, t.role, t.name, t.said_at FROM ("
        + " UNION ALL ".join([one] * n)
        + ") AS x JOIN turns AS t ON t.id = x.turn_id ORDER BY x.memory_id, x.turn_id"
    )


@functools.lru_cache(maxsize=128)
def _links_sql(n: int) -> str:
    """The ``?`` most similar active memories linked to each of ``n`` memories; parameters
    (memory_id, user_id, limit) per memory."""
    one = (
        "SELECT * FROM (SELECT l.memory_id, l.other_id, l.similarity FROM memory_links AS l JOIN memories AS m ON m.id = l.other_id "
        "WHERE l.memory_id = ? AND l.user_id = ? AND m.status = 'active' ORDER BY l.similarity DESC, l.other_id LIMIT ?)"
    )
    return " UNION ALL ".join([one] * n)


class SQLiteReadsContext(MemoryReadsContext, Raw, Protocol):
    """What the SQLite reads use of their store: the reads' lookups, SQL text on the driver, and the
    memory reads whose columns they select."""

    @property
    def memories(self) -> MemoryReads: ...


class SQLiteMemoryReads(MemoryReads):
    """The hot reads of memories as prepared statements on the sqlite3 driver."""

    s: SQLiteReadsContext

    @functools.cached_property
    def memory_reader(self) -> tuple[str, list[str], list[Callable[[Any], Any] | None]]:
        """The memory columns' SELECT by a JSON array of ids (1) and user (2), their names, and the
        result processors SQLAlchemy would apply to them (epoch -> datetime, JSON text -> objects)."""
        cols = self.s.memories.memory_columns()
        dialect = self.s.engine.dialect
        sql = (
            f"SELECT {', '.join(c.name for c in cols)} FROM memories "
            "WHERE id IN (SELECT value FROM json_each(?1)) AND +user_id = ?2"
        )
        return sql, [c.name for c in cols], [c.type.dialect_impl(dialect).result_processor(dialect, None) for c in cols]

    def read_memories(self, conn: Connection, user_id: str, ids: list[int]) -> dict[int, Memory]:
        # MemoryReads.read_memories straight from the driver (a search reads its results this way:
        # SQLAlchemy's row handling costs more than the query), converted by the columns' own processors
        sql, names, procs = self.memory_reader
        by_id: dict[int, Memory] = {}
        for raw in self.s.raw(conn, sql, (json.dumps(ids), user_id)):
            row = SimpleNamespace(**{n: (p(v) if p is not None else v) for n, p, v in zip(names, procs, raw, strict=True)})
            by_id[int(row.id)] = self.s.memories.memory_from_row(row)
        return by_id

    def rank_fields(self, user_id: str, memory_ids: Sequence[int], *, standing_only: bool = False) -> dict[int, RankFields]:
        # the same statement as MemoryReads.rank_fields, sent straight to the driver (many candidates
        # per search: SQLAlchemy's result processing costs more than the query)
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if not ids:
            return {}
        sql = _RANK_FIELDS_STANDING_SQL if standing_only else _RANK_FIELDS_SQL
        with self.s.connection() as conn:
            return _rank_fields(self.s.raw(conn, sql, (json.dumps(ids), user_id)))

    def rank_fields_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, RankFields]:
        if filters != DEFAULT_FILTERS:
            return super().rank_fields_citing(user_id, turn_ids, filters, now)
        ids = sorted({int(t) for t in turn_ids})
        if not ids:
            return {}
        with self.s.connection() as conn:
            return _rank_fields(self.s.raw(conn, _RANK_FIELDS_CITING_SQL, (json.dumps(ids), user_id, to_epoch(now))))

    def user_state(self, conn: Connection, user_id: str) -> tuple[str, int] | None:
        # read twice by every search (vector cache, active memory count): straight on the driver
        row = self.s.raw(conn, _USER_STATE_SQL, (user_id,)).fetchone()
        return None if row is None else (row[0], int(row[1]))

    def active_hashes(
        self,
        conn: Connection,
        user_id: str,
        hashes: Sequence[str],
        now: datetime,
        *,
        scope: tuple[str | None, str | None] | None = None,
    ) -> dict[str, int]:
        # every add asks this (while planning and again inside its write transaction); the generic
        # statement's planner may pick the (user, status, tier) index and read all of the user's
        # active memories, where the (user, content_hash) index answers at once
        if not hashes:
            return {}
        agent, run = scope if scope is not None else (None, None)
        rows = self.s.raw(
            conn, _ACTIVE_HASHES_SQL, (user_id, json.dumps(sorted(set(hashes))), to_epoch(now), agent, run)
        ).fetchall()
        out: dict[str, int] = {}
        for h, mid in rows:
            out.setdefault(h, int(mid))
        return out


class SQLiteGraphReads(GraphReads):
    """The graph leg's reads as prepared statements on the sqlite3 driver."""

    s: SQLiteReadsContext

    def entities_of(self, conn: Connection, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for mid, name in self.s.raw(conn, _MEMORY_ENTITIES_SQL, (json.dumps([int(m) for m in memory_ids]), user_id)):
            out.setdefault(int(mid), []).append(name)
        return out

    def neighbour_rows(
        self, conn: Connection, user_id: str, entity_ids: Sequence[int], known: Sequence[int], limit: int
    ) -> list[tuple[Any, ...]]:
        # every relation of the frontier read straight from the driver, strongest first, and the
        # first row of each new entity kept here (cheaper than SQLite's window function and sort)
        seen = set(known)
        best: dict[int, tuple[Any, ...]] = {}
        for row in self.s.raw(conn, _RELATIONS_SQL, (json.dumps([int(i) for i in entity_ids]), user_id)):
            there = row[1]
            if there not in seen and there not in best:
                best[there] = row
        return sorted(best.values(), key=lambda r: (-r[3], r[1]))[: max(int(limit), 0)]

    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        # the usual case (active, unexpired memories, no other filter) as one prepared statement run
        # per entity straight on the driver
        if filters != DEFAULT_FILTERS:
            return super().memories_for_entities(user_id, entity_ids, filters, now, limit)
        pairs = entity_limits(entity_ids, limit)
        out: list[tuple[int, int]] = []
        if not pairs:
            return out
        epoch = to_epoch(now)
        with self.s.connection() as conn:
            for eid, lim in pairs:
                out += [(int(r[0]), eid) for r in self.s.raw(conn, _ENTITY_MEMORIES_SQL, (eid, user_id, epoch, lim))]
        return out

    def match_entities(self, user_id: str, norm_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        # the query's n-grams as one JSON array on a prepared statement (the generic statement
        # renders an IN list per count)
        names = sorted(set(norm_names))
        if not names:
            return {}
        with self.s.connection() as conn:
            rows = self.s.raw(conn, _MATCH_ENTITIES_SQL, (json.dumps(names), user_id)).fetchall()
        return {name: (int(eid), int(mentions)) for name, eid, mentions in rows}


class SQLiteProvenanceReads(ProvenanceReads):
    """Provenance and links of search results, one statement for all of them."""

    s: SQLiteReadsContext

    # A search reads the provenance and links of its results: one statement for all of them (a
    # UNION ALL of per-memory index range scans, each bounded by its LIMIT) sent straight to the
    # driver on the same connection and snapshot; SQLite caches the prepared statement by its text.
    _PER_MEMORY_BATCH = 100

    def per_memory_rows(
        self, conn: Connection, sql_for: Any, user_id: str, ids: list[int], per_memory: int
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of ``sql_for(n)``, a UNION ALL of n per-memory scans taking (memory_id, user_id,
        limit) each, for all ``ids`` in batches."""
        for chunk in chunks(ids, self._PER_MEMORY_BATCH):
            params = [p for mid in chunk for p in (mid, user_id, per_memory)]
            yield from self.s.raw(conn, sql_for(len(chunk)), params)

    def sources_of(
        self, conn: Connection, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None
    ) -> dict[int, list[Provenance]]:
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if per_memory is None or not ids:
            return super().sources_of(conn, user_id, ids, per_memory)
        out: dict[int, list[Provenance]] = {}
        for mid, tid, conv, role, name, said in self.per_memory_rows(conn, _sources_sql, user_id, ids, per_memory):
            out.setdefault(int(mid), []).append(
                Provenance.model_construct(
                    turn_id=int(tid), conversation_id=conv, role=role, speaker=name, said_at=stored_time(said)
                )
            )
        return out

    def memory_links(self, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None) -> dict[int, list[int]]:
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if per_memory is None or per_memory <= 0 or not ids:
            return super().memory_links(user_id, ids, per_memory)
        found: dict[int, list[tuple[float, int]]] = {}
        with self.s.connection() as conn:
            for mid, other, sim in self.per_memory_rows(conn, _links_sql, user_id, ids, per_memory):
                found.setdefault(int(mid), []).append((-float(sim), int(other)))
        return {mid: [o for _, o in sorted(pairs)] for mid, pairs in found.items()}


class SQLiteTurnReads(TurnReads):
    """Speakers' names kept per user and read on from the highest turn seen."""

    s: SQLiteReadsContext

    def __init__(self, store: SQLiteReadsContext) -> None:
        super().__init__(store)
        #: per user: (incarnation, highest turn id read, that turn's created_at, speakers' names)
        self._speakers: dict[str, tuple[str | None, int, Any, frozenset[str]]] = {}

    def forget(self, user_id: str) -> None:
        self._speakers.pop(user_id, None)

    def speaker_names(self, conn: Connection, user_id: str) -> set[str]:
        # asked by every consolidation (after every add), so not a read of all the user's turns:
        # kept per user and incarnation and read on from the highest turn id seen. A
        # new turn takes an id above the highest one present (no AUTOINCREMENT), so the ids up to the
        # one seen can be taken again only after that row was deleted: then everything is read again
        state = self.s.memories.user_state(conn, user_id)
        incarnation = None if state is None else state[0]
        since, names = 0, set()
        cached = self._speakers.get(user_id)
        if cached is not None and cached[0] == incarnation:
            seen = self.s.raw(conn, "SELECT created_at FROM turns WHERE id = ?", (cached[1],)).fetchone() if cached[1] else None
            if cached[1] == 0 or (seen is not None and seen[0] == cached[2]):
                since, names = cached[1], set(cached[3])
        last = self.s.raw(conn, "SELECT id, created_at FROM turns ORDER BY id DESC LIMIT 1").fetchone()
        top, mark = (int(last[0]), last[1]) if last is not None else (0, None)
        if top > since:
            names.update(r[0] for r in self.s.raw(conn, _SPEAKERS_SQL, (user_id, since, top)))
        self._speakers[user_id] = (incarnation, top, mark, frozenset(names))
        return names


def _rank_fields(rows: Any) -> dict[int, RankFields]:
    rows = list(rows)
    try:
        return _rank_fields_of(rows, datetime.fromtimestamp)
    except (OverflowError, ValueError, OSError, TypeError):  # a stored time out of range: the tolerant read
        return _rank_fields_of(rows, lambda value, _utc: stored_time(value))


def _rank_fields_of(rows: list[Any], stamp: Callable[[Any, Any], datetime]) -> dict[int, RankFields]:
    # a few hundred rows per search: positional arguments and a bound fromtimestamp
    active = MemoryStatus.ACTIVE.value
    utc = UTC
    return {
        mid: RankFields(
            float(importance),
            float(confidence),
            stamp(when, utc),
            int(access),
            status == active,
            first,
            bool(pinned),
            None if valid_to is None else stamp(valid_to, utc),
            standing if isinstance(standing, str) else None,
            slots if isinstance(slots, str) else None,
            conv,
            None if occurred is None else stamp(occurred, utc),
        )
        for mid, importance, confidence, when, access, status, pinned, valid_to, standing, slots, conv, occurred, first in rows
    }
