"""Hybrid retrieval: vector | keyword | graph legs over the same filters, fused by weighted RRF,
rescored, sorted, cut to the limit, then scored by calibrated relevance (:mod:`.calibration`).
Synchronous: the async facade runs it in a worker thread. The legs, and the candidates they gather,
are :mod:`.legs`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.language.standing_model import StandingModel
from deepcontext.retrieve.asked import asked_slot, asks_about_user, slot_factor
from deepcontext.retrieve.calibration import calibrate
from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.dates import query_window
from deepcontext.retrieve.fusion import access_factor, recency_factor, rescore, rrf, spread
from deepcontext.retrieve.legs import (
    HUB_SHARE,
    MAX_GRAPH_ENTITIES,
    Candidates,
    VectorHits,
    gather,
    graph_leg,
    leg_k,
    start_vector_leg,
)
from deepcontext.retrieve.supersession import about_the_past, outdated_factor
from deepcontext.store.interface import MemoryFilters, RankFields, Store
from deepcontext.types import Memory

__all__ = ["HUB_SHARE", "MAX_GRAPH_ENTITIES", "MAX_SOURCES", "Candidates", "Hit", "Ranked", "gather", "graph_leg", "hybrid_search",
           "VectorHits", "leg_k", "neighbour_reader", "rank", "start_vector_leg", "superseder_reader"]  # fmt: skip

#: provenance listed per search result (a memory seen again many times cites many turns; get() lists all)
MAX_SOURCES = 50


@dataclass(slots=True)
class Hit:
    memory: Memory
    #: the ranking's score until :func:`.calibration.calibrate` makes it the calibrated relevance
    score: float
    rrf_score: float
    legs: dict[str, int] = field(default_factory=dict)
    #: cosine of the query with the best member of the result's group, if the vector leg found one
    similarity: float | None = None
    #: linked memories, most similar first (when asked for)
    links: list[int] = field(default_factory=list)


def hybrid_search(*args: Any, **kwargs: Any) -> list[Hit]:
    """Hybrid search (see :func:`_hybrid_search`), all reads on one connection / snapshot."""
    store: Store = args[0] if args else kwargs["store"]
    with store.reading():
        return _hybrid_search(*args, **kwargs)


@dataclass(slots=True)
class Ranked:
    """One result of :func:`rank`: its ranking score, fused score, representative memory, group key,
    each leg's rank of the group and the best cosine of its members."""

    score: float
    rrf_score: float
    memory_id: int
    group: Any
    legs: dict[str, int]
    similarity: float | None = None


#: reads the rank fields of the memories citing some turns (:meth:`Store.rank_fields_citing`)
NeighbourReader = Callable[[list[int]], Mapping[int, RankFields]]
#: reads the memories that superseded what some turns said (:meth:`Store.superseders_citing`)
SupersederReader = Callable[[list[int]], Mapping[int, tuple[int, RankFields]]]


def _outdated(members: list[int], fields: Mapping[int, RankFields], now: datetime) -> datetime | None:
    """When the group's content stopped being true (every member's ``valid_to`` passed), else None."""
    vt = [f.valid_to for m in members if (f := fields.get(m)) is not None]
    if not vt or not all(v is not None and v <= now for v in vt):
        return None
    return max(v for v in vt if v is not None)


def _below_replacements(
    final: dict[Any, float], groups: dict[Any, list[int]], fields: dict[int, RankFields], now: datetime
) -> dict[Any, float]:
    """A group whose content a later statement superseded (every member's ``valid_to`` passed) ranks
    below the statement that superseded it when that is a result too: ``valid_to`` is the moment the
    new version became true, so the results said (or dated) then are the replacement. Weighing alone
    (``outdated_factor``) cannot promise it: "I drive a Nissan Leaf" matches "What car do I drive?"
    far better than "I traded the Leaf in for a Polestar 2" does."""
    ends = {g: t for g in final if (t := _outdated(groups[g], fields, now)) is not None}
    if not ends:
        return final
    best_at: dict[datetime, float] = {}
    for g, score in final.items():
        if g in ends:
            continue
        for m in groups[g]:
            f = fields.get(m)
            if f is None:
                continue
            for t in (f.when, f.occurred_at):
                if t is not None and score > best_at.get(t, 0.0):
                    best_at[t] = score
    out = dict(final)
    for g, t in ends.items():
        cap = best_at.get(t)
        if cap is not None and out[g] >= cap:
            out[g] = cap * 0.999
    return out


def _lift_superseders(
    final: dict[Any, float],
    undamped: Mapping[Any, float],
    groups: dict[Any, list[int]],
    fields: dict[int, RankFields],
    config: SearchConfig,
    now: datetime,
    read: SupersederReader,
    limit: int,
) -> list[Any]:
    """What superseded a group among the best ``limit`` ranks where that group would rank were it
    still true: "I ride a Honda to work" matches "What do I ride to work?" far better than "Sold the
    Honda" does, and the change is the answer. Superseders that are no candidate join as groups of
    their own (``groups`` and ``fields`` grow); the new groups are returned."""
    best = sorted(final, key=lambda g: -final[g])[:limit]
    old = {g: groups[g] for g in best if _outdated(groups[g], fields, now) is not None}
    turns = {
        f.first_turn: g for g, ms in old.items() for m in ms if (f := fields.get(m)) is not None and f.first_turn is not None
    }
    if not turns:
        return []
    group_of = {m: g for g, ms in groups.items() for m in ms}
    added: list[Any] = []
    for mid, (turn, f) in read(sorted(turns)).items():
        if not f.active:
            continue
        g = group_of.get(mid)
        if g is None:  # grouped as candidates are: by the turn first said at, or one group each
            g = ("turn", f.first_turn) if config.group_by_source and f.first_turn is not None else mid
            if g in groups:
                groups[g].append(mid)
            else:
                groups[g] = [mid]
                added.append(g)
            fields[mid] = f
            group_of[mid] = g
        final[g] = max(final.get(g, 0.0), undamped[turns[turn]])
    return added


def neighbour_reader(store: Store, user_id: str, filters: MemoryFilters, now: datetime) -> NeighbourReader:
    """What :func:`rank` reads the neighbour turns' memories with, under the search's filters."""
    return lambda turns: store.rank_fields_citing(user_id, turns, filters, now)


def superseder_reader(store: Store, user_id: str, filters: MemoryFilters, now: datetime) -> SupersederReader:
    """What :func:`rank` reads the superseders of outdated results with, under the search's filters."""
    return lambda turns: store.superseders_citing(user_id, turns, filters, now)


def rank(
    cands: Candidates,
    config: SearchConfig,
    now: datetime,
    limit: int,
    neighbours: NeighbourReader | None = None,
    *,
    user_name: str | None = None,
    superseders: SupersederReader | None = None,
) -> list[Ranked]:
    """Fuse, rescore and spread the candidates; the best ``limit`` groups, best first.

    With ``neighbours`` (and ``config.neighbour_turns``), the turns next to the best groups' turns
    (the reply after a matching question, the question before a matching reply) that no leg found
    join as groups of their own, scored only by what the spreading lends them (see
    :func:`_neighbour_groups`)."""
    legs, fields, sims = cands.legs, cands.fields, cands.sims
    if not any(legs.values()):
        return []
    weights = {
        "vector": config.vector_weight, "keyword": config.keyword_weight, "graph": config.graph_weight,
        "profile": config.profile_weight,
    }  # fmt: skip
    all_ids = list(dict.fromkeys(m for ids in legs.values() for m in ids))
    if config.group_by_source:
        first_turns = {mid: f.first_turn for mid, f in fields.items() if f.first_turn is not None}
        groups, legs_g, fused = _group_by_source(legs, first_turns, weights, config.rrf_k)
    else:
        groups = {mid: [mid] for mid in all_ids}
        legs_g = legs
        fused = rrf(legs, weights, config.rrf_k)
    window = query_window(cands.query, now) if config.date_boost > 0 else None
    ranks = {leg: {g: r for r, g in enumerate(ids, start=1)} for leg, ids in legs_g.items()}
    ranks["fused"] = {g: r for r, g in enumerate(sorted(fused, key=lambda g: -fused[g]), start=1)}
    own = rrf(legs, weights, config.rrf_k) if config.group_by_source else fused
    past = about_the_past(cands.query)
    asked = asked_slot(cands.query, user_name) if config.slot_boost > 0 else None
    final: dict[Any, float] = {}
    undamped: dict[Any, float] = {}  # without the outdated weight: where the group ranks were it still true
    rep: dict[Any, int] = {}
    for gkey, fscore in fused.items():
        # the group's representative: a pinned (key) memory if there is one, else the member that
        # matched best on its own
        members = [m for m in groups[gkey] if (f := fields.get(m)) is not None and f.active]
        if not members:  # changed between the legs and now
            continue
        mid = members[0]
        if len(members) > 1:  # most groups have one member
            mid = max(members, key=lambda m: (fields[m].pinned, own.get(m, 0.0), fields[m].importance, m))
        # the group ranks by its best rescored member (a turn and its fact are one piece of news)
        score = whole = 0.0
        for m in members:
            f = fields[m]
            s = _rescore(fscore, f, config, now) * slot_factor(f, asked, config.slot_boost)
            whole = s if s > whole else whole
            s *= outdated_factor(f, now, config.outdated_factor, past=past)
            score = s if s > score else score
        if window is not None and any(window.contains(fields[m].when, fields[m].occurred_at) for m in members):
            score *= 1.0 + config.date_boost
            whole *= 1.0 + config.date_boost
        final[gkey], undamped[gkey], rep[gkey] = score, whole, mid
    own_final = dict(final)
    turn_of: dict[Any, int] = {}
    conv_of: dict[Any, str] = {}
    if config.before_weight > 0 or config.after_weight > 0 or config.session_weight > 0:
        # spread on the final scores, so a neighbour's boosts cannot lift a borrower past its lender
        for gkey in final:
            f = fields.get(groups[gkey][0])
            if f is not None and f.first_turn is not None and f.conversation_id is not None:
                turn_of[gkey], conv_of[gkey] = f.first_turn, f.conversation_id
        final = _spread(final, turn_of, conv_of, config)
    if not past:
        if superseders is not None:
            for g in _lift_superseders(final, undamped, groups, fields, config, now, superseders, limit):
                fused[g], own_final[g] = 0.0, final[g]
                rep[g] = max(groups[g], key=lambda m: (fields[m].pinned, fields[m].importance, m))
        final = _below_replacements(final, groups, fields, now)
    scored = [(score, fused[g], rep[g], g) for g, score in final.items()]
    # a borrower lifted to its lender's score ties it; the lender, better on its own, goes first
    scored.sort(key=lambda x: (-x[0], -own_final[x[3]], -x[1], -x[2]))
    out = [
        Ranked(
            score,
            fscore,
            mid,
            gkey,
            {leg: r[gkey] for leg, r in ranks.items() if gkey in r},
            max((sims[m] for m in groups[gkey] if m in sims), default=None),
        )
        for score, fscore, mid, gkey in scored[:limit]
    ]
    if neighbours is None or not config.neighbour_turns or (config.before_weight <= 0 and config.after_weight <= 0):
        return out
    # turns and memories that are candidates already (whatever their group) are not read again
    held = {m for g in fused for m in groups[g]}
    lent = _neighbour_groups(
        out, own_final, turn_of, conv_of, config, neighbours,
        held_turns={t for m in held if (f := fields.get(m)) is not None and (t := f.first_turn) is not None},
        held_memories=held, n_fused=len(fused),
    )  # fmt: skip
    if not lent:
        return out
    # a neighbour group ties its lender at most; the lender goes first (it was ranked before)
    order = {r.group: i for i, r in enumerate(out)}
    merged = sorted([*out, *lent], key=lambda r: (-r.score, order.get(r.group, len(order))))
    return merged[:limit]


def _spread(final: dict[Any, float], turn_of: dict[Any, int], conv_of: dict[Any, str], config: SearchConfig) -> dict[Any, float]:
    return spread(
        final, turn_of, conv_of,
        before=config.before_weight, after=config.after_weight, session=config.session_weight,
        session_top=config.session_top,
    )  # fmt: skip


def _neighbour_groups(
    top: list[Ranked],
    own_final: dict[Any, float],
    turn_of: dict[Any, int],
    conv_of: dict[Any, str],
    config: SearchConfig,
    read: NeighbourReader,
    *,
    held_turns: set[int],
    held_memories: set[int],
    n_fused: int,
) -> list[Ranked]:
    """The turns next to the ``top`` groups' turns that no candidate comes from, as groups of their
    own scored by the spreading alone. A leg finds "Yes, last Tuesday!" by none of its words; the
    question it answers lifts it (see :func:`.fusion.spread`). Their memories take no part in the
    fusion, so the candidates rank exactly as without them."""
    wanted: set[int] = set()
    for r in top:
        t = turn_of.get(r.group)
        if t is not None:
            wanted.update(
                n for n, w in ((t + 1, config.before_weight), (t - 1, config.after_weight)) if w > 0 and n not in held_turns
            )
    if not wanted:
        return []
    new: dict[Any, list[tuple[int, RankFields]]] = {}
    new_turn: dict[Any, int] = {}
    new_conv: dict[Any, str] = {}
    for mid, f in read(sorted(wanted)).items():
        if mid in held_memories or not f.active or f.first_turn not in wanted or f.conversation_id is None:
            continue
        # grouped by the turn a memory was first said at, as candidates are (or one group each)
        g: Any = ("turn", f.first_turn) if config.group_by_source else mid
        new.setdefault(g, []).append((mid, f))
        new_turn[g], new_conv[g] = f.first_turn, f.conversation_id
    if not new:
        return []
    # only their neighbours lend to them; the whole conversation only when it lends a session share
    near = {t + d for t in new_turn.values() for d in (-1, 1)}
    lenders = own_final if config.session_weight > 0 else {g: v for g, v in own_final.items() if turn_of.get(g) in near}
    lifted = _spread({**lenders, **dict.fromkeys(new, 0.0)}, {**turn_of, **new_turn}, {**conv_of, **new_conv}, config)
    reps = {g: max(ms, key=lambda x: (x[1].pinned, x[1].importance, x[0]))[0] for g, ms in new.items()}
    # a neighbour that nothing lifted is not a result; ties by memory id, as the ranking breaks them
    lent = sorted((g for g in new if lifted[g] > 0), key=lambda g: (-lifted[g], -reps[g]))
    return [Ranked(lifted[g], 0.0, reps[g], g, {"neighbour": i, "fused": n_fused + i}) for i, g in enumerate(lent, start=1)]


def _hybrid_search(
    store: Store,
    user_id: str,
    query: str,
    query_vector: np.ndarray | Future[np.ndarray] | None,
    *,
    limit: int,
    filters: MemoryFilters,
    config: SearchConfig,
    now: datetime,
    include_graph: bool = True,
    links_per_memory: int = 0,
    vector_hits: Future[VectorHits] | None = None,
    standing: StandingModel | None = None,
) -> list[Hit]:
    """:func:`gather`, :func:`rank`, then the full memories (with details) of what is returned."""
    cands = gather(
        store, user_id, query, query_vector, limit=limit, filters=filters, config=config, now=now,
        include_graph=include_graph, vector_hits=vector_hits, standing=standing,
    )  # fmt: skip
    # the user's own slots are keyed by their name once known: read only for a question about them
    user_name = store.user_name(user_id) if config.slot_boost > 0 and asks_about_user(query) else None
    ranked = rank(
        cands, config, now, limit, neighbour_reader(store, user_id, filters, now), user_name=user_name,
        superseders=superseder_reader(store, user_id, filters, now),
    )  # fmt: skip
    memories, links = store.result_details(
        user_id, [r.memory_id for r in ranked], max_sources=MAX_SOURCES, links_per_memory=links_per_memory
    )
    hits = []
    for r in ranked:
        mem = memories.get(r.memory_id)
        if mem is not None:
            hits.append(
                Hit(
                    memory=mem, score=r.score, rrf_score=r.rrf_score, legs=r.legs, similarity=r.similarity,
                    links=links.get(r.memory_id, []),
                )
            )  # fmt: skip
    # last: the ranking's scores become calibrated relevance, in the same order
    return calibrate(hits)


def _rescore(fscore: float, f: Any, config: SearchConfig, now: datetime) -> float:
    return rescore(
        fscore,
        importance=f.importance,
        confidence=f.confidence,
        recency=recency_factor(f.when, now, config.recency_half_life_days, config.recency_floor),
        access=access_factor(f.access_count, config.access_boost, config.access_cap),
        use_importance=config.use_importance,
        use_confidence=config.use_confidence,
        importance_floor=config.importance_floor,
        confidence_floor=config.confidence_floor,
    )


def _group_by_source(
    legs: dict[str, list[int]],
    sources: dict[int, int],
    weights: dict[str, float],
    k: int,
) -> tuple[dict[Any, list[int]], dict[str, list[Any]], dict[Any, float]]:
    """Fuse at the level of *what the memories come from*: memories derived from the same turn (the
    turn's own memory and the facts extracted from it) form one group that takes, in each leg, the
    rank of its best member. Returns (group -> members in order of appearance, legs over groups,
    fused scores)."""

    def key(mid: int) -> Any:
        first = sources.get(mid)
        return ("turn", first) if first is not None else ("memory", mid)

    groups: dict[Any, list[int]] = {}
    legs_g: dict[str, list[Any]] = {}
    for leg, ids in legs.items():
        seen: dict[Any, None] = {}
        for mid in ids:
            g = key(mid)
            members = groups.setdefault(g, [])
            if mid not in members:
                members.append(mid)
            seen.setdefault(g, None)
        legs_g[leg] = list(seen)
    return groups, legs_g, rrf(legs_g, weights, k)
