"""Cleanup: expiry (hidden at once, purged by cleanup) and the purge of soft-deleted memories after the
retention period, leaving nothing behind in any table, index or cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from deepcontext import DeepContext, EntityNotFoundError, ManualClock, MemoryNotFoundError, MemoryStatus
from tests.lifecycle.conftest import T0
from tests.lifecycle.helpers import residue, say

NOTHING = {
    "memories": 0, "memory_sources": 0, "memory_entities": 0, "memory_links": 0, "memory_history": 0,
    "memory_links.other_id": 0, "memory_fts": 0, "superseded_by": 0, "consolidated_from": 0,
}  # fmt: skip


async def _legs(ctx: DeepContext, query: str) -> set[int]:
    """Ids any leg returns (vector, keyword, graph) plus list, for user u."""
    ids: set[int] = set()
    for cfg in ("vector", "keyword", "graph", "hybrid"):
        ids |= {x.memory_id for x in (await ctx.search(query, "u", config=cfg, limit=50)).results}
    ids |= {m.id for m in (await ctx.list("u", limit=1000)).memories}
    return ids


async def test_expired_memories_vanish_at_once_and_are_purged(ctx: DeepContext, clock: ManualClock) -> None:
    keep = await say(ctx, "u", "Maya's locker code is 4711", entities=["Maya"])
    temp = await say(ctx, "u", "Maya's parking spot today is B12", entities=["Maya", "Zorblat"], ttl=3600)
    assert temp in await _legs(ctx, "parking spot B12 Zorblat")
    clock.advance(seconds=3601)
    # expired: gone from every search leg and from list at that instant, before any cleanup
    assert temp not in await _legs(ctx, "parking spot B12 Zorblat")
    assert keep in await _legs(ctx, "locker code")
    assert (await ctx.get(temp, "u")).status is MemoryStatus.ACTIVE  # still there until cleanup
    clock.advance(minutes=11)  # past the grace period
    r = await ctx.run_lifecycle("u", consolidate=False)
    assert r["expired"] == 2  # the fact and the working-tier copy of its turn (same ttl)
    assert residue(ctx, temp) == NOTHING
    with pytest.raises(MemoryNotFoundError):
        await ctx.get(temp, "u")
    # the entity only it mentioned is gone, the turn (what was said) is not
    assert r["entities_purged"] == 1
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("u", "Zorblat")
    assert [t.content for t in await ctx.turns("u", "c")][-1] == "Maya's parking spot today is B12"
    assert (await ctx.get(keep, "u")).status is MemoryStatus.ACTIVE


async def test_purge_after_retention_leaves_no_residue(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(consolidation_similarity_threshold=0.99)
    a = await say(ctx, "u", "Maya adopted a dog named Pixel", entities=["Maya", "Pixel"])
    b = await say(ctx, "u", "Pixel is a border collie from Quokkaville", entities=["Pixel", "Quokkaville"])
    other = await say(ctx, "u", "Maya speaks Portuguese", entities=["Portuguese"])
    await ctx.consolidate("u")
    (lt,) = {m.superseded_by for m in ctx.store.get_memories("u", [a, b])}
    assert lt is not None
    ctx.store.bump_access("u", [lt], T0)  # something else may have touched it meanwhile
    before = await ctx.stats("u")
    await ctx.delete(lt, "u")
    # within the retention period the deletion can still be inspected
    clock.advance(days=29)
    r = await ctx.run_lifecycle("u", consolidate=False)
    assert r["purged"] == 0 and (await ctx.get(lt, "u")).status is MemoryStatus.DELETED
    clock.advance(days=2)
    r = await ctx.run_lifecycle("u", consolidate=False)
    # the long-term memory and the two memories merged into it (its history) are gone for good
    assert r["purged"] == 3
    for mid in (lt, a, b):
        assert residue(ctx, mid) == NOTHING, mid
        with pytest.raises(MemoryNotFoundError):
            await ctx.history(mid, "u")
    assert lt not in await _legs(ctx, "border collie Pixel Quokkaville")
    after = await ctx.stats("u")
    assert after["memories"] == before["memories"] - 3
    assert after["turns"] == before["turns"]  # the turns are never deleted
    assert (await ctx.get(other, "u")).status is MemoryStatus.ACTIVE
    # the working-tier copies of the turns faded meanwhile (soft-deleted at day 29): a month later
    # they are purged too, and with them the last mention of Quokkaville
    await ctx.get_entity_graph("u", "Quokkaville")
    clock.advance(days=31)
    r = await ctx.run_lifecycle("u", consolidate=False)
    assert r["purged"] >= 3 and r["entities_purged"] >= 1
    with pytest.raises(EntityNotFoundError):
        await ctx.get_entity_graph("u", "Quokkaville")
    assert (await ctx.stats("u"))["turns"] == before["turns"]


async def test_retention_is_a_setting(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(deleted_retention_days=1)
    mid = await say(ctx, "u", "Maya's wifi password is hunter2")
    await ctx.delete(mid, "u")
    clock.advance(hours=23)
    assert (await ctx.run_lifecycle("u"))["purged"] == 0
    clock.advance(hours=2)
    assert (await ctx.run_lifecycle("u"))["purged"] == 1
    assert residue(ctx, mid) == NOTHING


async def test_faded_memories_are_soft_deleted_then_purged(ctx: DeepContext, clock: ManualClock) -> None:
    mid = await say(ctx, "u", "Maya had a sandwich", type="episodic", importance=0.2)
    clock.advance(days=15)  # 0.2 x 2^(-15/7) = 0.045
    r = await ctx.run_lifecycle("u")
    assert r["memories_cleaned"] >= 1 and (await ctx.get(mid, "u")).status is MemoryStatus.DELETED
    clock.advance(days=31)
    r = await ctx.run_lifecycle("u")
    assert r["purged"] >= 1 and residue(ctx, mid) == NOTHING
    assert [t.content for t in await ctx.turns("u", "c")] == ["Maya had a sandwich"]
