"""Auto-consolidation: after the add's transaction, in a background task (close() waits for it); a user
whose lifecycle lock is busy is flagged (users.consolidation_due) for the next run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from deepcontext import ManualClock, MemoryStatus, MemoryTier, SyncDeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.store.locks import user_lock
from tests.lifecycle.helpers import ScriptedExtractor, say

FACTS = [
    ("Maya adopted a dog named Pixel", ["Maya", "Pixel"]),
    ("Pixel is a border collie", ["Pixel"]),
    ("Pixel loves the beach", ["Pixel"]),
    ("Pixel sleeps on the sofa", ["Pixel"]),
    ("Pixel is afraid of thunder", ["Pixel"]),
    ("Pixel eats salmon kibble", ["Pixel"]),
]


async def test_auto_consolidation_after_add(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(auto_consolidate=True, consolidation_threshold=3)
    ids = [await say(ctx, "u", text, entities=ents) for text, ents in FACTS]
    await ctx.close()  # waits for the background consolidation
    check = await make_ctx()
    srcs = check.store.get_memories("u", ids)
    # how the adds interleaved with the background runs varies; what holds: consolidation caught up
    # (fewer short-term memories left than the threshold), every memory is accounted for
    active = [m for m in srcs if m.status is MemoryStatus.ACTIVE]
    merged = [m for m in srcs if m.status is MemoryStatus.MERGED]
    assert len(active) < 3 and len(active) + len(merged) == len(ids) and len(merged) >= 3
    long_term = {m.id: m for m in (await check.list("u", tier="long_term", limit=10)).memories}
    assert {i for m in long_term.values() for i in m.consolidated_from} == {m.id for m in merged}
    assert all(m.superseded_by in long_term for m in merged)
    assert check.store.consolidation_flag("u") is False


async def test_no_auto_consolidation_when_off(make_ctx: Callable[..., Any]) -> None:
    ctx = await make_ctx(consolidation_threshold=3)  # auto_consolidate=False (the fixture's default here)
    ids = [await say(ctx, "u", text, entities=ents) for text, ents in FACTS[:3]]
    await ctx.close()
    check = await make_ctx(consolidation_threshold=3)
    assert {m.tier for m in check.store.get_memories("u", ids)} == {MemoryTier.SHORT_TERM}
    r = await check.run_lifecycle("u")  # due by count: the next run consolidates
    assert r["consolidation_ran"] and r["memories_consolidated"] == 3


async def test_busy_lock_flags_the_user_for_the_next_run(make_ctx: Callable[..., Any]) -> None:
    holder = await make_ctx()
    ctx = await make_ctx(auto_consolidate=True, consolidation_threshold=3)
    lock = user_lock(holder.store, "u", "lifecycle", timeout=5)  # type: ignore[arg-type]
    await asyncio.to_thread(lock.__enter__)  # another process's lifecycle run, as far as ctx knows
    try:
        ids = [await say(ctx, "u", text, entities=ents) for text, ents in FACTS[:3]]
        await ctx.close()  # the background task found the lock busy: it flagged the user and left
    finally:
        await asyncio.to_thread(lock.__exit__, None, None, None)
    assert holder.store.consolidation_flag("u") is True
    assert {m.tier for m in holder.store.get_memories("u", ids)} == {MemoryTier.SHORT_TERM}
    assert holder.store.users_due() == ["u"]
    r = await holder.run_lifecycle("u")  # threshold 20 here: it runs because of the flag
    assert r["consolidation_ran"] and r["memories_consolidated"] == 3
    assert holder.store.consolidation_flag("u") is False


def test_sync_shell_runs_the_lifecycle(db_url: str) -> None:
    with SyncDeepContext(
        database_url=db_url, embedder=HashEmbedder(256), extractor=ScriptedExtractor(), llm_provider="none"
    ) as ctx:
        for text, ents in FACTS[:3]:
            meta = {"entities": ents, "importance": 0.5}
            ctx.add([{"role": "user", "name": "Maya", "content": text, "metadata": meta}], "u")
        r = ctx.run_lifecycle("u", consolidate=True)
        assert r["groups"] == 1 and r["memories_consolidated"] == 3
        assert ctx.consolidate("u")["groups"] == 0
