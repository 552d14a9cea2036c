"""Where a search's time goes: its stages timed one by one on the same queries (``bench speed``).

The stages are the functions :func:`deepcontext.retrieve.search.hybrid_search` runs, called here in
the same order on the same connection and snapshot with the query's embedding already computed; the
whole search is timed through the public ``search`` with that embedding cached and with it computed,
so "the rest" (thread hops, validation, building the results) is the whole less its stages."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from deepcontext.language.standing_model import model_for
from deepcontext.retrieve.asked import asks_about_user
from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.profile import uses_profile, vector_pool
from deepcontext.retrieve.search import MAX_SOURCES, gather, graph_leg, leg_k, neighbour_reader, rank, superseder_reader
from deepcontext.store.interface import MemoryFilters
from deepcontext.text import keyword_terms

#: the stages in the order of the table; the legs are part of "legs and candidates' fields"
STAGES = (
    "query embedding",
    "vector leg",
    "keyword leg",
    "graph leg",
    "legs and candidates' fields",
    "fusion and rescoring",
    "results' details and links",
    "whole search, embedding cached",
    "whole search",
)


def _timed(fn: Callable[[], Any], into: list[float]) -> Any:
    t0 = time.perf_counter()
    out = fn()
    into.append((time.perf_counter() - t0) * 1000)
    return out


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * (len(ordered) - 1) + 0.5))], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


async def search_stages(ctx: Any, user_id: str, queries: list[str], limit: int = 10) -> dict[str, Any]:
    """``stages``: p50 / p95 / mean in ms of each of :data:`STAGES` over ``queries`` (default search
    settings); ``same_results``: the share of queries whose staged run ranked the same memories in the
    same order as the search did (1.0 unless the stages here no longer are the search's)."""
    import asyncio

    config = SearchConfig.from_settings(ctx.settings)
    store, embedder = ctx.store, ctx.embedder
    standing = model_for(embedder.model_id)
    filters = MemoryFilters()
    per_memory = ctx.settings.max_connections_per_memory
    times: dict[str, list[float]] = {name: [] for name in STAGES}

    same = 0

    def staged(query: str) -> list[int]:
        now = ctx.clock.now()
        vector = embedder.embed_one(query)  # cached: computed just before
        with store.reading():
            profile = uses_profile(query, config.profile_weight, vector, standing)
            k = vector_pool(leg_k(config, limit, "vector"), profile)
            _timed(lambda: store.vector_search(user_id, vector, k, filters, now), times["vector leg"])
            terms = keyword_terms(query)
            kk = leg_k(config, limit, "keyword")
            _timed(lambda: store.keyword_search(user_id, terms, kk, filters, now), times["keyword leg"])
            gk = leg_k(config, limit, "graph")
            _timed(lambda: graph_leg(store, user_id, query, gk, config.graph_depth, filters, now), times["graph leg"])
            cands = _timed(
                lambda: gather(store, user_id, query, vector, limit=limit, filters=filters, config=config, now=now,
                               standing=standing),
                times["legs and candidates' fields"],
            )  # fmt: skip
            asks = config.slot_boost > 0 and asks_about_user(query)
            ranked = _timed(
                lambda: rank(
                    cands, config, now, limit, neighbour_reader(store, user_id, filters, now),
                    user_name=store.user_name(user_id) if asks else None,
                    superseders=superseder_reader(store, user_id, filters, now),
                ),
                times["fusion and rescoring"],
            )  # fmt: skip
            found, _ = _timed(
                lambda: store.result_details(
                    user_id, [r.memory_id for r in ranked], max_sources=MAX_SOURCES, links_per_memory=per_memory
                ),
                times["results' details and links"],
            )
        return [r.memory_id for r in ranked if r.memory_id in found]

    for query in queries:
        embedder.clear_cache()
        _timed(partial(embedder.embed, [query]), times["query embedding"])
        ids = await asyncio.to_thread(staged, query)
        t0 = time.perf_counter()
        response = await ctx.search(query, user_id, limit=limit)
        times["whole search, embedding cached"].append((time.perf_counter() - t0) * 1000)
        same += ids == [r.memory_id for r in response.results]
        embedder.clear_cache()
        t0 = time.perf_counter()
        await ctx.search(query, user_id, limit=limit)
        times["whole search"].append((time.perf_counter() - t0) * 1000)
    return {
        "stages": {name: _summary(values) for name, values in times.items()},
        "same_results": round(same / max(1, len(queries)), 3),
    }
