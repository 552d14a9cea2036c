"""PostgreSQL's forms of the repositories' reads: statements built once with array parameters,
LATERAL subqueries for per-row limits (one round trip where the generic form takes one per row)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import BigInteger, Connection, Integer, bindparam, func, select, true
from sqlalchemy.dialects.postgresql import ARRAY

from deepcontext.store.interface import DEFAULT_FILTERS, MemoryFilters, RankFields
from deepcontext.store.sql_graph import GraphReads
from deepcontext.store.sql_memories import MemoryReads, MemoryReadsContext, rank_rows
from deepcontext.store.sql_provenance import ProvenanceReads
from deepcontext.store.sqlparts import entity_limits
from deepcontext.types import Provenance

__all__ = ["PostgresGraphReads", "PostgresMemoryReads", "PostgresProvenanceReads"]


class PostgresReadsContext(MemoryReadsContext, Protocol):
    """What the PostgreSQL reads use of their store beyond the common reads' lookups."""

    def default_conditions(self) -> list[Any]:
        """The search filters' default conditions, built once."""


class PostgresMemoryReads(MemoryReads):
    """rank_fields (and rank_fields_citing) as statements built once, the ids as an array."""

    s: PostgresReadsContext

    @functools.cached_property
    def rank_fields_stmt(self) -> Any:
        mt = self.s.t.memories
        ids: Any = bindparam("ids", type_=ARRAY(BigInteger))
        return self.rank_fields_base().where(mt.c.id == func.any(ids))

    def rank_fields_select(self, user_id: str, ids: Sequence[int]) -> Any:
        # built once (building and keying it cost more than running it), the ids as an array
        return self.rank_fields_stmt

    @functools.cached_property
    def rank_fields_citing_stmt(self) -> Any:
        """rank_fields_citing's statement under the default filters, built once; parameters uid,
        turns, now."""
        mt, ms = self.s.t.memories, self.s.t.memory_sources
        citing = select(ms.c.memory_id).where(
            ms.c.user_id == bindparam("uid"), ms.c.turn_id == func.any(bindparam("turns", type_=ARRAY(BigInteger)))
        )
        return self.rank_fields_base().where(mt.c.id.in_(citing), *self.s.default_conditions())

    def rank_fields_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, RankFields]:
        turns = sorted({int(t) for t in turn_ids})
        if filters != DEFAULT_FILTERS or not turns:
            return super().rank_fields_citing(user_id, turns, filters, now)
        with self.s.connection() as conn:
            return rank_rows(conn.execute(self.rank_fields_citing_stmt, {"uid": user_id, "turns": turns, "now": now}))


class PostgresGraphReads(GraphReads):
    """The graph leg's statements with array parameters, built once."""

    s: PostgresReadsContext

    @functools.cached_property
    def entity_memories_stmt(self) -> Any:
        """memories_for_entities' statement under the default filters, built once (building and
        keying it costs more than the query); parameters uid, eids, lims, now."""
        return self.entity_memories_select(self.s.default_conditions())

    def entity_memories_select(self, conditions: list[Any]) -> Any:
        me, mt = self.s.t.memory_entities, self.s.t.memories
        e = (
            func.unnest(bindparam("eids", type_=ARRAY(BigInteger)), bindparam("lims", type_=ARRAY(Integer)))
            .table_valued("eid", "lim")
            .render_derived()
            .alias("e")
        )
        per = (
            select(me.c.memory_id)
            .join(mt, mt.c.id == me.c.memory_id)
            .where(me.c.entity_id == e.c.eid, me.c.user_id == bindparam("uid"), *conditions)
            .order_by(me.c.memory_id.desc())
            .limit(e.c.lim)
            .lateral("m")
        )
        return select(per.c.memory_id, e.c.eid).select_from(e.join(per, true()))

    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        """As on SQLite, in one round trip: a LATERAL subquery per entity (index range scans on
        (entity_id, memory_id), at most the entity's limit rows each)."""
        pairs = entity_limits(entity_ids, limit)
        if not pairs:
            return []
        ids = [eid for eid, _ in pairs]
        params = {"uid": user_id, "eids": ids, "lims": [lim for _, lim in pairs], "now": now}
        if filters == DEFAULT_FILTERS:
            stmt = self.entity_memories_stmt
        else:
            stmt = self.entity_memories_select(self.s.filter_clause(filters, now))
        with self.s.connection() as conn:
            rows = [tuple(r) for r in conn.execute(stmt, params)]
        order = {eid: i for i, eid in enumerate(ids)}
        rows.sort(key=lambda r: (order[int(r[1])], -int(r[0])))
        return [(int(mid), int(eid)) for mid, eid in rows]

    def in_param(self, col: Any, name: str) -> Any:
        # an array parameter: one statement text whatever the number of ids (psycopg prepares it)
        return col == func.any(bindparam(name, type_=ARRAY(BigInteger)))

    def not_in_param(self, col: Any, name: str) -> Any:
        return col != func.all(bindparam(name, type_=ARRAY(BigInteger)))


class PostgresProvenanceReads(ProvenanceReads):
    """The oldest sources of many memories in one round trip."""

    def sources_of(
        self, conn: Connection, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None
    ) -> dict[int, list[Provenance]]:
        """As on SQLite; with ``per_memory``, the oldest turns of every memory in one round trip (a
        LATERAL subquery per memory, an index range scan each) instead of one statement per memory."""
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if per_memory is None or not ids:
            return super().sources_of(conn, user_id, ids, per_memory)
        ms, tt = self.s.t.memory_sources, self.s.t.turns
        m = func.unnest(bindparam("mids", ids, type_=ARRAY(BigInteger))).table_valued("mid").render_derived().alias("m")
        first = (
            select(ms.c.turn_id)
            .where(ms.c.memory_id == m.c.mid, ms.c.user_id == user_id)
            .order_by(ms.c.turn_id)
            .limit(per_memory)
            .lateral("s")
        )
        stmt = (
            select(m.c.mid, tt.c.id, tt.c.conversation_id, tt.c.role, tt.c.name, tt.c.said_at)
            .select_from(m.join(first, true()).join(tt, tt.c.id == first.c.turn_id))
            .order_by(m.c.mid, tt.c.id)
        )
        out: dict[int, list[Provenance]] = {}
        for r in conn.execute(stmt):
            out.setdefault(int(r.mid), []).append(
                Provenance.model_construct(
                    turn_id=r.id, conversation_id=r.conversation_id, role=r.role, speaker=r.name, said_at=r.said_at
                )
            )
        return out
