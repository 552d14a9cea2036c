"""add -> search -> update / delete / delete_user, end to end on a real database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from deepcontext import ConfigurationError, DeepContext, MemoryNotFoundError, MemoryStatus, MemoryTier

CHAT = [
    {"role": "user", "name": "Maya", "content": "I work as a data engineer at Northwind Labs in Lisbon."},
    {"role": "assistant", "content": "Nice to meet you, Maya!"},
    {"role": "user", "name": "Maya", "content": "My sister Lena lives in Berlin and works as a nurse."},
]
SAID = datetime(2024, 2, 3, 10, 30, tzinfo=UTC)


async def test_add_then_search_finds_it_with_provenance(ctx: DeepContext) -> None:
    r = await ctx.add(CHAT, user_id="maya", conversation_id="c1", timestamp=SAID)
    assert len(r.turn_ids) == 3
    assert r.memories_added >= 3  # at least one turn memory per user/assistant message
    res = await ctx.search("Where does Maya work?", user_id="maya", limit=5)
    assert res.results, "nothing found"
    top_texts = [x.text for x in res.results[:3]]
    assert any("Northwind Labs" in t for t in top_texts), top_texts
    hit = next(x for x in res.results if "Northwind Labs" in x.text)
    assert hit.sources, "a memory without provenance"
    assert hit.sources[0].turn_id == r.turn_ids[0]
    assert hit.sources[0].conversation_id == "c1"
    assert hit.sources[0].said_at == SAID
    assert hit.said_at == SAID
    # scores are sorted, non-negative
    scores = [x.score for x in res.results]
    assert scores == sorted(scores, reverse=True)
    assert all(s >= 0 for s in scores)


async def test_turns_are_stored_verbatim_as_a_chain(ctx: DeepContext) -> None:
    r1 = await ctx.add(CHAT[:2], user_id="maya", conversation_id="c1")
    r2 = await ctx.add(CHAT[2:], user_id="maya", conversation_id="c1")
    turns = await ctx.turns("maya", "c1")
    assert [t.content for t in turns] == [m["content"] for m in CHAT]
    assert [t.id for t in turns] == r1.turn_ids + r2.turn_ids
    assert turns[0].parent_ids == []
    for prev, cur in zip(turns, turns[1:], strict=False):
        assert cur.parent_ids == [prev.id]
    assert turns[0].name == "Maya" and turns[1].role == "assistant"


async def test_update_keeps_the_old_text_in_history(ctx: DeepContext) -> None:
    r = await ctx.add(CHAT[:1], user_id="maya")
    mid = r.memory_ids[0]
    before = await ctx.get(mid, "maya")
    await ctx.update(mid, "Maya works at Contoso in Porto", "maya")
    after = await ctx.get(mid, "maya")
    assert after.text == "Maya works at Contoso in Porto"
    hist = await ctx.history(mid, "maya")
    assert [h.event.value for h in hist][-1] == "UPDATE"
    assert hist[-1].old_text == before.text
    assert hist[-1].new_text == after.text
    res = await ctx.search("Contoso Porto", user_id="maya", limit=3)
    assert res.results[0].memory_id == mid


async def test_delete_hides_from_search_and_list(ctx: DeepContext) -> None:
    r = await ctx.add(CHAT, user_id="maya")
    page = await ctx.list("maya", limit=100)
    target = next(m for m in page.memories if "Berlin" in m.text)
    await ctx.delete(target.id, "maya")
    res = await ctx.search("Lena Berlin nurse", user_id="maya", limit=20)
    assert target.id not in [x.memory_id for x in res.results]
    page2 = await ctx.list("maya", limit=100)
    assert target.id not in [m.id for m in page2.memories]
    assert page2.total == page.total - 1
    gone = await ctx.get(target.id, "maya")
    assert gone.status is MemoryStatus.DELETED
    assert (await ctx.history(target.id, "maya"))[-1].event.value == "DELETE"
    with pytest.raises(MemoryNotFoundError):
        await ctx.delete(target.id, "maya")  # already deleted
    assert r.memory_ids


async def test_delete_user_leaves_zero_rows_everywhere(ctx: DeepContext) -> None:
    await ctx.add(CHAT, user_id="maya", conversation_id="a")
    await ctx.add(CHAT, user_id="other", conversation_id="a")
    await ctx.search("Lisbon", user_id="maya")  # warm caches
    counts = await ctx.stats("maya")
    assert counts["memories"] > 0 and counts["turns"] == 3
    deleted = await ctx.delete_user("maya")
    assert sum(deleted.values()) >= sum(counts.values())
    assert all(v == 0 for v in (await ctx.stats("maya")).values()), await ctx.stats("maya")
    assert (await ctx.search("Lisbon", user_id="maya")).results == []
    # the other user is untouched
    assert (await ctx.stats("other"))["turns"] == 3
    assert (await ctx.search("Lisbon", user_id="other")).results


async def test_exact_duplicates_are_noop(ctx: DeepContext) -> None:
    first = await ctx.add(CHAT, user_id="maya")
    n = (await ctx.list("maya", limit=1000)).total
    again = await ctx.add(CHAT, user_id="maya")
    assert again.memories_added == 0
    assert again.memories_unchanged >= first.memories_added
    assert (await ctx.list("maya", limit=1000)).total == n
    # the second turns were linked as extra provenance
    mem = await ctx.get(first.memory_ids[0], "maya")
    assert {s.turn_id for s in mem.sources} >= {first.turn_ids[0], again.turn_ids[0]}
    assert "NOOP" in [h.event.value for h in await ctx.history(mem.id, "maya")]


async def test_filters_apply_to_every_leg(ctx: DeepContext, clock) -> None:
    await ctx.add(CHAT, user_id="maya", conversation_id="old", timestamp=SAID)
    await ctx.add(
        [{"role": "user", "name": "Maya", "content": "I moved from Lisbon to Porto for a new job at Contoso."}],
        user_id="maya",
        conversation_id="new",
        timestamp=SAID + timedelta(days=30),
        metadata={"source": "import"},
    )
    for preset in ("hybrid", "vector", "keyword", "graph"):
        res = await ctx.search("Lisbon", user_id="maya", limit=20, conversation_id="new", config=preset)
        assert all(x.conversation_id == "new" for x in res.results), preset
        res = await ctx.search("Lisbon Maya", user_id="maya", limit=20, tier="working", config=preset)
        assert all(x.tier is MemoryTier.WORKING for x in res.results), preset
        res = await ctx.search("Lisbon Maya", user_id="maya", limit=20, before=SAID + timedelta(days=1), config=preset)
        assert all(x.said_at < SAID + timedelta(days=1) for x in res.results), preset
        res = await ctx.search("Lisbon Maya", user_id="maya", limit=20, metadata={"source": "import"}, config=preset)
        assert all(x.metadata.get("source") == "import" for x in res.results), preset
    hybrid = await ctx.search("Lisbon", user_id="maya", limit=20, metadata={"source": "import"})
    assert hybrid.results and all(x.conversation_id == "new" for x in hybrid.results)


async def test_access_counts_only_for_returned_results(ctx: DeepContext) -> None:
    await ctx.add(CHAT, user_id="maya")
    res = await ctx.search("Northwind Labs", user_id="maya", limit=1)
    await ctx.close()  # waits for the background access update
    await ctx.init()
    page = await ctx.list("maya", limit=100)
    counts = {m.id: m.access_count for m in page.memories}
    returned = res.results[0].memory_id
    assert counts[returned] == 1
    assert all(c == 0 for mid, c in counts.items() if mid != returned)


async def test_expired_memories_disappear_at_once(ctx: DeepContext, clock) -> None:
    await ctx.add([{"role": "user", "content": "The door code this week is 4471."}], user_id="maya", ttl=3600)
    assert (await ctx.search("door code", user_id="maya")).results
    clock.advance(hours=2)
    assert (await ctx.search("door code", user_id="maya")).results == []
    assert (await ctx.list("maya")).total == 0


def test_a_misspelt_setting_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigurationError, match=r"unknown setting: 'rrf_kk' \(did you mean 'rrf_k'\?\)"):
        DeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder="hash", rrf_kk=5)
    with pytest.raises(ConfigurationError, match="unknown settings: 'colour', 'vector_wieght'"):
        DeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder="hash", vector_wieght=1, colour="red")
    assert not (tmp_path / "s.db").exists()
    assert DeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder="hash", rrf_k=5).settings.rrf_k == 5
