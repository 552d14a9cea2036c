"""Consolidation on a real database: offline (extractive) and with the LLM (the fake OpenAI-compatible
server), contradictions kept apart, provenance, concurrent writers during the LLM call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

from deepcontext import DeepContext, ManualClock, MemoryStatus, MemoryTier
from deepcontext.types import HistoryEvent
from tests.lifecycle.conftest import T0
from tests.lifecycle.helpers import say
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-0123456789abcdef"
PIXEL = [
    ("Maya adopted a dog named Pixel", ["Maya", "Pixel"], 0.6),
    ("Pixel is a border collie", ["Pixel"], 0.5),
    ("Pixel loves the beach at Cascais", ["Pixel", "Cascais"], 0.4),
]


async def pixel_story(ctx: DeepContext, clock: ManualClock) -> list[int]:
    """Three related facts (entity Pixel), one a day, and an unrelated one."""
    ids = []
    for content, entities, importance in PIXEL:
        ids.append(await say(ctx, "u", content, entities=entities, importance=importance))
        clock.advance(days=1)
    ids.append(await say(ctx, "u", "The Acme office has a rooftop garden", entities=["Acme"]))
    return ids


def llm_settings(fake: FakeOpenAI, **kw: Any) -> dict[str, Any]:
    return {
        "llm_provider": "openai",
        "llm_base_url": fake.url,
        "llm_api_key": KEY,
        "llm_model": "fake-model",
        "llm_max_retries": 0,
        **kw,
    }


async def test_offline_consolidation_merges_a_group(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(consolidation_threshold=4)
    a, b, c, d = await pixel_story(ctx, clock)
    before = {m.id: m for m in ctx.store.get_memories("u", [a, b, c])}
    r = await ctx.run_lifecycle("u")  # 4 short-term memories: at the threshold
    assert r["consolidation_ran"] and r["method"] == "extractive"
    assert (r["groups"], r["memories_consolidated"], r["long_term_created"], r["groups_skipped"]) == (1, 3, 1, 0)

    srcs = ctx.store.get_memories("u", [a, b, c])
    assert {m.status for m in srcs} == {MemoryStatus.MERGED}
    (lt_id,) = {m.superseded_by for m in srcs}
    lt = await ctx.get(lt_id, "u")
    assert lt.tier is MemoryTier.LONG_TERM and lt.status is MemoryStatus.ACTIVE and lt.source == "consolidation"
    assert lt.text == "Maya adopted a dog named Pixel. Pixel is a border collie. Pixel loves the beach at Cascais."
    assert lt.consolidated_from == [a, b, c]
    # provenance: the union of the sources' turns; entities: the union of theirs
    assert sorted(p.turn_id for p in lt.sources) == sorted(p.turn_id for m in before.values() for p in m.sources)
    assert len(lt.sources) == 3
    assert set(lt.entities) == {"Maya", "Pixel", "Cascais"}
    assert lt.valid_from == before[a].valid_from  # true since the oldest source
    assert lt.importance == 0.6 + 2 * 0.05  # the strongest source, +0.05 per extra source
    # history on every side
    [h] = await ctx.history(lt_id, "u")
    assert h.event is HistoryEvent.MERGE and h.details["consolidated_from"] == [a, b, c] and h.actor == "lifecycle"
    for mid in (a, b, c):
        last = (await ctx.history(mid, "u"))[-1]
        assert last.event is HistoryEvent.MERGE and last.details["merged_into"] == lt_id
    # search finds the long-term memory, never the merged sources
    res = await ctx.search("border collie", "u", limit=10)
    found = [x.memory_id for x in res.results]
    assert lt_id in found and not {a, b, c} & set(found)
    # the unrelated memory stays short-term; consolidation is not due again
    assert (await ctx.get(d, "u")).tier is MemoryTier.SHORT_TERM
    again = await ctx.run_lifecycle("u")
    assert not again["consolidation_ran"]


async def test_contradictions_stay_separate_facts_with_valid_time(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    # where an office is: no single-valued fact of the rules, so the contradiction reaches consolidation
    ctx = await make_ctx(consolidation_similarity_threshold=0.6)
    lis = await say(ctx, "u", "Maya's office is in Lisbon", entities=["Maya", "Lisbon"], importance=0.6)
    clock.advance(days=10)
    por = await say(ctx, "u", "Maya's office is in Porto", entities=["Maya", "Porto"], importance=0.6)
    clock.advance(days=1)
    now = await say(ctx, "u", "Maya's office is in Porto now", entities=["Maya", "Porto"], importance=0.6)
    r = await ctx.consolidate("u")
    assert r["memories_consolidated"] == 3 and r["memories_promoted"] == 1 and r["long_term_created"] == 1
    old = await ctx.get(lis, "u")
    # Lisbon: kept as its own long-term fact, true until Porto became true
    assert old.tier is MemoryTier.LONG_TERM and old.status is MemoryStatus.ACTIVE and old.text == "Maya's office is in Lisbon"
    assert old.valid_from == T0 and old.valid_to == T0 + timedelta(days=10)
    p1, p2 = ctx.store.get_memories("u", [por, now])
    assert p1.status is p2.status is MemoryStatus.MERGED and p1.superseded_by == p2.superseded_by
    new = await ctx.get(p1.superseded_by, "u")
    assert new.text == "Maya's office is in Porto now"  # the duplicate folded into the more informative one
    assert new.valid_from == T0 + timedelta(days=10) and new.valid_to is None
    assert new.consolidated_from == [por, now]
    assert "Lisbon" not in new.text and "Porto" not in old.text  # never merged into nonsense
    assert (await ctx.history(new.id, "u"))[-1].details["contradicts"] == [lis]
    assert (await ctx.history(lis, "u"))[-1].details["contradicts"] == [new.id]


async def test_llm_consolidation(make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    writer = await make_ctx()
    a, b, c, d = await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai))
    merged = "Maya has a border collie named Pixel who loves the beach at Cascais"
    fake_openai.script(Reply.json({"facts": [{"text": merged, "sources": [0, 1, 2]}]}))
    r = await ctx.consolidate("u")
    assert r["method"] == "llm" and r["groups"] == 1 and r["long_term_created"] == 1 and r["llm_fallbacks"] == 0
    [req] = fake_openai.chat_requests
    assert "[0] Maya adopted a dog named Pixel\n[1] Pixel is a border collie\n[2] Pixel loves the beach at Cascais" in (
        req.last_user_message
    )
    srcs = ctx.store.get_memories("u", [a, b, c])
    (lt_id,) = {m.superseded_by for m in srcs}
    lt = await ctx.get(lt_id, "u")
    assert lt.text == merged and lt.tier is MemoryTier.LONG_TERM and lt.consolidated_from == [a, b, c]
    assert len(lt.sources) == 3
    # embedded: the vector leg finds it by its own text
    res = await ctx.search(merged, "u", config="vector", limit=1)
    assert [x.memory_id for x in res.results] == [lt_id]
    assert (await ctx.get(d, "u")).tier is MemoryTier.SHORT_TERM


async def test_llm_keeps_contradictions_apart(make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    writer = await make_ctx()
    lis = await say(writer, "u", "Maya's office is in Lisbon", entities=["Maya", "Lisbon"])
    clock.advance(days=30)
    por = await say(writer, "u", "Maya's office is in Porto", entities=["Maya", "Porto"])
    # "Maya" is the speaker (a hub): the two are grouped by their vectors' similarity
    ctx = await make_ctx(**llm_settings(fake_openai, consolidation_similarity_threshold=0.6))
    fake_openai.script(
        Reply.json(
            {
                "facts": [
                    {"text": "Maya's office is in Lisbon", "sources": [0]},
                    {"text": "Maya's office is in Porto", "sources": [1]},
                ]
            }
        )
    )
    r = await ctx.consolidate("u")
    assert r["memories_promoted"] == 2 and r["long_term_created"] == 0
    old, new = ctx.store.get_memories("u", [lis, por])
    assert old.tier is new.tier is MemoryTier.LONG_TERM and old.status is new.status is MemoryStatus.ACTIVE
    assert old.valid_to == T0 + timedelta(days=30) and new.valid_to is None


async def test_llm_failure_falls_back_to_the_offline_merge(
    make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI
) -> None:
    writer = await make_ctx()
    a, b, c, _ = await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai))
    fake_openai.script(Reply.error(500))
    r = await ctx.consolidate("u")
    assert r["llm_fallbacks"] == 1 and r["groups"] == 1
    (lt_id,) = {m.superseded_by for m in ctx.store.get_memories("u", [a, b, c])}
    assert (await ctx.get(lt_id, "u")).text.startswith("Maya adopted a dog named Pixel. Pixel is a border collie.")


async def _llm_waiting(fake: FakeOpenAI) -> None:
    for _ in range(500):
        if fake.chat_requests:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the LLM was never called")


def _open_transactions(ctx: DeepContext) -> int:
    """PostgreSQL sessions of this database inside a transaction (other than this query's)."""
    with ctx.store.engine.connect() as conn:  # type: ignore[attr-defined]
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                )
            ).scalar_one()
        )


@pytest.mark.slow  # one of the longest tests
async def test_no_transaction_while_the_llm_works_and_concurrent_adds_survive(
    make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI
) -> None:
    writer = await make_ctx()
    a, b, c, _ = await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai, llm_timeout=30))
    reply = {"facts": [{"text": "Maya's border collie Pixel loves the beach", "sources": [0, 1, 2]}]}
    # long enough that the concurrent add below finishes first even on a loaded machine
    fake_openai.script(Reply.slow(5.0, content=json.dumps(reply)))
    run = asyncio.create_task(ctx.run_lifecycle("u", consolidate=True))
    await _llm_waiting(fake_openai)
    # the LLM is working: no transaction is open. SQLite: a writer that refuses to wait succeeds;
    # PostgreSQL: no session is inside a transaction.
    if ctx.store.backend == "sqlite":
        impatient = await make_ctx(sqlite_busy_timeout_ms=0)
        late = await say(impatient, "u", "Pixel chewed Maya's running shoes", entities=["Pixel", "Maya"])
    else:
        assert _open_transactions(ctx) == 0
        late = await say(writer, "u", "Pixel chewed Maya's running shoes", entities=["Pixel", "Maya"])
    assert not run.done()
    r = await run
    assert r["groups"] == 1 and r["memories_consolidated"] == 3
    # the memory added during the run is neither lost nor merged behind the LLM's back
    m = await ctx.get(late, "u")
    assert m.status is MemoryStatus.ACTIVE and m.tier is MemoryTier.SHORT_TERM
    assert {x.status for x in ctx.store.get_memories("u", [a, b, c])} == {MemoryStatus.MERGED}


async def test_a_source_changed_during_the_llm_call_skips_the_group(
    make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI
) -> None:
    writer = await make_ctx()
    a, b, c, _ = await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai, llm_timeout=30))
    reply = {"facts": [{"text": "Pixel, Maya's border collie, loves the beach", "sources": [0, 1, 2]}]}
    fake_openai.script(Reply.slow(1.0, content=json.dumps(reply)))
    run = asyncio.create_task(ctx.consolidate("u"))
    await _llm_waiting(fake_openai)
    await writer.delete(b, "u")
    await writer.update(c, "Pixel loves the beach at Cascais and at Nazaré", "u")
    r = await run
    assert r["groups_skipped"] == 1 and r["groups"] == 0 and r["long_term_created"] == 0
    ma, mb, mc = ctx.store.get_memories("u", [a, b, c])
    assert (ma.status, mb.status, mc.status) == (MemoryStatus.ACTIVE, MemoryStatus.DELETED, MemoryStatus.ACTIVE)
    assert mc.text.endswith("Nazaré") and ma.tier is MemoryTier.SHORT_TERM
    # the next run consolidates what is there now
    fake_openai.script(Reply.json({"facts": [{"text": "Maya's dog Pixel loves Cascais and Nazaré", "sources": [0, 1]}]}))
    r = await ctx.consolidate("u")
    assert r["groups"] == 1 and r["memories_consolidated"] == 2


WEEK = [
    ("On 2025-03-04 Maya went to Madrid and met an old friend.", ["Maya", "Madrid"]),
    ("On 2025-03-06 Maya went to Porto and cleaned the garage.", ["Maya", "Porto"]),
    ("On 2025-03-08 Maya went to Madrid and tried a new recipe.", ["Maya", "Madrid"]),
    ("On 2025-03-09 Maya went to Seville and bought a guitar.", ["Maya", "Seville"]),
    ("On 2025-03-11 Maya went to Porto and painted the fence.", ["Maya", "Porto"]),
    ("On 2025-03-12 Maya went to Lyon and visited a museum.", ["Maya", "Lyon"]),
]


async def test_offline_consolidation_keeps_unrelated_episodes_apart(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    """Episodes that read alike but are about different places are never one memory; the ones about
    one place become one sentence about its subject, each date kept, citing its sources."""
    ctx = await make_ctx(consolidation_similarity_threshold=0.3, consolidation_promote_importance=0.9)
    ids = []
    for content, entities in WEEK:
        ids.append(await say(ctx, "u", content, type="episodic", entities=entities, importance=0.5))
        clock.advance(days=1)
    r = await ctx.consolidate("u")
    assert r["groups"] == 2 and r["memories_consolidated"] == 4
    page = await ctx.list("u", tier="long_term", limit=100)
    by_text = {m.text: m for m in page.memories}
    assert set(by_text) == {
        "Maya went to Madrid twice: met an old friend (2025-03-04) and tried a new recipe (2025-03-08).",
        "Maya went to Porto twice: cleaned the garage (2025-03-06) and painted the fence (2025-03-11).",
    }
    for m in by_text.values():
        assert len(m.text) <= 300 and len(m.consolidated_from) == 2
        assert len({w for w in ("Madrid", "Porto", "Seville", "Lyon") if w in m.text}) == 1
    madrid = next(m for t, m in by_text.items() if "Madrid" in t)
    assert madrid.consolidated_from == [ids[0], ids[2]]
    # Seville and Lyon: alone, still short-term
    assert {(await ctx.get(i, "u")).tier for i in (ids[3], ids[5])} == {MemoryTier.SHORT_TERM}


async def test_offline_consolidation_lists_what_is_said_of_one_subject(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(consolidation_similarity_threshold=0.99)
    facts = [
        ("Jo works at Initech as a designer.", ["Jo", "Initech"]),
        ("Jo lives in Porto.", ["Jo", "Porto"]),
        ("Jo likes green tea.", ["Jo"]),
        ("Jo plays the cello in an orchestra.", ["Jo"]),
    ]
    for content, entities in facts:
        await say(ctx, "u", content, entities=entities)
        clock.advance(days=1)
    await ctx.consolidate("u")
    [lt] = (await ctx.list("u", tier="long_term", limit=10)).memories
    assert lt.text == "Jo works at Initech as a designer, lives in Porto, likes green tea and plays the cello in an orchestra."


async def test_offline_consolidation_cuts_a_long_group(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(consolidation_similarity_threshold=0.99)
    for i in range(8):
        await say(
            ctx,
            "u",
            f"Jo visited the Prado museum with a friend from school number {i} and stayed for the whole afternoon.",
            entities=["Jo", "Prado"],
        )
        clock.advance(days=1)
    await ctx.consolidate("u")
    lts = (await ctx.list("u", tier="long_term", limit=10)).memories
    assert len(lts) >= 3 and all(len(m.text) <= 300 for m in lts)
    assert sorted(i for m in lts for i in m.consolidated_from) == sorted(
        m.id for m in (await ctx.list("u", tier="short_term", include_inactive=True, limit=100)).memories
    )


async def test_llm_consolidation_asks_for_concise_facts_and_refuses_a_diary(
    make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI
) -> None:
    writer = await make_ctx()
    a, b, c, d = await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai))
    diary = " ".join(["Maya adopted a dog named Pixel, a border collie who loves the beach at Cascais."] * 6)
    fake_openai.script(Reply.json({"facts": [{"text": diary, "sources": [0, 1, 2]}]}))
    r = await ctx.consolidate("u")
    assert r["method"] == "llm" and r["memories_consolidated"] == 3
    [req] = fake_openai.chat_requests
    system = req.messages[0]["content"]
    assert "at most 300 characters" in system and "Never put unrelated events into one fact" in system
    lts = (await ctx.list("u", tier="long_term", limit=10)).memories
    assert lts and all(len(m.text) <= 300 for m in lts)
    assert sorted(i for m in lts for i in m.consolidated_from) == [a, b, c]
    assert {m.text for m in lts} == {
        "Maya adopted a dog named Pixel. Pixel is a border collie. Pixel loves the beach at Cascais."
    }


async def test_consolidation_keeps_agents_and_runs_apart(make_ctx: Callable[..., Any], clock: ManualClock) -> None:
    ctx = await make_ctx(consolidation_threshold=4)
    ids = {}
    for scope, (content, entities, importance) in zip([("vet", "r1"), ("vet", "r1"), ("walker", None)], PIXEL, strict=True):
        ids[content] = await say(ctx, "u", content, entities=entities, importance=importance, agent_id=scope[0], run_id=scope[1])
        clock.advance(days=1)
    await say(ctx, "u", "The Acme office has a rooftop garden", entities=["Acme"])
    r = await ctx.run_lifecycle("u")
    assert r["consolidation_ran"] and r["groups"] == 1 and r["memories_consolidated"] == 2
    merged = (await ctx.list("u", tier="long_term")).memories
    assert [(m.agent_id, m.run_id) for m in merged] == [("vet", "r1")]
    assert "adopted" in merged[0].text and "border collie" in merged[0].text and "beach" not in merged[0].text
    assert [m.id for m in (await ctx.list("u", agent_id="vet", tier="long_term")).memories] == [merged[0].id]
    walker = await ctx.get(ids[PIXEL[2][0]], "u")  # shares Pixel, but another agent's: not merged
    assert (walker.status, walker.tier, walker.agent_id) == (MemoryStatus.ACTIVE, MemoryTier.SHORT_TERM, "walker")
