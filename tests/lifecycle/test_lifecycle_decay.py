"""Decay: importance as a function of the time since the last reinforcement, never compounding."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from deepcontext import ConfigurationError, DeepContext, ManualClock, MemoryStatus, MemoryTier
from deepcontext.lifecycle.decay import (
    DEFAULT_TIER_FACTORS,
    DEFAULT_TYPE_FACTORS,
    DecayPolicy,
    decayed_importance,
    effective_half_life,
    retention,
)
from deepcontext.settings import DeepContextSettings
from deepcontext.store import DecayChange
from deepcontext.types import HistoryEvent
from tests.lifecycle.conftest import T0
from tests.lifecycle.helpers import expected_importance, say


def test_curve_is_the_ebbinghaus_formula() -> None:
    for days in (0.0, 0.5, 1, 7, 30, 365):
        assert retention(days, 7.0) == pytest.approx(math.exp(-0.693147 * days / 7.0), rel=1e-6)
    assert retention(7.0, 7.0) == pytest.approx(0.5)
    assert retention(10, 0) == 1.0  # a zero half-life never decays
    assert retention(-1, 7) == 1.0  # a reinforcement after "now" does not raise importance
    assert effective_half_life(7.0, 0) == 7.0
    assert effective_half_life(7.0, 5) == pytest.approx(10.5)  # the seed's 1 + 0.1 x accesses
    for accesses in (0, 1, 10):
        got = decayed_importance(0.8, reinforced_at=T0, now=T0 + timedelta(days=10), half_life_days=7, access_count=accesses)
        assert got == pytest.approx(expected_importance(0.8, 10, 7, accesses), rel=1e-12)
    # an access restarts the curve from the base importance (a review)
    got = decayed_importance(
        0.8, reinforced_at=T0, now=T0 + timedelta(days=10), half_life_days=7, access_count=1,
        last_accessed_at=T0 + timedelta(days=8),
    )  # fmt: skip
    assert got == pytest.approx(expected_importance(0.8, 2, 7, 1), rel=1e-12)


def test_defaults_per_type_and_tier() -> None:
    p = DecayPolicy.from_settings(DeepContextSettings())
    hl = {(r["memory_type"], r["tier"]): r["half_life_days"] for r in p.table()}
    assert hl[("episodic", "short_term")] == 7.0
    assert hl[("episodic", "short_term")] < hl[("semantic", "short_term")] < hl[("procedural", "short_term")]
    for t in ("episodic", "semantic", "procedural"):
        assert hl[(t, "working")] < hl[(t, "short_term")] < hl[(t, "long_term")]
        assert hl[(t, "long_term")] >= 10 * hl[(t, "short_term")]
    assert DEFAULT_TYPE_FACTORS == {"episodic": 1.0, "semantic": 4.0, "procedural": 12.0}
    assert DEFAULT_TIER_FACTORS == {"working": 0.5, "short_term": 1.0, "long_term": 10.0}
    # overrides merge with the defaults; 0 switches decay off
    p = DecayPolicy.from_settings(
        DeepContextSettings(decay_half_life_days=2, decay_type_factors={"semantic": 3}, decay_tier_factors={"long_term": 0})
    )
    assert p.half_life("semantic", "short_term") == 6.0
    assert p.half_life("episodic", "short_term") == 2.0
    assert p.half_life("semantic", "long_term") == 0.0
    with pytest.raises(ConfigurationError, match="decay_type_factors"):
        DeepContext(decay_type_factors={"gossip": 1.0})
    with pytest.raises(ConfigurationError, match="decay_tier_factors"):
        DeepContext(decay_tier_factors={"working": -1})


async def test_decay_follows_the_formula_and_is_idempotent(ctx: DeepContext, clock: ManualClock) -> None:
    ids = {
        "episodic": await say(ctx, "u", "Maya ran a half marathon", type="episodic", importance=0.8),
        "semantic": await say(ctx, "u", "Maya speaks Portuguese", importance=0.8),
        "procedural": await say(ctx, "u", "To deploy, run make release", type="procedural", importance=0.8),
    }
    half = {"episodic": 7.0, "semantic": 28.0, "procedural": 84.0}
    for day in (10, 20):
        clock.set(T0 + timedelta(days=day))
        report = await ctx.run_lifecycle("u", consolidate=False)
        assert report["memories_decayed"] >= 3
        mems = {m.id: m for m in ctx.store.get_memories("u", list(ids.values()))}
        for kind, mid in ids.items():
            # a function of the time since reinforcement, not of what was stored before
            assert mems[mid].importance == pytest.approx(expected_importance(0.8, day, half[kind]), rel=1e-9), kind
        assert mems[ids["episodic"]].importance < mems[ids["semantic"]].importance < mems[ids["procedural"]].importance
        # again at the same instant: nothing changes, nothing is written
        histories = {mid: len(await ctx.history(mid, "u")) for mid in ids.values()}
        again = await ctx.run_lifecycle("u", consolidate=False)
        assert again["memories_decayed"] == 0 and again["memories_deactivated"] == 0
        after = {m.id: m for m in ctx.store.get_memories("u", list(ids.values()))}
        assert {i: m.importance for i, m in after.items()} == {i: m.importance for i, m in mems.items()}
        assert {i: m.updated_at for i, m in after.items()} == {i: m.updated_at for i, m in mems.items()}
        assert {mid: len(await ctx.history(mid, "u")) for mid in ids.values()} == histories


async def test_access_strengthens(ctx: DeepContext, clock: ManualClock) -> None:
    plain = await say(ctx, "u", "Maya owns a red kayak", importance=0.6)
    used = await say(ctx, "u", "Maya owns a blue canoe", importance=0.6)
    for day in (1, 2, 3):  # accessed three times, the last on day 3
        ctx.store.bump_access("u", [used], T0 + timedelta(days=day))
    clock.set(T0 + timedelta(days=21))
    await ctx.run_lifecycle("u", consolidate=False)
    p, u = ctx.store.get_memories("u", [plain, used])
    assert p.importance == pytest.approx(expected_importance(0.6, 21, 28.0), rel=1e-9)
    assert u.importance == pytest.approx(expected_importance(0.6, 18, 28.0, accesses=3), rel=1e-9)
    assert u.importance > p.importance


async def test_saying_it_again_reinforces(ctx: DeepContext, clock: ManualClock) -> None:
    """A re-mention (an add that is a NOOP for the memory) counts and restarts its forgetting curve;
    a lifecycle run that read the memory before the re-mention does not overwrite it."""
    once = await say(ctx, "u", "Maya owns a red kayak", importance=0.6)
    twice = await say(ctx, "u", "Maya owns a blue canoe", importance=0.6)
    assert {m.mention_count for m in ctx.store.get_memories("u", [once, twice])} == {1}
    clock.set(T0 + timedelta(days=10))
    await ctx.run_lifecycle("u", consolidate=False)
    faded = ctx.store.get_memories("u", [twice])[0].importance
    assert faded == pytest.approx(expected_importance(0.6, 10, 28.0), rel=1e-9)
    stale = ctx.store.decay_rows("u", clock.now())  # what a concurrent lifecycle run read
    clock.set(T0 + timedelta(days=14))
    r = await ctx.add([{"role": "user", "name": "Maya", "content": "Maya owns a blue canoe"}], "u", "c")
    assert twice not in r.memory_ids  # no new version: the same memory, said again
    o, t = ctx.store.get_memories("u", [once, twice])
    assert (o.mention_count, t.mention_count) == (1, 2)
    assert t.importance == pytest.approx(0.6) and o.importance == pytest.approx(faded)
    assert HistoryEvent.NOOP in [h.event for h in await ctx.history(twice, "u")]
    # the stale run's write is skipped for the re-mentioned memory only
    stale_changes = [
        DecayChange(id=row.id, importance=0.01, access_count=row.access_count, mention_count=row.mention_count)
        for row in stale
        if row.id in (once, twice)
    ]
    ctx.store.apply_decay("u", stale_changes, clock.now())
    o, t = ctx.store.get_memories("u", [once, twice])
    assert (o.importance, t.importance) == (pytest.approx(0.01), pytest.approx(0.6))
    # 21 days later the re-mentioned memory is 21 days into a fresh curve, the other 35 days in
    clock.set(T0 + timedelta(days=35))
    await ctx.run_lifecycle("u", consolidate=False)
    o, t = ctx.store.get_memories("u", [once, twice])
    assert o.importance == pytest.approx(expected_importance(0.6, 35, 28.0), rel=1e-9)
    assert t.importance == pytest.approx(expected_importance(0.6, 21, 28.0), rel=1e-9)


async def test_faded_memory_is_deactivated_with_history_and_cleaned(ctx: DeepContext, clock: ManualClock) -> None:
    weak = await say(ctx, "u", "Maya had toast for breakfast", type="episodic", importance=0.3)
    strong = await say(ctx, "u", "Maya is allergic to peanuts", importance=0.7)
    working = [m for m in (await ctx.list("u", tier="working", limit=100)).memories]
    assert working, "the raw turns are searchable as working-tier memories"
    # episodic short-term half-life 7 days: 0.3 -> under 0.05 after log2(6) half-lives (18.1 days)
    clock.set(T0 + timedelta(days=17))
    r = await ctx.run_lifecycle("u", consolidate=False)
    assert (await ctx.get(weak, "u")).status is MemoryStatus.ACTIVE
    clock.set(T0 + timedelta(days=19))
    r = await ctx.run_lifecycle("u", consolidate=False)
    assert r["memories_deactivated"] >= 1 and r["memories_cleaned"] >= 1
    m = await ctx.get(weak, "u")
    assert m.status is MemoryStatus.DELETED  # decayed, then soft-deleted by cleanup (not long-term)
    assert m.importance < 0.05
    events = [h.event for h in await ctx.history(weak, "u")]
    assert events == [HistoryEvent.ADD, HistoryEvent.DECAY, HistoryEvent.DELETE]
    decay = (await ctx.history(weak, "u"))[1]
    assert decay.actor == "lifecycle" and decay.details["importance"] < 0.05
    assert decay.details["half_life_days"] == pytest.approx(7.0)
    # gone from search and list; the semantic fact (half-life 28 days) lives on
    assert weak not in {x.memory_id for x in (await ctx.search("toast breakfast", "u")).results}
    assert weak not in {x.id for x in (await ctx.list("u", limit=100)).memories}
    assert (await ctx.get(strong, "u")).status is MemoryStatus.ACTIVE
    # the working-tier copies of the turns faded too (half-life 3.5 days), the turns never go
    assert [(await ctx.get(w.id, "u")).status for w in working] == [MemoryStatus.DELETED] * len(working)
    assert [t.content for t in await ctx.turns("u", "c")] == ["Maya had toast for breakfast", "Maya is allergic to peanuts"]


async def test_long_term_decays_ten_times_slower(ctx: DeepContext, clock: ManualClock) -> None:
    mid = await say(ctx, "u", "Maya's sister Lena lives in Berlin", importance=0.9)
    r = await ctx.consolidate("u")  # important and alone: promoted to long-term as it is
    assert r["memories_promoted"] == 1
    m = await ctx.get(mid, "u")
    assert m.tier is MemoryTier.LONG_TERM
    clock.set(T0 + timedelta(days=100))
    await ctx.run_lifecycle("u", consolidate=False)
    m = await ctx.get(mid, "u")
    assert m.importance == pytest.approx(expected_importance(0.9, 100, 280.0), rel=1e-9)
    assert m.status is MemoryStatus.ACTIVE
    # long-term memories are never soft-deleted by cleanup, even when they fade
    clock.set(T0 + timedelta(days=1500))
    r = await ctx.run_lifecycle("u", consolidate=False)
    m = await ctx.get(mid, "u")
    assert m.status is MemoryStatus.DECAYED and r["memories_cleaned"] == 0
