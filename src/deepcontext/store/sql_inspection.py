"""The inspector's reads (:class:`~deepcontext.store.inspection.Inspection`) on a SQL store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Engine, Float, and_, case, func, literal, or_, select, type_coerce

from deepcontext.store.columns import stored_time
from deepcontext.store.inspection import (
    CleanupCounts,
    ConversationInfo,
    DagNode,
    DagWindow,
    DecayInput,
    EntityCount,
    EntityGraph,
    Inspection,
    RelationEdge,
    Scopes,
    UserSummary,
)
from deepcontext.store.repository import Reads
from deepcontext.store.sqlparts import chunks
from deepcontext.text import entity_norm
from deepcontext.types import MemoryStatus, MemoryTier

__all__ = ["SQLInspection"]

_ACTIVE = MemoryStatus.ACTIVE.value
_SHORT = (MemoryTier.WORKING.value, MemoryTier.SHORT_TERM.value)


class _Context(Reads, Protocol):
    engine: Engine


class SQLInspection(Inspection):
    def __init__(self, store: _Context) -> None:
        self.s = store

    def user_summaries(self, user_ids: Sequence[str]) -> list[UserSummary]:
        t = self.s.t
        mt, tt, et, ct = t.memories, t.turns, t.entities, t.conversations
        out = {u: UserSummary(u) for u in user_ids}
        with self.s.connection() as conn:
            for chunk in chunks(list(user_ids), 500):
                for u, tier, status, n, last in conn.execute(
                    select(mt.c.user_id, mt.c.tier, mt.c.status, func.count(), func.max(mt.c.updated_at))
                    .where(mt.c.user_id.in_(chunk))
                    .group_by(mt.c.user_id, mt.c.tier, mt.c.status)
                ):
                    s = out[u]
                    s.statuses[status] = s.statuses.get(status, 0) + int(n)
                    if status == _ACTIVE:
                        s.tiers[tier] = s.tiers.get(tier, 0) + int(n)
                    s.last_activity = _later(s.last_activity, last)
                for u, n, last in conn.execute(
                    select(tt.c.user_id, func.count(), func.max(tt.c.created_at))
                    .where(tt.c.user_id.in_(chunk))
                    .group_by(tt.c.user_id)
                ):
                    out[u].turns = int(n)
                    out[u].last_activity = _later(out[u].last_activity, last)
                for u, n in conn.execute(
                    select(et.c.user_id, func.count()).where(et.c.user_id.in_(chunk)).group_by(et.c.user_id)
                ):
                    out[u].entities = int(n)
                for u, n in conn.execute(
                    select(ct.c.user_id, func.count()).where(ct.c.user_id.in_(chunk)).group_by(ct.c.user_id)
                ):
                    out[u].conversations = int(n)
        return [out[u] for u in user_ids]

    def entity_search(self, user_id: str, text: str, limit: int = 20) -> list[EntityCount]:
        et = self.s.t.entities
        norm = entity_norm(text)
        if not norm:
            return []
        pattern = "%" + norm.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self.s.connection() as conn:
            rows = conn.execute(
                select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count)
                .where(et.c.user_id == user_id, et.c.norm_name.like(pattern, escape="\\"))
                .order_by(et.c.mention_count.desc(), et.c.id)
                .limit(limit)
            ).all()
        return [_entity(r) for r in rows]

    def entity_graph(self, user_id: str, ids: Sequence[int] | None, limit: int) -> EntityGraph:
        et, rt = self.s.t.entities, self.s.t.relations
        cols = (et.c.id, et.c.name, et.c.entity_type, et.c.mention_count)
        with self.s.connection() as conn:
            total = int(conn.execute(select(func.count()).select_from(et).where(et.c.user_id == user_id)).scalar_one())
            if ids is None:
                rows = conn.execute(
                    select(*cols).where(et.c.user_id == user_id).order_by(et.c.mention_count.desc(), et.c.id).limit(limit)
                ).all()
            else:
                rows = []
                for chunk in chunks(list(ids)[:limit], 500):
                    rows += conn.execute(select(*cols).where(et.c.user_id == user_id, et.c.id.in_(chunk))).all()
            entities = [_entity(r) for r in rows]
            seen = {e.id for e in entities}
            relations: list[RelationEdge] = []
            for chunk in chunks(sorted(seen), 500):
                for r in conn.execute(
                    select(rt.c.source_id, rt.c.target_id, rt.c.relation, rt.c.strength).where(
                        rt.c.user_id == user_id, rt.c.source_id.in_(chunk)
                    )
                ):
                    if int(r.target_id) in seen and r.source_id != r.target_id:
                        relations.append(RelationEdge(int(r.source_id), int(r.target_id), r.relation, float(r.strength)))
        return EntityGraph(entities, relations, total)

    def conversations(self, user_id: str, limit: int = 200) -> list[ConversationInfo]:
        ct = self.s.t.conversations
        with self.s.connection() as conn:
            rows = conn.execute(
                select(ct.c.conversation_id, ct.c.turn_count, ct.c.updated_at, ct.c.summary)
                .where(ct.c.user_id == user_id)
                .order_by(ct.c.updated_at.desc())
                .limit(limit)
            ).all()
        return [ConversationInfo(r.conversation_id, int(r.turn_count or 0), r.updated_at, r.summary) for r in rows]

    def conversation_window(
        self, user_id: str, conversation_id: str, limit: int, *, upto: int | None = None, after: int | None = None,
        around: int | None = None,
    ) -> DagWindow:  # fmt: skip
        tt, eg = self.s.t.turns, self.s.t.turn_edges
        mine = (tt.c.user_id == user_id, tt.c.conversation_id == conversation_id)
        cols = (tt.c.id, tt.c.role, tt.c.name, tt.c.kind, tt.c.content, tt.c.said_at, tt.c.archived, tt.c.summary_of,
                tt.c.summarized_by)  # fmt: skip
        with self.s.connection() as conn:
            total = int(conn.execute(select(func.count()).select_from(tt).where(*mine)).scalar_one())
            if after is not None:
                rows = conn.execute(select(*cols).where(*mine, tt.c.id > after).order_by(tt.c.id).limit(limit)).all()
            elif around is not None:
                older = conn.execute(select(*cols).where(*mine, tt.c.id <= around).order_by(tt.c.id.desc()).limit(limit // 2 + 1))
                newer = conn.execute(select(*cols).where(*mine, tt.c.id > around).order_by(tt.c.id).limit(limit - limit // 2 - 1))
                rows = [*older.all(), *newer.all()]
            else:
                last = (tt.c.id <= upto,) if upto is not None else ()
                rows = conn.execute(select(*cols).where(*mine, *last).order_by(tt.c.id.desc()).limit(limit)).all()
            nodes = {
                int(r.id): DagNode(
                    id=int(r.id), role=r.role, name=r.name, kind=r.kind or "message", content=r.content, said_at=r.said_at,
                    archived=bool(r.archived), summary_of=[int(x) for x in (r.summary_of or [])],
                    summarized_by=int(r.summarized_by) if r.summarized_by is not None else None,
                )
                for r in rows
            }  # fmt: skip
            for chunk in chunks(list(nodes), 500):
                for child, parent in conn.execute(
                    select(eg.c.child_id, eg.c.parent_id)
                    .where(eg.c.user_id == user_id, eg.c.child_id.in_(chunk))
                    .order_by(eg.c.child_id, eg.c.position)
                ):
                    nodes[int(child)].parents.append(int(parent))
            before = 0
            if nodes:
                older_than = tt.c.id < min(nodes)
                before = int(conn.execute(select(func.count()).select_from(tt).where(*mine, older_than)).scalar_one())
        ordered = sorted(nodes.values(), key=lambda n: n.id)
        return DagWindow(ordered, total, before, total - before - len(ordered))

    def decay_inputs(
        self, user_id: str, now: datetime, half_lives: Mapping[tuple[str, str], float], default_half_life: float
    ) -> list[DecayInput]:
        mt = self.s.t.memories
        half = case(
            *[(and_(mt.c.memory_type == mtype, mt.c.tier == tier), literal(days)) for (mtype, tier), days in half_lives.items()],
            else_=literal(default_half_life),
        )
        with self.s.connection() as conn:
            rows = conn.execute(
                select(
                    mt.c.id, mt.c.importance, mt.c.base_importance, self._epoch(mt.c.reinforced_at),
                    self._epoch(mt.c.last_accessed_at), mt.c.access_count, half, mt.c.tier, mt.c.memory_type,
                )
                .where(mt.c.user_id == user_id, mt.c.status == _ACTIVE, mt.c.pinned.is_(False),
                       or_(mt.c.expires_at.is_(None), mt.c.expires_at > now))
                .order_by(mt.c.id)
            ).all()  # fmt: skip
        return [
            DecayInput(
                int(r[0]), float(r[1]), float(r[2]), float(r[3]), None if r[4] is None else float(r[4]), int(r[5]),
                float(r[6]), r[7], r[8],
            )
            for r in rows
        ]  # fmt: skip

    def _epoch(self, col: Any) -> Any:
        """A time column as epoch seconds, read without building a datetime per row."""
        if self.s.engine.dialect.name == "postgresql":
            return func.extract("epoch", col)
        return type_coerce(col, Float)  # SQLite keeps epoch seconds

    def cleanup_counts(
        self, user_id: str, *, min_importance: float, deleted_before: datetime, expired_before: datetime
    ) -> CleanupCounts:
        mt = self.s.t.memories
        mine = mt.c.user_id == user_id
        deleted = MemoryStatus.DELETED.value

        def count(*where: Any) -> int:
            return int(conn.execute(select(func.count()).select_from(mt).where(mine, *where)).scalar_one())

        with self.s.connection() as conn:
            return CleanupCounts(
                faded=count(
                    mt.c.status == MemoryStatus.DECAYED.value, mt.c.pinned.is_(False), mt.c.tier.in_(_SHORT),
                    mt.c.importance < min_importance,
                ),
                purge_deleted=count(mt.c.status == deleted, mt.c.deleted_at < deleted_before),
                purge_expired=count(
                    mt.c.expires_at.is_not(None), mt.c.expires_at < expired_before,
                    or_(mt.c.status != deleted, mt.c.deleted_at >= deleted_before),
                ),
            )  # fmt: skip

    def scopes(self, user_id: str, limit: int = 200) -> Scopes:
        t = self.s.t
        out = Scopes()
        with self.s.connection() as conn:
            for name, target in (("agent_id", out.agents), ("run_id", out.runs)):
                counts: dict[str | None, list[int]] = {}
                for table, slot in ((t.memories, 0), (t.turns, 1)):
                    col = table.c[name]
                    for value, n in conn.execute(
                        select(col, func.count())
                        .where(table.c.user_id == user_id)
                        .group_by(col)
                        .order_by(func.count().desc())
                        .limit(limit)
                    ):
                        counts.setdefault(value, [0, 0])[slot] = int(n)
                target.extend(sorted(((k, m, n) for k, (m, n) in counts.items()), key=lambda r: (-r[1] - r[2], r[0] or "")))
        return out


def _entity(r: Any) -> EntityCount:
    return EntityCount(int(r.id), r.name, r.entity_type, int(r.mention_count))


def _later(a: datetime | None, b: Any) -> datetime | None:
    if b is None:
        return a
    if isinstance(b, (int, float)):  # SQLite aggregates lose the column type: epoch seconds
        b = stored_time(b)
    return b if a is None or b > a else a
