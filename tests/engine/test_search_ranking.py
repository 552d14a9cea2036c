"""Ranking rules of hybrid search, end to end on a real database: earlier searches do not lift
what they returned; relevance spreads through the conversation; a time the query names lifts what
was said then."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deepcontext import DeepContext, ManualClock, SearchConfig
from deepcontext.embed import HashEmbedder
from deepcontext.retrieve import spread
from deepcontext.retrieve.dates import query_window
from deepcontext.retrieve.search import Candidates, rank
from deepcontext.store.interface import RankFields

CHAT = [
    {"role": "user", "name": "Maya", "content": "I work as a data engineer at Northwind Labs in Lisbon."},
    {"role": "assistant", "content": "Nice to meet you, Maya!"},
    {"role": "user", "name": "Maya", "content": "My sister Lena lives in Berlin and works as a nurse."},
    {"role": "user", "name": "Maya", "content": "On weekends I climb at the gym near the river."},
]
SAID = datetime(2024, 2, 3, 10, 30, tzinfo=UTC)


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
    out = spread(scores, turn_of, conv_of, before=0.5, after=0.25)
    assert out["b"] == pytest.approx(0.2 + 0.5 * 1.0)
    assert out["a"] == pytest.approx(1.0)  # a weaker neighbour lends nothing
    assert out["c"] == pytest.approx(0.5) and out["x"] == pytest.approx(0.6)
    # borrowed relevance lifts a turn up to its lender, never past it
    close = spread({"a": 1.0, "b": 0.9}, {"a": 10, "b": 11}, {"a": "s1", "b": "s1"}, before=0.5)
    assert close["b"] == pytest.approx(1.0) and close["a"] == pytest.approx(1.0)
    # the session term is the same for every candidate of a conversation: it reorders across them only
    out = spread(scores, turn_of, conv_of, session=1.0, session_top=2)
    assert out["b"] - 0.2 == pytest.approx(out["c"] - 0.5) == pytest.approx(1.5)
    assert out["x"] == pytest.approx(0.6 + 0.6)
    assert out["b"] > out["x"]  # lifted by its conversation's other matches
    assert spread(scores, turn_of, conv_of) == scores
    # a candidate without a turn or conversation keeps its score
    assert spread({"m": 0.3, **scores}, turn_of, conv_of, before=1.0, after=1.0, session=1.0)["m"] == pytest.approx(0.3)


async def test_spread_settings_in_a_search(ctx: DeepContext) -> None:
    await ctx.add(CHAT, user_id="maya", conversation_id="c1", timestamp=SAID)
    await ctx.add(
        [{"role": "user", "name": "Maya", "content": "Lena visited me in Lisbon last spring."}],
        user_id="maya",
        conversation_id="c2",
    )
    plain = await ctx.search("Lena nurse Berlin", user_id="maya", limit=10, config=SearchConfig(session_weight=0.0))
    shared = await ctx.search("Lena nurse Berlin", user_id="maya", limit=10, config=SearchConfig(session_weight=1.0))
    assert {r.memory_id for r in plain.results} == {r.memory_id for r in shared.results}
    # the conversation that matches in several places rises past the other; nothing moves within one
    pos = {r.memory_id: i for i, r in enumerate(shared.results)}
    for i, r in enumerate(plain.results):
        if r.conversation_id == "c1":
            assert pos[r.memory_id] <= i
        else:
            assert pos[r.memory_id] >= i
    c1 = [r.memory_id for r in plain.results if r.conversation_id == "c1"]
    assert c1 == [r.memory_id for r in shared.results if r.conversation_id == "c1"]


def test_query_window_resolves_the_time_a_query_names() -> None:
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    july = query_window("When did Maya go camping in July?", now)
    assert july is not None and july.month == 7
    # a month without a year: that month of any year
    assert july.contains(datetime(2023, 7, 14, tzinfo=UTC))
    assert not july.contains(datetime(2023, 8, 1, tzinfo=UTC), None)
    may = query_window("What did she paint in May 2023?", now)
    assert may is not None and may.month is None
    assert may.contains(datetime(2023, 5, 31, 23, tzinfo=UTC))
    assert not may.contains(datetime(2024, 5, 2, tzinfo=UTC))
    week = query_window("What did I cook last week?", now)
    assert week is not None and week.contains(datetime(2026, 11, 25, tzinfo=UTC))
    assert not week.contains(datetime(2026, 12, 1, tzinfo=UTC))
    assert query_window("Where does Maya work?", now) is None


async def test_a_named_month_lifts_what_was_said_then(ctx: DeepContext) -> None:
    for month, dish in ((3, "risotto"), (7, "paella"), (11, "curry")):
        said = datetime(2024, month, 10, 19, tzinfo=UTC)
        msg = {"role": "user", "name": "Maya", "content": f"I cooked a big {dish} for my friends tonight.", "timestamp": said}
        await ctx.add([msg], user_id="maya", conversation_id=f"m{month}", timestamp=said)
    question = "What did Maya cook for her friends in July?"
    dated = await ctx.search(question, user_id="maya", limit=3)
    assert "paella" in dated.results[0].text, [r.text for r in dated.results]
    plain = await ctx.search(question, user_id="maya", limit=3, config=SearchConfig(date_boost=0.0))
    top = dated.results[0]
    same = next(r for r in plain.results if r.memory_id == top.memory_id)
    assert top.rrf_score == pytest.approx(same.rrf_score)  # the same match, lifted by its date only


async def test_vector_leg_reads_at_least_vector_min_k(ctx: DeepContext) -> None:
    from deepcontext.retrieve.search import gather, leg_k
    from deepcontext.services.validation import parse_filters

    notes = [
        {"role": "user", "name": "Maya", "content": f"Reminder {i}: water plant number {i} on the balcony."} for i in range(40)
    ]
    await ctx.add(notes, user_id="maya", conversation_id="c1", timestamp=SAID)
    shallow = SearchConfig(min_leg_k=5, vector_min_k=0)
    deep = SearchConfig(min_leg_k=5, vector_min_k=30)
    # the floor raises the vector leg only, and only below it: a large limit reads its multiple
    assert (leg_k(shallow, 2, "vector"), leg_k(deep, 2, "vector")) == (12, 30)
    assert leg_k(deep, 2, "keyword") == leg_k(deep, 2, "graph") == 5
    assert leg_k(deep, 10, "vector") == 60
    assert leg_k(SearchConfig(vector_k_factor=0, vector_min_k=30), 2, "vector") == 0
    query = "When should the balcony plants be watered?"
    vector = ctx.embedder.embed_one(query)
    found = {}
    for name, cfg in (("shallow", shallow), ("deep", deep)):
        with ctx.store.reading():
            got = gather(ctx.store, "maya", query, vector, limit=2, filters=parse_filters(), config=cfg, now=ctx.clock.now())
        found[name] = got.legs["vector"]
    assert len(found["shallow"]) == 12 and len(found["deep"]) == 30


async def test_the_reply_to_a_matching_question_joins_the_results(db_url: str, clock: ManualClock) -> None:
    # without keyword context the reply shares no word with the question: only spreading reaches it
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock, keyword_context_turns=0) as ctx:
        await _reply_joins(ctx)


async def _reply_joins(ctx: DeepContext) -> None:
    chat = [
        {"role": "user", "name": "Maya", "content": f"Chore {i}: sort the {w} drawer before dinner."}
        for i, w in enumerate(["sock", "spoon", "cable", "paper", "spice", "tool", "toy", "linen", "pen", "tape"])
    ]
    chat += [
        {"role": "user", "name": "Lena", "content": "Did you ever visit the lighthouse at Cape Spear?"},
        {"role": "user", "name": "Maya", "content": "Yes, last Tuesday with my cousins!"},
    ]
    added = await ctx.add(chat, user_id="maya", conversation_id="c1", timestamp=SAID)
    reply = added.turn_ids[-1]
    # legs too shallow to reach the reply, which shares no word with the question
    shallow = {"min_leg_k": 2, "vector_min_k": 0, "vector_k_factor": 1, "keyword_k_factor": 1, "graph_k_factor": 1}
    query = "When was the lighthouse at Cape Spear visited?"

    async def cited(**cfg: object) -> set[int]:
        out = await ctx.search(query, user_id="maya", limit=3, config=SearchConfig(**shallow, **cfg))
        return {s.turn_id for r in out.results for s in r.sources}

    assert reply not in await cited(neighbour_turns=False)
    assert reply in await cited()
    # the lift comes from the spreading: without it, nothing lends the reply a score
    assert reply not in await cited(before_weight=0.0, after_weight=0.0)


def _fields(first_turn: int, conversation: str | None = "c1", importance: float = 0.5) -> RankFields:
    return RankFields(
        importance=importance, confidence=1.0, when=SAID, access_count=0, active=True, first_turn=first_turn,
        conversation_id=conversation,
    )  # fmt: skip


def test_neighbour_turns_join_once_behind_their_lender() -> None:
    # turn memories 10, 11, 12, 13 of turns 10-13 in one conversation; fact 1 merged from turns 10
    # and 20 of two conversations (no conversation of its own), first said at turn 10
    fields = {1: _fields(10, None), 10: _fields(10), 11: _fields(11), 13: _fields(13)}
    outside = {12: _fields(12), 14: _fields(14), 10: fields[10]}
    reads: list[list[int]] = []

    def read(turns: list[int]) -> dict[int, RankFields]:
        reads.append(turns)
        return {m: f for m, f in outside.items() if f.first_turn in turns}

    cfg = SearchConfig()
    now = SAID
    got = rank(Candidates("q", {"vector": [11, 1], "keyword": [10]}, fields), cfg, now, 10, read)
    ids = [r.memory_id for r in got]
    assert len(ids) == len(set(ids)) and len({r.group for r in got}) == len(got)  # nothing twice
    # turn 12 answers turn 11 (a result): it joins, scored by what 11 lends, right behind it
    assert 12 in ids and ids.index(12) > ids.index(11)
    lent = next(r for r in got if r.memory_id == 12)
    assert 0 < lent.score <= next(r.score for r in got if r.memory_id == 11)
    assert set(lent.legs) == {"neighbour", "fused"}
    # turn 10 is a candidate's (the fact's) turn: not read again; 14 is next to no result
    assert all(10 not in turns for turns in reads) and 14 not in ids
    # without the reader, or with neighbour turns off, only the candidates come back
    for r in (rank(Candidates("q", {"vector": [11, 1], "keyword": [10]}, fields), cfg, now, 10),
              rank(Candidates("q", {"vector": [11, 1], "keyword": [10]}, fields), SearchConfig(neighbour_turns=False), now, 10, read)):  # fmt: skip
        assert 12 not in {x.memory_id for x in r}
