"""Reads the inspector needs beyond the engine's public methods: per-user counts, the whole graph
of a user, a conversation's DAG, what the next lifecycle run would do. Blocking (run them in a
thread); every query filters on the stored user id it is given, which the caller got from a
:class:`~deepcontext.server.tenancy.Scope`. The SQL is the store's (``store.inspection``); this
module shapes it for the pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from deepcontext.lifecycle.cleanup import EXPIRY_GRACE
from deepcontext.lifecycle.decay import ACCESS_BONUS, LN2, SECONDS_PER_DAY, DecayPolicy
from deepcontext.lifecycle.runner import CONSOLIDATION_STATE, REL_TOLERANCE, consolidation_due, left_over
from deepcontext.store import DagNode, DagWindow, Scopes, Store, UserSummary
from deepcontext.types import MemoryTier, MemoryType

__all__ = [
    "DagNode",
    "DagWindow",
    "GraphData",
    "LifecyclePreview",
    "Scopes",
    "UserSummary",
    "agents_and_runs",
    "conversation_dag",
    "conversations",
    "entity_search",
    "graph_data",
    "lifecycle_preview",
    "retrievals",
    "user_summaries",
]


def user_summaries(store: Store, user_ids: Sequence[str]) -> list[UserSummary]:
    """Counts and last activity of these users, in the order given (a few grouped statements)."""
    return store.inspection.user_summaries(user_ids)


# --- the knowledge graph -----------------------------------------------------------------------


@dataclass(slots=True)
class GraphData:
    """Entities (``{id, name, type, mentions, depth}``) and the relations among them."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]  # {source, target, relation, strength}
    total_entities: int
    centre: int | None = None


def entity_search(store: Store, user_id: str, text: str, limit: int = 20) -> list[dict[str, Any]]:
    """Entities whose name contains ``text`` (case-insensitive), the most mentioned first."""
    return [e._asdict() for e in store.inspection.entity_search(user_id, text, limit)]


def graph_data(store: Store, user_id: str, *, centre: int | None, depth: int, limit: int) -> GraphData:
    """The ``limit`` most mentioned entities of a user and their relations, or (with ``centre``) the
    entity's neighbourhood up to ``depth`` hops, at most ``limit`` entities."""
    depths: dict[int, int] = {}
    if centre is not None:
        for h in store.entity_neighbourhood(user_id, [centre], depth, max_per_level=limit):
            depths.setdefault(int(h["id"]), int(h["depth"]))
    graph = store.inspection.entity_graph(user_id, None if centre is None else list(depths), limit)
    nodes = [{**e._asdict(), "depth": depths.get(e.id)} for e in graph.entities]
    edges = [e._asdict() for e in graph.relations]
    return GraphData(nodes=nodes, edges=edges, total_entities=graph.total_entities, centre=centre)


# --- conversations -----------------------------------------------------------------------------


def conversations(store: Store, user_id: str, limit: int = 200) -> list[dict[str, Any]]:
    """The user's conversations, the most recently updated first."""
    return [c._asdict() for c in store.inspection.conversations(user_id, limit)]


def conversation_dag(
    store: Store, user_id: str, conversation_id: str, limit: int, *, upto: int | None = None,
    after: int | None = None, around: int | None = None,
) -> DagWindow:  # fmt: skip
    """``limit`` turns of a conversation with their parents: the last ones; or the last ones up to
    turn id ``upto``; or the first ones after turn id ``after``; or those ``around`` a turn (half
    before, half after), so a link to any turn opens the window that holds it."""
    return store.inspection.conversation_window(user_id, conversation_id, limit, upto=upto, after=after, around=around)


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


def lifecycle_preview(store: Store, settings: Any, user_id: str, now: datetime, *, curves: int = 12) -> LifecyclePreview:
    """Apply the forgetting curve to the user's active memories as of ``now`` without writing, and
    count what cleanup and consolidation would take. The curve is the runner's
    (:meth:`DecayPolicy.importance`), computed for all memories at once with numpy."""
    policy = DecayPolicy.from_settings(settings)
    half_lives = {(t.value, r.value): policy.half_life(t.value, r.value) for t in MemoryType for r in MemoryTier}
    rows = store.inspection.decay_inputs(user_id, now, half_lives, policy.half_life_days)
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
    retention = timedelta(days=float(settings.deleted_retention_days))
    counts = store.inspection.cleanup_counts(
        user_id, min_importance=policy.min_importance, deleted_before=now - retention, expired_before=now - EXPIRY_GRACE
    )
    pv.would_soft_delete += counts.faded
    pv.would_purge_deleted = counts.purge_deleted
    pv.would_purge_expired = counts.purge_expired
    return pv


def retrievals(store: Store, user_id: str, memory_id: int, limit: int) -> list[tuple[Any, int]]:
    """The newest recorded calls that returned the memory, with its rank in each."""
    return store.activity_log.retrievals(user_id, memory_id, limit=limit)


def agents_and_runs(store: Store, user_id: str, limit: int = 200) -> Scopes:
    """The agents and the runs the user's memories and turns were stored under, most used first."""
    return store.inspection.scopes(user_id, limit)
