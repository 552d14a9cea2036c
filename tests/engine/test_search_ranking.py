"""Ranking rules of hybrid search, end to end on a real database: earlier searches do not lift
what they returned; relevance spreads through the conversation when configured."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from deepcontext import DeepContext, SearchConfig
from deepcontext.retrieve import spread

CHAT = [
    {"role": "user", "name": "Maya", "content": "I work as a data engineer at Northwind Labs in Lisbon."},
    {"role": "assistant", "content": "Nice to meet you, Maya!"},
    {"role": "user", "name": "Maya", "content": "My sister Lena lives in Berlin and works as a nurse."},
    {"role": "user", "name": "Maya", "content": "On weekends I climb at the gym near the river."},
]
SAID = datetime(2024, 2, 3, 10, 30, tzinfo=timezone.utc)


async def test_being_returned_does_not_lift_rank(ctx: DeepContext) -> None:
    await ctx.add(CHAT, user_id="maya", conversation_id="c1", timestamp=SAID)
    question = "Where does Maya's sister live?"
    before = await ctx.search(question, user_id="maya", limit=10)
    for _ in range(20):
        await ctx.search("Northwind Labs data engineer", user_id="maya", limit=3)
    await ctx.close()  # waits for the background access updates
    await ctx.init()
    counted = {m.id: m.access_count for m in (await ctx.list("maya", limit=100)).memories}
    assert max(counted.values()) >= 20  # the accesses were counted
    after = await ctx.search(question, user_id="maya", limit=10)
    assert [(r.memory_id, r.score) for r in after.results] == [(r.memory_id, r.score) for r in before.results]


def test_spread_shares_neighbour_and_conversation_relevance() -> None:
    scores = {"a": 1.0, "b": 0.2, "c": 0.5, "x": 0.6}
    turn_of = {"a": 10, "b": 11, "c": 30, "x": 12}
    conv_of = {"a": "s1", "b": "s1", "c": "s1", "x": "s2"}
    # b answers a: it gains half of a's score; x is the next turn id but another conversation
    out = spread(scores, turn_of, conv_of, neighbour=0.5)
    assert out["b"] == pytest.approx(0.2 + 0.5 * 1.0)
    assert out["a"] == pytest.approx(1.0 + 0.5 * 0.2)
    assert out["c"] == pytest.approx(0.5) and out["x"] == pytest.approx(0.6)
    # the session term is the same for every candidate of a conversation: it reorders across them only
    out = spread(scores, turn_of, conv_of, session=1.0, session_top=2)
    assert out["b"] - 0.2 == pytest.approx(out["c"] - 0.5) == pytest.approx(1.5)
    assert out["x"] == pytest.approx(0.6 + 0.6)
    assert out["b"] > out["x"]  # lifted by its conversation's other matches
    assert spread(scores, turn_of, conv_of) == scores
    # a candidate without a turn or conversation keeps its score
    assert spread({"m": 0.3, **scores}, turn_of, conv_of, neighbour=1.0, session=1.0)["m"] == pytest.approx(0.3)


async def test_spread_settings_in_a_search(ctx: DeepContext) -> None:
    await ctx.add(CHAT, user_id="maya", conversation_id="c1", timestamp=SAID)
    await ctx.add([{"role": "user", "name": "Maya", "content": "Lena visited me in Lisbon last spring."}], user_id="maya", conversation_id="c2")
    plain = await ctx.search("Lena nurse Berlin", user_id="maya", limit=10, config=SearchConfig(session_weight=0.0))
    shared = await ctx.search("Lena nurse Berlin", user_id="maya", limit=10, config=SearchConfig(session_weight=1.0, neighbour_weight=0.5))
    assert {r.memory_id for r in plain.results} == {r.memory_id for r in shared.results}
    # the matches of the conversation that matches in several places gain; the others do not
    gain = {r.memory_id: r.rrf_score for r in shared.results}
    for r in plain.results:
        assert gain[r.memory_id] >= r.rrf_score
        if r.conversation_id == "c1":
            assert gain[r.memory_id] > r.rrf_score
