"""PostgreSQL runs a search's vector leg on a connection of its own, beside the other legs.

The search thread holds a main-pool connection for the keyword and graph legs while another thread
embeds the query and runs the vector leg on a side-pool connection. These tests check that this
gives the same answers as running the legs one after the other (SQLite does that), and that many
concurrent searches on a tiny pool finish: a side connection is never held while waiting for a main
one, so a full main pool cannot deadlock the searches that wait on side connections.
"""

from __future__ import annotations

import asyncio
from typing import Any

from deepcontext import DeepContext
from deepcontext.clock import ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.search import hybrid_search
from deepcontext.store.interface import MemoryFilters
from deepcontext.store.postgres import PostgresStore

FACTS = [
    "Maya keeps her kayak on the roof of the garage.",
    "The orange kayak was bought in Portland last summer.",
    "Maya's brother Theo repairs bicycles in Lisbon.",
    "Theo sent Maya a postcard from the Lisbon bike shop.",
    "Maya is allergic to peanuts and avoids satay.",
    "The team meeting moved to Thursday at nine.",
    "Maya paints watercolours of the harbour on Sundays.",
    "Theo's shop sells second-hand road bikes.",
]
QUERIES = ["where is the kayak", "Theo bicycles Lisbon", "peanut allergy", "what does Maya paint", "meeting day"]


async def _fill(ctx: DeepContext) -> None:
    for i, fact in enumerate(FACTS):
        await ctx.add([{"role": "user", "content": fact}], user_id="maya", conversation_id=f"c{i % 2}")
    await ctx.add([{"role": "user", "content": "Theo owns a kayak too."}], user_id="other")


def _answer(res: Any) -> list[tuple[int, dict[str, int]]]:
    return [(r.memory_id, r.legs) for r in res.results]


async def test_vector_leg_on_a_side_connection_gives_the_sequential_answer(pg_url: str) -> None:
    clock = ManualClock()
    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(256), clock=clock, track_access=False) as ctx:
        store = ctx.store
        assert isinstance(store, PostgresStore) and store.concurrent_vector_leg
        await _fill(ctx)
        config = SearchConfig.from_settings(ctx.settings)
        for q in QUERIES:
            res = await ctx.search(q, user_id="maya", limit=5)
            # the same search with the legs one after the other, on one connection
            hits = hybrid_search(
                store, "maya", q, ctx.embedder.embed_one(q), limit=5, filters=MemoryFilters(), config=config,
                now=clock.now(), links_per_memory=ctx.settings.max_connections_per_memory,
            )  # fmt: skip
            assert [(r.memory_id, r.legs) for r in res.results] == [(h.memory.id, h.legs) for h in hits], q
            assert any("vector" in r.legs for r in res.results), q
            assert not any("Theo owns a kayak" in r.text for r in res.results), q  # the other user's
        # the side pool was opened by those searches and is a pool of its own
        side = store.side_engine
        assert side is not None and side is not store.engine
        # nothing crosses users, on either connection
        res = await ctx.search("kayak", user_id="other", limit=10)
        assert res.results and all("Theo owns a kayak" in r.text for r in res.results)


async def test_many_concurrent_searches_on_a_tiny_pool_finish(pg_url: str) -> None:
    # main pool: 1 connection + 1 overflow; side pool the same. 24 searches at once on 6+ threads:
    # every one holds a main connection while its vector leg waits for a side one
    # (no access tracking, a fixed clock: every search of a query has the same answer)
    async with DeepContext(
        database_url=pg_url, embedder=HashEmbedder(256), db_pool_size=1, track_access=False, clock=ManualClock()
    ) as ctx:
        await _fill(ctx)
        expected = {q: _answer(await ctx.search(q, user_id="maya", limit=5)) for q in QUERIES}
        batch = [QUERIES[i % len(QUERIES)] for i in range(24)]
        results = await asyncio.wait_for(asyncio.gather(*(ctx.search(q, user_id="maya", limit=5) for q in batch)), timeout=60)
        for q, res in zip(batch, results, strict=True):
            assert _answer(res) == expected[q], q
        assert ctx.store.engine.pool.size() == 1  # type: ignore[attr-defined]
