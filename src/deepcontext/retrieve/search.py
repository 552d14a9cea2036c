"""Hybrid retrieval: vector | keyword | graph legs over the same filters, fused by weighted RRF,
rescored, sorted, cut to the limit. Synchronous: the async facade runs it in a worker thread."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.fusion import access_factor, recency_factor, rescore, rrf
from deepcontext.store.base import MemoryFilters, Store
from deepcontext.text import keyword_terms, query_ngrams
from deepcontext.types import Memory

__all__ = ["Hit", "graph_leg", "hybrid_search"]


@dataclass(slots=True)
class Hit:
    memory: Memory
    score: float
    rrf_score: float
    legs: dict[str, int] = field(default_factory=dict)


def graph_leg(
    store: Store, user_id: str, query: str, k: int, depth: int, filters: MemoryFilters, now: datetime
) -> list[int]:
    """Memories linked to entities named in the query (whole words, case-insensitive) and to their
    neighbours up to ``depth`` hops. An entity weighs 1/(1+hops), times relation strength for
    neighbours, divided by log2(2 + mentions) so that entities mentioned everywhere (the user
    themself) count less than specific ones."""
    matched = store.match_entities(user_id, query_ngrams(query))
    if not matched or k <= 0:
        return []
    # a matched n-gram inside a longer matched one ("york" in "new york") is dropped
    names = sorted(matched, key=len, reverse=True)
    keep: list[str] = []
    for n in names:
        if not any(f" {n} " in f" {m} " for m in keep):
            keep.append(n)
    hood = store.entity_neighbourhood(user_id, [matched[n][0] for n in keep], depth)
    weight: dict[int, float] = {}
    for item in hood:
        w = (1.0 / (1 + item["depth"])) * (min(item["strength"], 2.0) if item["depth"] else 1.0)
        weight[item["id"]] = w / math.log2(2 + max(0, int(item.get("mention_count") or 0)))
    pairs = store.memories_for_entities(user_id, list(weight), filters, now, limit=max(50 * k, 500))
    scores: dict[int, float] = {}
    for mid, eid in pairs:
        scores[mid] = scores.get(mid, 0.0) + weight.get(eid, 0.0)
    order = sorted(scores, key=lambda m: -scores[m])  # stable: ties keep the store's importance order
    return order[:k]


def hybrid_search(
    store: Store,
    user_id: str,
    query: str,
    query_vector: np.ndarray | None,
    *,
    limit: int,
    filters: MemoryFilters,
    config: SearchConfig,
    now: datetime,
    include_graph: bool = True,
) -> list[Hit]:
    legs: dict[str, list[int]] = {}
    weights = {"vector": config.vector_weight, "keyword": config.keyword_weight, "graph": config.graph_weight}

    def k_for(factor: int) -> int:
        return max(limit * factor, config.min_leg_k) if factor else 0

    if config.vector_weight > 0 and query_vector is not None:
        legs["vector"] = [m for m, _ in store.vector_search(user_id, query_vector, k_for(config.vector_k_factor), filters, now)]
    if config.keyword_weight > 0:
        terms = keyword_terms(query)
        legs["keyword"] = [m for m, _ in store.keyword_search(user_id, terms, k_for(config.keyword_k_factor), filters, now)]
    if include_graph and config.graph_weight > 0:
        legs["graph"] = graph_leg(store, user_id, query, k_for(config.graph_k_factor), config.graph_depth, filters, now)

    fused = rrf(legs, weights, config.rrf_k)
    if not fused:
        return []
    memories = {m.id: m for m in store.get_memories(user_id, list(fused), details=False)}
    ranks = {leg: {mid: r for r, mid in enumerate(ids, start=1)} for leg, ids in legs.items()}
    hits: list[Hit] = []
    for mid, fscore in fused.items():
        mem = memories.get(mid)
        if mem is None:  # deleted between the legs and now
            continue
        score = rescore(
            fscore,
            importance=mem.importance,
            confidence=mem.confidence,
            recency=recency_factor(mem.said_at or mem.created_at, now, config.recency_half_life_days, config.recency_floor),
            access=access_factor(mem.access_count, config.access_boost, config.access_cap),
            use_importance=config.use_importance,
            use_confidence=config.use_confidence,
            importance_floor=config.importance_floor,
            confidence_floor=config.confidence_floor,
        )
        hits.append(
            Hit(
                memory=mem,
                score=score,
                rrf_score=fscore,
                legs={leg: r[mid] for leg, r in ranks.items() if mid in r},
            )
        )
    hits.sort(key=lambda h: (-h.score, -h.rrf_score, -h.memory.id))
    hits = hits[:limit]
    # details only for what is returned
    ids = [h.memory.id for h in hits]
    entities = store.memory_entities(user_id, ids)
    sources = store.sources(user_id, ids)
    for h in hits:
        h.memory.entities = entities.get(h.memory.id, [])
        h.memory.sources = sources.get(h.memory.id, [])
    return hits
