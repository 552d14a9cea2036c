"""Reads the inspector needs beyond the engine's public methods: per-user counts, the whole graph
of a user, a conversation's DAG, what the next lifecycle run would do. Blocking (run them in a
thread); every query filters on the stored user id it is given, which the caller got from a
:class:`~deepcontext.server.tenancy.Scope`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Float, and_, case, func, literal, or_, select, type_coerce

from deepcontext.lifecycle.cleanup import EXPIRY_GRACE
from deepcontext.lifecycle.decay import ACCESS_BONUS, LN2, SECONDS_PER_DAY, DecayPolicy
from deepcontext.lifecycle.runner import CONSOLIDATION_STATE, REL_TOLERANCE, consolidation_due, left_over
from deepcontext.types import MemoryStatus, MemoryTier, MemoryType

__all__ = [
    "DagNode",
    "GraphData",
    "LifecyclePreview",
    "UserSummary",
    "DagWindow",
    "conversation_dag",
    "conversations",
    "entity_search",
    "graph_data",
    "lifecycle_preview",
    "user_summaries",
]

#: how many ids go in one IN (...) list
_CHUNK = 500


def _chunks(seq: Sequence[Any], n: int = _CHUNK) -> list[Sequence[Any]]:
    return [seq[i : i + n] for i in range(0, len(seq), n)]


@dataclass(slots=True)
class UserSummary:
    user_id: str  # stored id
    turns: int = 0
    conversations: int = 0
    entities: int = 0
    tiers: dict[str, int] = field(default_factory=dict)  # active memories per tier
    statuses: dict[str, int] = field(default_factory=dict)  # memories per status
    last_activity: datetime | None = None

    @property
    def memories(self) -> int:
        return sum(self.statuses.values())


def user_summaries(store: Any, user_ids: Sequence[str]) -> list[UserSummary]:
    """Counts and last activity of these users, in the order given (a few grouped statements)."""
    t = store.t
    out = {u: UserSummary(u) for u in user_ids}
    with store.connection() as conn:
        for chunk in _chunks(list(user_ids)):
            mt, tt, et, ct = t.memories, t.turns, t.entities, t.conversations
            for u, tier, status, n, last in conn.execute(
                select(mt.c.user_id, mt.c.tier, mt.c.status, func.count(), func.max(mt.c.updated_at))
                .where(mt.c.user_id.in_(chunk))
                .group_by(mt.c.user_id, mt.c.tier, mt.c.status)
            ):
                s = out[u]
                s.statuses[status] = s.statuses.get(status, 0) + int(n)
                if status == MemoryStatus.ACTIVE.value:
                    s.tiers[tier] = s.tiers.get(tier, 0) + int(n)
                s.last_activity = _later(s.last_activity, last)
            for u, n, last in conn.execute(
                select(tt.c.user_id, func.count(), func.max(tt.c.created_at))
                .where(tt.c.user_id.in_(chunk))
                .group_by(tt.c.user_id)
            ):
                out[u].turns = int(n)
                out[u].last_activity = _later(out[u].last_activity, last)
            for u, n in conn.execute(select(et.c.user_id, func.count()).where(et.c.user_id.in_(chunk)).group_by(et.c.user_id)):
                out[u].entities = int(n)
            for u, n in conn.execute(select(ct.c.user_id, func.count()).where(ct.c.user_id.in_(chunk)).group_by(ct.c.user_id)):
                out[u].conversations = int(n)
    return [out[u] for u in user_ids]


def _later(a: datetime | None, b: Any) -> datetime | None:
    if b is None:
        return a
    if isinstance(b, (int, float)):  # SQLite aggregates lose the column type: epoch seconds
        from deepcontext.store.columns import stored_time

        b = stored_time(b)
    return b if a is None or b > a else a


# --- the knowledge graph -----------------------------------------------------------------------


@dataclass(slots=True)
class GraphData:
    """Entities (``{id, name, type, mentions, depth}``) and the relations among them."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]  # {source, target, relation, strength}
    total_entities: int
    centre: int | None = None


def entity_search(store: Any, user_id: str, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entities whose name contains ``text`` (case-insensitive), the most mentioned first."""
    from deepcontext.text import entity_norm

    et = store.t.entities
    norm = entity_norm(text)
    if not norm:
        return []
    pattern = "%" + norm.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    with store.connection() as conn:
        rows = conn.execute(
            select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count)
            .where(et.c.user_id == user_id, et.c.norm_name.like(pattern, escape="\\"))
            .order_by(et.c.mention_count.desc(), et.c.id)
            .limit(limit)
        ).all()
    return [{"id": int(r.id), "name": r.name, "type": r.entity_type, "mentions": int(r.mention_count)} for r in rows]


def graph_data(store: Any, user_id: str, *, centre: int | None, depth: int, limit: int) -> GraphData:
    """The ``limit`` most mentioned entities of a user and their relations, or (with ``centre``) the
    entity's neighbourhood up to ``depth`` hops, at most ``limit`` entities."""
    et, rt = store.t.entities, store.t.relations
    with store.connection() as conn:
        total = int(conn.execute(select(func.count()).select_from(et).where(et.c.user_id == user_id)).scalar_one())
        depths: dict[int, int] = {}
        if centre is None:
            rows = conn.execute(
                select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count)
                .where(et.c.user_id == user_id)
                .order_by(et.c.mention_count.desc(), et.c.id)
                .limit(limit)
            ).all()
        else:
            hood = store.entity_neighbourhood(user_id, [centre], depth, max_per_level=limit)
            for h in hood:
                depths.setdefault(int(h["id"]), int(h["depth"]))
            ids = list(depths)[:limit]
            rows = []
            for chunk in _chunks(ids):
                rows += conn.execute(
                    select(et.c.id, et.c.name, et.c.entity_type, et.c.mention_count).where(
                        et.c.user_id == user_id, et.c.id.in_(chunk)
                    )
                ).all()
        nodes = [
            {
                "id": int(r.id),
                "name": r.name,
                "type": r.entity_type,
                "mentions": int(r.mention_count),
                "depth": depths.get(int(r.id)),
            }
            for r in rows
        ]
        ids = [n["id"] for n in nodes]
        edges: list[dict[str, Any]] = []
        seen = set(ids)
        for chunk in _chunks(ids):
            for r in conn.execute(
                select(rt.c.source_id, rt.c.target_id, rt.c.relation, rt.c.strength).where(
                    rt.c.user_id == user_id, rt.c.source_id.in_(chunk)
                )
            ):
                if int(r.target_id) in seen and r.source_id != r.target_id:
                    edges.append(
                        {
                            "source": int(r.source_id),
                            "target": int(r.target_id),
                            "relation": r.relation,
                            "strength": float(r.strength),
                        }
                    )
    return GraphData(nodes=nodes, edges=edges, total_entities=total, centre=centre)


# --- conversations -----------------------------------------------------------------------------


def conversations(store: Any, user_id: str, limit: int = 200) -> list[dict[str, Any]]:
    """The user's conversations, the most recently updated first."""
    ct = store.t.conversations
    with store.connection() as conn:
        rows = conn.execute(
            select(ct.c.conversation_id, ct.c.turn_count, ct.c.updated_at, ct.c.summary)
            .where(ct.c.user_id == user_id)
            .order_by(ct.c.updated_at.desc())
            .limit(limit)
        ).all()
    return [
        {"id": r.conversation_id, "turns": int(r.turn_count or 0), "updated_at": r.updated_at, "summary": r.summary} for r in rows
    ]


@dataclass(slots=True)
class DagNode:
    id: int
    role: str
    name: str | None
    kind: str
    content: str
    said_at: datetime
    archived: bool
    parents: list[int] = field(default_factory=list)
    summary_of: list[int] = field(default_factory=list)
    summarized_by: int | None = None


@dataclass(slots=True)
class DagWindow:
    """A window of a conversation's turns (oldest first) and where it sits in the conversation."""

    nodes: list[DagNode]
    total: int  # the conversation's turns
    before: int  # turns older than the window
    after: int  # turns newer than the window


def conversation_dag(
    store: Any, user_id: str, conversation_id: str, limit: int, *, upto: int | None = None,
    after: int | None = None, around: int | None = None,
) -> DagWindow:  # fmt: skip
    """``limit`` turns of a conversation with their parents: the last ones; or the last ones up to
    turn id ``upto``; or the first ones after turn id ``after``; or those ``around`` a turn (half
    before, half after), so a link to any turn opens the window that holds it."""
    tt, eg = store.t.turns, store.t.turn_edges
    mine = (tt.c.user_id == user_id, tt.c.conversation_id == conversation_id)
    cols = (tt.c.id, tt.c.role, tt.c.name, tt.c.kind, tt.c.content, tt.c.said_at, tt.c.archived, tt.c.summary_of,
            tt.c.summarized_by)  # fmt: skip
    with store.connection() as conn:
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
        for chunk in _chunks(list(nodes)):
            for child, parent in conn.execute(
                select(eg.c.child_id, eg.c.parent_id)
                .where(eg.c.user_id == user_id, eg.c.child_id.in_(chunk))
                .order_by(eg.c.child_id, eg.c.position)
            ):
                nodes[int(child)].parents.append(int(parent))
        before = 0
        if nodes:
            first = min(nodes)
            before = int(conn.execute(select(func.count()).select_from(tt).where(*mine, tt.c.id < first)).scalar_one())
    ordered = sorted(nodes.values(), key=lambda n: n.id)
    return DagWindow(ordered, total, before, total - before - len(ordered))


# --- lifecycle ----------------------------------------------------------------------------------


@dataclass(slots=True)
class LifecyclePreview:
    """What a lifecycle run now would do (read only; the run decides again when it runs)."""

    policy: DecayPolicy
    now: datetime
    active: int = 0
    would_lower: int = 0
    would_deactivate: list[dict[str, Any]] = field(default_factory=list)
    would_soft_delete: int = 0
    short_term: int = 0
    consolidation_threshold: int = 0
    consolidation_left_over: int = 0  # what the last run left as it was: the next must clear the threshold above it
    consolidation_flagged: bool = False
    would_purge_deleted: int = 0
    would_purge_expired: int = 0
    curves: list[dict[str, Any]] = field(default_factory=list)  # memories whose curve is drawn

    @property
    def consolidation_due(self) -> bool:
        """Exactly the runner's rule, so the page never says "due" for a run that consolidates nothing."""
        return consolidation_due(
            self.short_term, self.consolidation_threshold, self.consolidation_left_over, flagged=self.consolidation_flagged
        )


def _epoch(store: Any, col: Any) -> Any:
    """A time column as epoch seconds, read without building a datetime per row."""
    if store.engine.dialect.name == "postgresql":
        return func.extract("epoch", col)
    return type_coerce(col, Float)  # SQLite keeps epoch seconds


def lifecycle_preview(store: Any, settings: Any, user_id: str, now: datetime, *, curves: int = 12) -> LifecyclePreview:
    """Apply the forgetting curve to the user's active memories as of ``now`` without writing, and
    count what cleanup and consolidation would take. The curve is the runner's
    (:meth:`DecayPolicy.importance`), computed for all memories at once with numpy."""
    policy = DecayPolicy.from_settings(settings)
    mt = store.t.memories
    half = case(
        *[
            (and_(mt.c.memory_type == t.value, mt.c.tier == r.value), literal(policy.half_life(t.value, r.value)))
            for t in MemoryType
            for r in MemoryTier
        ],
        else_=literal(policy.half_life_days),
    )
    with store.connection() as conn:
        rows = conn.execute(
            select(
                mt.c.id, mt.c.importance, mt.c.base_importance, _epoch(store, mt.c.reinforced_at),
                _epoch(store, mt.c.last_accessed_at), mt.c.access_count, half, mt.c.tier, mt.c.memory_type,
            )
            .where(mt.c.user_id == user_id, mt.c.status == MemoryStatus.ACTIVE.value, mt.c.pinned.is_(False),
                   or_(mt.c.expires_at.is_(None), mt.c.expires_at > now))
            .order_by(mt.c.id)
        ).all()  # fmt: skip
    pv = LifecyclePreview(policy=policy, now=now, active=len(rows))
    pv.consolidation_threshold = int(settings.consolidation_threshold)
    pv.consolidation_left_over = left_over(store.kv_get(user_id, *CONSOLIDATION_STATE))
    if rows:
        cols = list(zip(*rows, strict=True))
        ids = np.asarray(cols[0], dtype=np.int64)
        stored = np.asarray(cols[1], dtype=np.float64)
        base = np.asarray(cols[2], dtype=np.float64)
        reinforced = np.asarray(cols[3], dtype=np.float64)
        accessed = np.asarray([np.nan if v is None else float(v) for v in cols[4]], dtype=np.float64)
        count = np.asarray(cols[5], dtype=np.float64)
        half_life = np.asarray(cols[6], dtype=np.float64) * (1 + ACCESS_BONUS * np.maximum(count, 0))
        ref = np.fmax(reinforced, accessed)  # the later of the two (NaN: never accessed)
        days = (now.timestamp() - ref) / SECONDS_PER_DAY
        with np.errstate(divide="ignore", invalid="ignore"):
            # a time in the future (an import may carry one) does not decay: exp of its age would overflow
            age = np.maximum(days, 0)
            imp = np.where((half_life > 0) & (days > 0), base * np.exp(-LN2 * age / np.where(half_life > 0, half_life, 1)), base)
        tiers, types = cols[7], cols[8]
        fading = imp < policy.min_importance
        short = np.isin(np.asarray(tiers, dtype=object), [MemoryTier.WORKING.value, MemoryTier.SHORT_TERM.value])
        pv.would_deactivate = [
            {"id": int(ids[i]), "importance": float(imp[i]), "tier": tiers[i], "type": types[i]} for i in np.flatnonzero(fading)
        ]
        pv.would_soft_delete = int((fading & short).sum())
        fading_short_term = int((fading & (np.asarray(tiers, dtype=object) == MemoryTier.SHORT_TERM.value)).sum())
        pv.would_lower = int((~fading & (imp < stored - np.maximum(1e-9, REL_TOLERANCE * stored))).sum())
        # the curves drawn: the memories closest to being forgotten, then the strongest, for contrast
        order = np.argsort(imp, kind="stable")
        weak, strong = curves - curves // 3, curves // 3
        chosen = list(dict.fromkeys([*order[:weak].tolist(), *(order[len(order) - strong :].tolist() if strong else [])]))
        pv.curves = [
            {"id": int(ids[i]), "tier": tiers[i], "type": types[i], "importance": float(imp[i]), "base": float(base[i]),
             "half_life": float(half_life[i]), "age_days": float(days[i])}
            for i in chosen
        ]  # fmt: skip
    # the run decays first: the short-term memories it deactivates are not there to consolidate
    pv.short_term = store.count_short_term(user_id, now) - (fading_short_term if rows else 0)
    pv.consolidation_flagged = store.consolidation_flag(user_id)
    mt = store.t.memories
    retention = timedelta(days=float(settings.deleted_retention_days))
    with store.connection() as conn:
        pv.would_soft_delete += int(
            conn.execute(
                select(func.count()).select_from(mt).where(
                    mt.c.user_id == user_id, mt.c.status == MemoryStatus.DECAYED.value, mt.c.pinned.is_(False),
                    mt.c.tier.in_([MemoryTier.WORKING.value, MemoryTier.SHORT_TERM.value]),
                    mt.c.importance < policy.min_importance,
                )
            ).scalar_one()
        )  # fmt: skip
        pv.would_purge_deleted = int(
            conn.execute(
                select(func.count()).select_from(mt).where(
                    mt.c.user_id == user_id, mt.c.status == MemoryStatus.DELETED.value, mt.c.deleted_at < now - retention
                )
            ).scalar_one()
        )  # fmt: skip
        pv.would_purge_expired = int(
            conn.execute(
                select(func.count()).select_from(mt).where(
                    mt.c.user_id == user_id, mt.c.expires_at.is_not(None), mt.c.expires_at < now - EXPIRY_GRACE,
                    or_(mt.c.status != MemoryStatus.DELETED.value, and_(mt.c.deleted_at >= now - retention)),
                )
            ).scalar_one()
        )  # fmt: skip
    return pv


def retrievals(store: Any, user_id: str, memory_id: int, limit: int) -> list[tuple[Any, int]]:
    """The newest recorded calls that returned the memory, with its rank in each."""
    from deepcontext.store import memory_retrievals

    return memory_retrievals(store, user_id, memory_id, limit=limit)


@dataclass(slots=True)
class Scopes:
    """A user's agents and runs: memories and turns of each (None: memories without one)."""

    agents: list[tuple[str | None, int, int]] = field(default_factory=list)
    runs: list[tuple[str | None, int, int]] = field(default_factory=list)


def agents_and_runs(store: Any, user_id: str, limit: int = 200) -> Scopes:
    """The agents and the runs the user's memories and turns were stored under, most used first."""
    t = store.t
    out = Scopes()
    with store.connection() as conn:
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
