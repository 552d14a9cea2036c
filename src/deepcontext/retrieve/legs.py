"""The legs of a hybrid search and the candidates they gather: the keyword leg, the graph leg
(entities the query names and their neighbours), the vector leg (which may run on another thread
meanwhile) and the profile leg (standing facts, for requests), each a list of memory ids in rank
order, with the fields the ranking needs of every candidate. They stand apart from
:mod:`deepcontext.retrieve.search`, which fuses and rescores the candidates
(:func:`~deepcontext.retrieve.search.rank`) and reads the results: the legs read the store, the
ranking works on what they found.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from deepcontext.language.standing import asks_for_time, bears_on_time
from deepcontext.language.standing_model import StandingModel
from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.profile import profile_leg, uses_profile, vector_pool
from deepcontext.store.interface import MemoryFilters, RankFields, Store
from deepcontext.text import keyword_terms, query_ngrams

__all__ = ["HUB_SHARE", "MAX_GRAPH_ENTITIES", "Candidates", "VectorHits", "gather", "graph_leg", "leg_k", "start_vector_leg"]

#: entities (matched + neighbours, by weight) whose memories the graph leg reads
MAX_GRAPH_ENTITIES = 12
#: the vector leg run by another thread: the query's embedding and the ``(memory id, cosine)`` hits
VectorHits = tuple[np.ndarray, list[tuple[int, float]]]
#: an entity mentioned by more than this share of a user's memories is too generic for the graph leg
HUB_SHARE = 0.05


def graph_leg(store: Store, user_id: str, query: str, k: int, depth: int, filters: MemoryFilters, now: datetime) -> list[int]:
    """Memories linked to entities named in the query (whole words, case-insensitive) and to their
    neighbours up to ``depth`` hops.

    Entities are weighted like terms in IR: 1/(1+hops) (times relation strength for neighbours)
    times idf = log(N / mentions), N the user's active memories. An entity mentioned in more than
    :data:`HUB_SHARE` of the memories (typically the user themself) is a hub: it names nothing
    specific, so it is neither scored nor expanded. At most :data:`MAX_GRAPH_ENTITIES` entities
    are scored; hops past the first are read only while fewer are found."""
    matched = store.match_entities(user_id, query_ngrams(query))
    if not matched or k <= 0:
        return []
    n_mem = max(1, store.active_memory_count(user_id))

    def hub(mentions: int) -> bool:
        return n_mem >= 50 and mentions > HUB_SHARE * n_mem

    # a matched n-gram inside a longer matched one ("york" in "new york") is dropped
    names = sorted(matched, key=len, reverse=True)
    keep: list[str] = []
    for n in names:
        if not any(f" {n} " in f" {m} " for m in keep):
            keep.append(n)
    start = [matched[n][0] for n in keep if not hub(matched[n][1])]
    if not start:
        return []
    # hubs are neither scored nor expanded: the store does not follow their relations at all (the
    # user's own entity is related to hundreds of others). A farther hop weighs less (1 / (1 + hops)):
    # once the entities found fill the leg, the next hop is not read (a well-connected entity's
    # second hop is hundreds of relations)
    hood = store.entity_neighbourhood(
        user_id, start, depth, max_per_level=MAX_GRAPH_ENTITIES, max_expand_mentions=int(HUB_SHARE * n_mem) if n_mem >= 50 else None,
        enough=MAX_GRAPH_ENTITIES,
    )  # fmt: skip
    weight: dict[int, float] = {}
    for item in hood:
        mentions = max(1, int(item.get("mention_count") or 1))
        if hub(mentions) or (item["depth"] and item.get("via") not in weight):
            continue  # no hubs, and no expansion through a skipped entity
        w = (1.0 / (1 + item["depth"])) * (min(item["strength"], 2.0) if item["depth"] else 1.0)
        weight[item["id"]] = w * math.log(1 + n_mem / mentions)
    top = sorted(weight, key=lambda e: -weight[e])[:MAX_GRAPH_ENTITIES]
    # the entities the query names: their 3k most recent memories; neighbours (weighing half or
    # less): their k most recent (reading 150 memories for each of 11 neighbours cost 30 ms on
    # PostgreSQL at 100k memories)
    named = {item["id"] for item in hood if not item["depth"]}
    chosen = [e for e in top if e in named] + [e for e in top if e not in named]
    limits = [max(3 * k, 30) if e in named else max(k, 10) for e in chosen]
    pairs = store.memories_for_entities(user_id, chosen, filters, now, limit=limits)
    scores: dict[int, float] = {}
    for mid, eid in pairs:
        scores[mid] = scores.get(mid, 0.0) + weight.get(eid, 0.0)
    order = sorted(scores, key=lambda m: -scores[m])  # stable: ties keep the store's importance order
    return order[:k]


def leg_k(config: SearchConfig, limit: int, leg: str) -> int:
    """How many candidates ``leg`` ("vector", "keyword" or "graph") fetches for ``limit`` results:
    its ``*_k_factor`` times the limit, at least ``min_leg_k`` (the vector leg also ``vector_min_k``);
    none when the factor is 0."""
    factor = getattr(config, f"{leg}_k_factor")
    floor = max(config.min_leg_k, config.vector_min_k) if leg == "vector" else config.min_leg_k
    return max(limit * factor, floor) if factor else 0


@dataclass(slots=True)
class Candidates:
    """What the legs found for a query: each leg's memory ids in rank order, the fields the ranking
    needs and the vector leg's cosines (see :func:`gather` and :func:`rank`)."""

    query: str
    legs: dict[str, list[int]]
    fields: dict[int, RankFields]
    sims: dict[int, float] = field(default_factory=dict)


def start_vector_leg(
    store: Store,
    embed_one: Callable[[str], np.ndarray],
    pool: Executor,
    user_id: str,
    query: str,
    *,
    limit: int,
    filters: MemoryFilters,
    config: SearchConfig,
    now: datetime,
    standing: StandingModel | None = None,
) -> tuple[Future[np.ndarray] | None, Future[VectorHits] | None]:
    """Start the vector leg on ``pool`` while the caller's thread reads the other legs: the query's
    embedding (onnxruntime releases the GIL) or, where the store runs the leg on a connection of its
    own (:attr:`Store.concurrent_vector_leg`), the whole leg. Returns :func:`gather`'s
    ``query_vector`` and ``vector_hits``."""
    if config.vector_weight <= 0:
        return None, None
    if not store.concurrent_vector_leg:
        return pool.submit(embed_one, query), None

    def leg() -> VectorHits:
        vector = embed_one(query)
        k = vector_pool(leg_k(config, limit, "vector"), uses_profile(query, config.profile_weight, vector, standing))
        with store.side_reading():
            return vector, store.vector_search(user_id, vector, k, filters, now)

    return None, pool.submit(leg)


def gather(
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
    vector_hits: Future[VectorHits] | None = None,
    standing: StandingModel | None = None,
) -> Candidates:
    """Run the legs and read the candidates' rank fields. ``vector_hits``: the query's embedding and
    the vector leg's result, computed by another thread (on a connection of its own, see
    :attr:`Store.concurrent_vector_leg`) while this one reads the other legs; when given,
    ``query_vector`` is not used. ``standing``: the embedding model that also tells requests (for
    the profile leg) from other queries."""
    legs: dict[str, list[int]] = {}
    sims: dict[int, float] = {}
    pool: list[tuple[int, float]] = []

    def k_for(leg: str) -> int:
        return leg_k(config, limit, leg)

    # the keyword and graph legs first: the query's embedding may still be computed meanwhile (a
    # future), and is awaited only by the vector leg
    keyword: list[int] | None = None
    graph: list[int] | None = None
    if config.keyword_weight > 0:
        terms = keyword_terms(query)
        keyword = [m for m, _ in store.keyword_search(user_id, terms, k_for("keyword"), filters, now)]
    if include_graph and config.graph_weight > 0:
        graph = graph_leg(store, user_id, query, k_for("graph"), config.graph_depth, filters, now)
    k_vector = k_for("vector")
    # the other legs' candidates' fields too, while the query may still be embedded
    fields = store.rank_fields(user_id, list(dict.fromkeys([*(keyword or ()), *(graph or ())])))
    vector: np.ndarray | None
    if vector_hits is not None:
        vector, hits = vector_hits.result()
        if config.vector_weight > 0:
            pool = list(hits)
    else:
        vector = query_vector.result() if isinstance(query_vector, Future) else query_vector
    profile = config.vector_weight > 0 and uses_profile(query, config.profile_weight, vector, standing)
    if vector_hits is None and config.vector_weight > 0 and vector is not None:
        pool = store.vector_search(user_id, vector, vector_pool(k_vector, profile), filters, now)
    if config.vector_weight > 0 and (pool or vector_hits is not None):
        legs["vector"] = [m for m, _ in pool[:k_vector]]
        sims = dict(pool[:k_vector])
    if keyword is not None:
        legs["keyword"] = keyword
    if graph is not None:
        legs["graph"] = graph
    if not any(legs.values()):
        return Candidates(query, {}, {})
    fields.update(store.rank_fields(user_id, [m for m in dict.fromkeys(legs.get("vector", ())) if m not in fields]))
    if profile and len(pool) > k_vector:
        # the deeper pool matters to the profile leg only, which reads standing memories alone
        deeper = [m for m, _ in pool[k_vector:] if m not in fields]
        fields.update(store.rank_fields(user_id, deeper, standing_only=True))
    if profile:
        timed: set[int] = set()
        if config.profile_time_bonus > 0 and asks_for_time(query):
            stated = [m for m, _ in pool if (f := fields.get(m)) is not None and f.standing]
            timed = {m.id for m in store.get_memories(user_id, stated, details=False) if bears_on_time(m.text)}
        legs["profile"] = profile_leg(
            pool, fields, k_vector, config.profile_hard_bonus, timed, config.profile_time_bonus, config.profile_margin,
            now=now,
        )  # fmt: skip
    return Candidates(query, legs, fields, sims)
