"""Reads of the entity graph: entities by name, neighbourhoods, the memories mentioning entities."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, literal, select, union_all

from deepcontext.store.interface import MemoryFilters
from deepcontext.store.repository import Lookups
from deepcontext.store.sqlparts import NO_LIMIT, chunks, entity_limits

__all__ = ["GraphReads"]


class GraphReads:
    """Reads of a store's entity graph."""

    def __init__(self, store: Lookups) -> None:
        self.s = store

    @functools.cached_property
    def match_entities_stmt(self) -> Any:
        et = self.s.t.entities
        return select(et.c.norm_name, et.c.id, et.c.mention_count).where(
            et.c.user_id == bindparam("uid"), et.c.norm_name.in_(bindparam("names", expanding=True))
        )

    @functools.cached_property
    def entities_stmt(self) -> Any:
        et = self.s.t.entities
        return select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count).where(
            et.c.user_id == bindparam("uid"), et.c.id.in_(bindparam("ids", expanding=True))
        )

    def in_param(self, col: Any, name: str) -> Any:
        """``col`` is one of the ids bound as ``name`` (an expanding IN list; PostgreSQL binds an array)."""
        return col.in_(bindparam(name, expanding=True))

    def not_in_param(self, col: Any, name: str) -> Any:
        return col.not_in(bindparam(name, expanding=True))

    @functools.cached_property
    def neighbours_stmt(self) -> Any:
        """Entities related to any of ``ids`` and not in ``known``, each once with its strongest
        relation (strength, then relation id), strongest first, then by id, at most ``lim``.
        Parameters uid, ids, known, lim. Both directions as two index searches ((user, source) and
        (user, target); an OR of the two made SQLite read every relation of the user); only the
        chosen rows leave the database."""
        et, rt = self.s.t.entities, self.s.t.relations

        def side(here: Any, there: Any, outgoing: int) -> Any:
            return (
                select(
                    rt.c.id.label("rid"),
                    here.label("here"),
                    there.label("there"),
                    rt.c.relation,
                    rt.c.strength,
                    et.c.name,
                    et.c.entity_type,
                    et.c.mention_count,
                    literal(outgoing).label("outgoing"),
                )  # fmt: skip
                .join(et, and_(et.c.id == there, et.c.user_id == bindparam("uid")))
                .where(rt.c.user_id == bindparam("uid"), self.in_param(here, "ids"), self.not_in_param(there, "known"))
            )

        both = union_all(side(rt.c.source_id, rt.c.target_id, 1), side(rt.c.target_id, rt.c.source_id, 0)).subquery("both")
        best = func.row_number().over(partition_by=both.c.there, order_by=(both.c.strength.desc(), both.c.rid))
        ranked = select(both, best.label("rn")).subquery("ranked")
        return (
            select(
                ranked.c.here,
                ranked.c.there,
                ranked.c.relation,
                ranked.c.strength,
                ranked.c.name,
                ranked.c.entity_type,
                ranked.c.mention_count,
                ranked.c.rid,
                ranked.c.outgoing,
            )  # fmt: skip
            .where(ranked.c.rn == 1)
            .order_by(ranked.c.strength.desc(), ranked.c.there)
            .limit(bindparam("lim"))
        )

    def neighbour_rows(
        self, conn: Connection, user_id: str, entity_ids: Sequence[int], known: Sequence[int], limit: int
    ) -> list[tuple[Any, ...]]:
        """(here, there, relation, strength, name, entity_type, mention_count, relation id, outgoing:
        1 when the relation runs from ``here`` to ``there``): each
        entity outside ``known`` related to one of ``entity_ids`` (``here``) once, with its strongest
        relation; strongest first, then by entity id; at most ``limit``."""
        params = {"uid": user_id, "ids": [int(i) for i in entity_ids], "known": [int(i) for i in known], "lim": int(limit)}
        return [tuple(r) for r in conn.execute(self.neighbours_stmt, params)]

    def match_entities(self, user_id: str, norm_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        names = sorted(set(norm_names))
        if not names:
            return {}
        out: dict[str, tuple[int, int]] = {}
        with self.s.connection() as conn:
            for chunk in chunks(names):
                for r in conn.execute(self.match_entities_stmt, {"uid": user_id, "names": list(chunk)}):
                    out[r.norm_name] = (int(r.id), int(r.mention_count))
        return out

    def entity_neighbourhood(
        self,
        user_id: str,
        entity_ids: Sequence[int],
        depth: int,
        *,
        max_per_level: int | None = None,
        max_expand_mentions: int | None = None,
        enough: int | None = None,
    ) -> list[dict[str, Any]]:
        start = list(dict.fromkeys(int(i) for i in entity_ids))
        if not start:
            return []
        info: dict[int, dict[str, Any]] = {}
        with self.s.connection() as conn:
            for r in conn.execute(self.entities_stmt, {"uid": user_id, "ids": start}):
                info[r.id] = {
                    "id": r.id,
                    "entity": r.name,
                    "entity_type": r.entity_type,
                    "relation": None,
                    "depth": 0,
                    "strength": 1.0,
                    "via": None,
                    "direction": None,
                    "mention_count": r.mention_count,
                }
            order = [i for i in start if i in info]

            def expands(i: int) -> bool:
                return max_expand_mentions is None or int(info[i]["mention_count"] or 0) <= max_expand_mentions

            frontier = [i for i in order if expands(i)]
            cap = NO_LIMIT if max_per_level is None else max(int(max_per_level), 0)
            for d in range(1, depth + 1):
                if not frontier or not cap or (d > 1 and enough is not None and sum(map(expands, order)) >= enough):
                    break
                # each new entity once, by its strongest relation to the frontier (strength, then
                # relation id): the database picks it per chunk of the frontier, the best of the
                # chunks' picks wins
                best: dict[int, tuple[Any, ...]] = {}
                for chunk in chunks(frontier):
                    for row in self.neighbour_rows(conn, user_id, chunk, list(info), cap):
                        there = int(row[1])
                        held = best.get(there)
                        if held is None or (-float(row[3]), int(row[7])) < (-float(held[3]), int(held[7])):
                            best[there] = row
                if not best:
                    break
                new = sorted(best, key=lambda i: (-float(best[i][3]), i))[:cap]
                for i in new:
                    here, there, relation, strength, name, entity_type, mentions, _, outgoing = best[i]
                    info[i] = {
                        "id": i,
                        "entity": name,
                        "entity_type": entity_type,
                        "mention_count": mentions,
                        "relation": relation,
                        "depth": d,
                        "strength": float(strength),
                        "via": int(here),
                        "direction": "out" if outgoing else "in",
                    }
                order += new
                frontier = [i for i in new if expands(i)]
        return [info[i] for i in order]

    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        """(memory_id, entity_id) pairs, the most recent mentions of each entity first, at most
        ``limit`` per entity (index range scans on (entity_id, memory_id), no sort of all mentions)."""
        me, mt = self.s.t.memory_entities, self.s.t.memories
        pairs = entity_limits(entity_ids, limit)
        if not pairs:
            return []
        out: list[tuple[int, int]] = []
        # one statement, executed per entity with its id bound (built once: constructing and keying
        # a statement costs as much as running it; a UNION ALL of the per-entity scans is slower
        # on SQLite)
        stmt = (
            select(me.c.memory_id)
            .join(mt, mt.c.id == me.c.memory_id)
            .where(me.c.entity_id == bindparam("eid"), me.c.user_id == user_id, *self.s.filter_clause(filters, now))
            .order_by(me.c.memory_id.desc())
            .limit(bindparam("lim"))
        )
        with self.s.connection() as conn:
            for eid, lim in pairs:
                out += [(int(r[0]), eid) for r in conn.execute(stmt, {"eid": eid, "lim": lim})]
        return out

    def entities_of(self, conn: Connection, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        me, et = self.s.t.memory_entities, self.s.t.entities
        out: dict[int, list[str]] = {}
        for chunk in chunks(list(memory_ids)):
            for mid, name in conn.execute(
                select(me.c.memory_id, et.c.name)
                .join(et, et.c.id == me.c.entity_id)
                .where(me.c.user_id == user_id, self.s.ids_in(me.c.memory_id, chunk))
                .order_by(me.c.memory_id, et.c.name)
            ):
                out.setdefault(mid, []).append(name)
        return out

    def memory_entities(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        with self.s.connection() as conn:
            return self.entities_of(conn, user_id, memory_ids)
