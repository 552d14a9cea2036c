"""The sync shell runs the same logic as the async API: one scenario through both."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime

from deepcontext import DeepContext, ManualClock, SyncDeepContext
from deepcontext.embed import HashEmbedder

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)

SCENARIO = [
    {"role": "user", "name": "Ana", "content": "I live in Porto and I love surfing."},
    {"role": "assistant", "content": "Porto has great waves!"},
    {"role": "user", "name": "Ana", "content": "My brother Rui works at Globex Corporation."},
]


def _summary(add, res, page, graph) -> tuple:
    return (
        add.memories_added,
        add.semantic_facts,
        sorted(add.entities_found),
        [(x.text, round(x.score, 9), x.tier.value) for x in res.results],
        [m.text for m in page.memories],
        [(g["entity"], g["relation"], g["depth"]) for g in graph],
    )


def test_sync_and_async_agree(tmp_path) -> None:
    async def via_async():
        async with DeepContext(database_url=f"sqlite:///{tmp_path}/a.db", embedder=HashEmbedder(256), clock=ManualClock(T0)) as c:
            add = await c.add(SCENARIO, "ana")
            res = await c.search("Where does Ana live?", "ana", limit=5)
            page = await c.list("ana")
            graph = await c.get_entity_graph("ana", "Ana")
            return _summary(add, res, page, graph)

    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder=HashEmbedder(256), clock=ManualClock(T0)) as s:
        sync_result = _summary(
            s.add(SCENARIO, "ana"),
            s.search("Where does Ana live?", "ana", limit=5),
            s.list("ana"),
            s.get_entity_graph("ana", "Ana"),
        )
    assert asyncio.run(via_async()) == sync_result


def test_every_public_async_method_has_a_sync_twin() -> None:
    public = {n for n, f in inspect.getmembers(DeepContext, inspect.iscoroutinefunction) if not n.startswith("_")} | {
        n for n, f in inspect.getmembers(DeepContext, inspect.isasyncgenfunction) if not n.startswith("_")
    }
    missing = {n for n in public if not callable(getattr(SyncDeepContext, n, None))}
    assert not missing, f"SyncDeepContext lacks {sorted(missing)}"
