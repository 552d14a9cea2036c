"""The deepcq tiers of a user in the database: round trip, isolation, restarts, delete_user, atomic
writes and exact values, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.context import TIER_PREFIX, StoreTierBackend
from deepcontext.errors import ValidationError
from deepcontext.query import DeepCQ, MemoryBackend, MemorySchema, TierBackend
from tests.context.helpers import open_ctx

SCHEMA = MemorySchema(sections=["status", "errors", "metrics"])


def populate(cq: DeepCQ) -> None:
    cq.state.set("status", "[status]\nall good\n")
    cq.state.set("errors", "[errors]\n- disk full on db-2\n")
    cq.state.set("status", "[status]\ndegraded\n")  # replaced, keeps its place
    for i in range(4):
        cq.cache.put(f"k{i}", f"value {i}")
    cq.cache.put("k1", "value 1 changed")
    for i in range(5):
        cq.history.add("user" if i % 2 == 0 else "ai", f"turn {i}")
    cq.notes.append("ops", "rotate keys monthly")
    cq.notes.append("ops", "backups at 04:00")
    cq.reference.set("region", "eu-west-1")
    cq.reference.set("limits", {"ram_gb": 16, "cpu": 4})


def snapshot(cq: DeepCQ) -> dict[str, Any]:
    return {
        "state": cq.state.as_dict(),
        "cache": cq.cache.items(),
        "history": [tuple(t) for t in cq.history.turns()],
        "notes": {k: cq.notes.get(k) for k in cq.notes.keys()},  # noqa: SIM118 (not a dict)
        "reference": {k: cq.reference.get(k) for k in cq.reference.keys()},  # noqa: SIM118
    }


async def test_round_trip_and_query(ctx: DeepContext) -> None:
    cq = await ctx.tiers("ana", SCHEMA)
    assert isinstance(cq.state.backend, StoreTierBackend)
    populate(cq)
    again = await ctx.tiers("ana", SCHEMA)  # read back from the database
    assert snapshot(again) == snapshot(cq)
    assert list(again.state.sections()) == ["status", "errors"]  # order kept across the reload
    assert again.reference.get("limits") == {"ram_gb": 16, "cpu": 4}
    assert list(again.reference.get("limits")) == ["ram_gb", "cpu"]  # exact JSON, even on JSONB
    res = again.query("is the disk full?")
    assert "disk full" in res.content and "degraded" not in res.content
    assert res.sections_included == ["errors"]


async def test_users_are_isolated(ctx: DeepContext) -> None:
    ana = await ctx.tiers("ana", SCHEMA)
    populate(ana)
    bob = await ctx.tiers("bob", SCHEMA)
    assert snapshot(bob) == {"state": {}, "cache": [], "history": [], "notes": {}, "reference": {}}
    bob.state.set("errors", "[errors]\nbob's own error\n")
    bob.history.add("user", "bob speaking")
    ana2 = await ctx.tiers("ana", SCHEMA)
    assert "bob" not in str(snapshot(ana2))
    assert snapshot(ana2) == snapshot(ana)
    assert (await ctx.tiers("bob", SCHEMA)).state.get("errors") == "[errors]\nbob's own error\n"


async def test_survives_a_restart(db_url: str, clock: ManualClock) -> None:
    first = open_ctx(db_url, clock)
    await first.init()
    cq = await first.tiers("ana", SCHEMA, cache_size=3, history_turns=2)
    populate(cq)
    before = snapshot(cq)
    await first.close()

    second = open_ctx(db_url, clock)
    await second.init()
    try:
        cq2 = await second.tiers("ana", SCHEMA, cache_size=3, history_turns=2)
        assert snapshot(cq2) == before
        assert [k for k, _ in cq2.cache.items()] == ["k2", "k3", "k1"]  # LRU order and bound kept
        assert [t.text for t in cq2.history.turns()] == ["turn 3", "turn 4"]
        cq2.history.add("user", "turn 5")  # trimming deletes the oldest row
        rows = second.store.kv_list("ana", TIER_PREFIX + "history")
        assert len(rows) == 2
    finally:
        await second.close()


async def test_delete_user_removes_the_tiers(ctx: DeepContext) -> None:
    populate(await ctx.tiers("ana", SCHEMA))
    populate(await ctx.tiers("bob", SCHEMA))
    counts = await ctx.delete_user("ana")
    assert counts["kv"] >= 10
    assert snapshot(await ctx.tiers("ana", SCHEMA))["state"] == {}
    for tier in ("state", "cache", "history", "notes", "reference"):
        assert ctx.store.kv_list("ana", TIER_PREFIX + tier) == {}
    assert snapshot(await ctx.tiers("bob", SCHEMA))["state"]  # bob untouched


async def test_each_write_is_one_row_in_its_own_namespace(ctx: DeepContext) -> None:
    cq = await ctx.tiers("ana", SCHEMA)
    cq.state.set("errors", "[errors]\nx\n")
    raw = ctx.store.kv_get("ana", TIER_PREFIX + "state", "errors")
    assert raw["deepcq"] == 1 and '"text":"[errors]\\nx\\n"' in raw["json"]  # the envelope
    # the write is visible at once to another handle (committed, not buffered)
    assert (await ctx.tiers("ana", SCHEMA)).state.get("errors") == "[errors]\nx\n"
    cq.state.remove("errors")
    assert ctx.store.kv_get("ana", TIER_PREFIX + "state", "errors") is None
    # other per-user state in the kv table is not a tier
    ctx.store.kv_put("ana", "lifecycle", "errors", {"x": 1}, ctx.clock.now())
    assert (await ctx.tiers("ana", SCHEMA)).state.sections() == []


async def test_values_come_back_exactly(ctx: DeepContext) -> None:
    backend = StoreTierBackend(ctx.store, "ana", clock=ctx.clock)
    assert isinstance(backend, TierBackend)
    values: list[Any] = [
        {"zeta": 1, "alpha": [1, 2.5, None, True], "mid": {"b": "x", "a": "y"}},
        "NUL \x00 inside, and 中文 and emoji 🎉",
        2**70,
        [],
        None,
        "",
    ]
    for i, v in enumerate(values):
        backend.put("ns", f"k{i}", v)
    listed = backend.list("ns")
    assert [listed[f"k{i}"] for i in range(len(values))] == values
    assert list(listed["k0"]) == ["zeta", "alpha", "mid"] and list(listed["k0"]["mid"]) == ["b", "a"]
    assert backend.get("ns", "k1") == values[1]
    assert backend.get("ns", "absent") is None
    backend.delete("ns", "absent")  # ignored
    backend.delete("ns", "k0")
    assert "k0" not in backend.list("ns")
    # a tuple is stored as a list (what a JSON round trip gives)
    backend.put("ns", "t", (1, 2))
    assert backend.get("ns", "t") == [1, 2]
    # rows written without the envelope by other code are returned as they are
    ctx.store.kv_put("ana", "ns", "plain", {"a": 1}, ctx.clock.now())
    assert backend.get("ns", "plain") == {"a": 1}


async def test_invalid_keys_and_values_are_refused(ctx: DeepContext) -> None:
    backend = StoreTierBackend(ctx.store, "ana")
    for ns, key in [("", "k"), ("n" * 65, "k"), ("ns", "k" * 513), ("ns", "a\x00b"), ("ns", "\ud800")]:
        with pytest.raises(ValidationError):
            backend.put(ns, key, "v")
    for bad in (float("nan"), {1: "int key"}, object(), "lone \ud800 surrogate"):
        with pytest.raises(ValidationError):
            backend.put("ns", "k", bad)
    assert backend.list("ns") == {}  # nothing was written
    with pytest.raises(ValidationError):
        StoreTierBackend(object(), "ana")
    with pytest.raises(ValidationError):
        StoreTierBackend(ctx.store, "")
    with pytest.raises(ValidationError):
        await ctx.tiers("ana", {"sections": ["x"]})  # type: ignore[arg-type]
    cq = await ctx.tiers("ana", SCHEMA)
    with pytest.raises(ValidationError):
        cq.cache.put("k" * 600, "value")
    assert cq.cache.items() == []


async def test_in_memory_stays_the_default(ctx: DeepContext) -> None:
    cq = DeepCQ(SCHEMA)
    assert isinstance(cq.state.backend, MemoryBackend)
    cq.state.set("errors", "[errors]\nlocal only\n")
    assert (await ctx.tiers("ana", SCHEMA)).state.sections() == []
