"""The dialogue bound to a DeepContext (``ctx.dialogue``), on SQLite and PostgreSQL: every round feeds
memory extraction with provenance to the node's turns, key memories are embedded, compression keeps
every turn and every key memory, the offline planner needs no model, the path for context builders."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.dialogue import (
    SUMMARY_LABEL,
    DialogueSession,
    LLMPlanner,
    OfflinePlanner,
)
from deepcontext.embed import HashEmbedder
from deepcontext.errors import ConfigurationError
from deepcontext.llm import OpenAICompatibleLLM
from tests.dialogue.helpers import ScriptedAgent, pair
from tests.support.fake_openai import FakeOpenAI, Reply

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
async def ctx(db_url: str) -> AsyncIterator[DeepContext]:
    c = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=ManualClock(T0))
    await c.init()
    try:
        yield c
    finally:
        await c.close()


async def _sources(ctx: DeepContext, user: str, memory_id: int) -> set[int]:
    return {s.turn_id for s in (await ctx.get(memory_id, user)).sources}


async def test_every_round_feeds_memory_extraction_with_the_nodes_turns(ctx: DeepContext) -> None:
    session = await ctx.dialogue("ana", "trip", fetcher=ScriptedAgent())
    assert isinstance(session, DialogueSession) and isinstance(session.planner, OfflinePlanner)
    n0 = await session.record("I work at Globex Corporation in Madrid.", "Madrid is lovely.")
    derived = session.last_derived
    assert derived is not None and derived.memories_added >= 3
    turns0 = session.backend.node_turn_ids([n0])[n0]
    assert derived.turn_ids == turns0 and len(turns0) == 2
    for mid in derived.memory_ids:  # every derived memory cites the node's turns, nothing else
        assert await _sources(ctx, "ana", mid) <= set(turns0)

    n1 = await session.chat("Where do I work again?")
    turns1 = session.backend.node_turn_ids([n1])[n1]
    assert session.last_derived is not None and session.last_derived.turn_ids == turns1
    stored = await ctx.turns("ana", "trip", limit=100)
    assert [t.id for t in stored] == turns0 + turns1  # derivation inserted no turn
    res = await ctx.search("Globex Madrid", user_id="ana")
    assert res.results and all({s.turn_id for s in r.sources} <= set(turns0 + turns1) for r in res.results)
    fact = next(r for r in res.results if r.tier.value == "short_term")
    assert "Globex" in fact.text and {s.turn_id for s in fact.sources} == {turns0[0]}


async def test_nodes_added_through_the_sessions_graph_are_derived_on_flush(ctx: DeepContext) -> None:
    session = await ctx.dialogue("bo", "c1")
    ids = session.graph.add_chain([pair("My sister Lina lives in Porto.", "Nice."), pair("I like green tea.", "Noted.")])
    assert (await ctx.list("bo")).total == 0  # not derived yet
    response = await session.flush()
    assert response is not None and set(response.turn_ids) == {t for n in ids for t in session.backend.node_turn_ids([n])[n]}
    assert await session.flush() is None  # nothing left
    assert (await ctx.list("bo")).total >= 4


async def test_key_memories_are_embedded_and_found_by_vector_search(ctx: DeepContext) -> None:
    session = await ctx.dialogue("cy", "physics", fetcher=ScriptedAgent())
    await session.record("Hello", "Hi")
    node = await session.chat("Note the energy formula E = mc^2 for later.")
    (key,) = session.memory_store.get_all_memories()
    assert key.pinned and not key.packable and key.source_nodes == {node}
    res = await ctx.search("energy formula E = mc^2", user_id="cy", config="vector")
    assert key.id in [r.memory_id for r in res.results]
    assert await _sources(ctx, "cy", key.id) == set(session.backend.node_turn_ids([node])[node])


async def test_compression_keeps_every_turn_and_every_key_memory(ctx: DeepContext) -> None:
    agent = ScriptedAgent(summary_text="Earlier rounds covered topics zero to four.")
    session = await ctx.dialogue("di", "long", fetcher=agent, max_context_nodes=3, pack_keep_recent=1)
    formula = await session.record("Remember the formula a^2 + b^2 = c^2.", "Pythagoras, yes.")
    for i in range(6):
        await session.chat(f"Round {i}: tell me about topic number {i}")
    graph = session.graph
    summaries = [n for n in graph.nodes if graph.nodes[n].is_summary]
    assert summaries, "the long chain was packed"
    assert not graph.nodes[formula].archived  # cited by a non-packable key memory: never compressed
    (key,) = [m for m in session.memory_store.get_all_memories() if "formula" in m.tags]
    assert key.status == "committed"
    assert "a^2 + b^2 = c^2" in agent.answers[-1]["prev_messages"][0]["content"]  # still in the context

    stored = await ctx.turns("di", "long", limit=1000)
    contents = [t.content for t in stored]
    for i in range(6):  # every original turn is still there
        assert f"Round {i}: tell me about topic number {i}" in contents
    archived = [t for t in stored if t.archived]
    assert any(t.kind == "message" for t in archived)  # compressed rounds: archived, not deleted
    assert sum(t.kind == "summary" for t in stored) == len(summaries)
    page = await ctx.list("di", limit=200)
    for m in page.memories:  # provenance of derived memories survives compression
        assert {s.turn_id for s in m.sources} <= {t.id for t in stored}


async def test_without_a_model_planning_is_offline_and_chat_says_why(ctx: DeepContext) -> None:
    session = await ctx.dialogue("ed", "c")
    assert isinstance(session.planner, OfflinePlanner) and session.fetcher is None
    with pytest.raises(ConfigurationError, match="no LLM"):
        await session.chat("hello")
    node = await session.record("I prefer short answers.", "Understood.")
    assert ["preference" in m.tags for m in session.memory_store.get_all_memories()] == [True]
    sid = await ctx.compress_conversation("ed", "c", keep_recent=0)
    assert sid is None  # a single node: nothing to compress
    for i in range(4):
        await session.record(f"Question {i} about databases and indexes", f"Answer {i}: use an index.")
    sid = await ctx.compress_conversation("ed", "c", keep_recent=1)
    assert sid is not None
    summary = session.graph.nodes[sid]
    assert summary.is_summary and "index" in summary.context.llm_role.content.lower()  # extractive
    assert node in summary.summarized_ids and session.graph.nodes[node].archived  # packable: compressed


async def test_the_conversation_path_for_context_builders(ctx: DeepContext, db_url: str) -> None:
    session = await ctx.dialogue("fay", "c", fetcher=ScriptedAgent(summary_text="Short summary."))
    nodes = [await session.record(f"Question {i}", f"Answer {i}") for i in range(5)]
    sid = await session.compress(keep_recent=2)
    assert sid is not None
    path = await ctx.conversation_path("fay", "c", max_nodes=10)
    assert path.node_ids == [sid, nodes[-2], nodes[-1]] and not path.truncated
    assert path.nodes[0].is_summary and path.nodes[0].summarized_ids == nodes[:3]
    msgs = path.messages()
    assert msgs[0] == {"role": "system", "content": "Summary of the earlier conversation: Short summary."}
    assert [m["content"] for m in msgs[1:]] == ["Question 3", "Answer 3", "Question 4", "Answer 4"]
    assert path.turn_ids()[-1] == session.backend.node_turn_ids([nodes[-1]])[nodes[-1]][-1]
    short = await ctx.conversation_path("fay", "c", max_nodes=1)
    assert short.node_ids == [nodes[-1]] and short.truncated and short.chain_length == 3
    old = await ctx.conversation_path("fay", "c", node_id=nodes[1])  # an archived node: its history
    assert old.node_ids == nodes[:2]
    assert (await ctx.conversation_path("fay", "nothing-here")).nodes == []

    other = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=ManualClock(T0))
    await other.init()  # another process: the same graph from the database
    try:
        again = await other.conversation_path("fay", "c", max_nodes=10)
        assert again.as_dict() == path.as_dict()
    finally:
        await other.close()


async def test_plain_adds_and_the_dialogue_share_the_conversation(ctx: DeepContext) -> None:
    r = await ctx.add(
        [{"role": "user", "content": "I live in Lisbon."}, {"role": "assistant", "content": "Great city."}], "gus", "c"
    )
    session = await ctx.dialogue("gus", "c")
    assert session.graph.tip_node_id() == r.turn_ids[0]  # the add's pair is a node
    before = (await ctx.list("gus")).total
    node = await session.record("I moved to Porto last week.", "Congratulations!")
    assert session.graph.get_ancestor_chain(node) == [r.turn_ids[0], node]
    assert session.last_derived is not None and set(session.last_derived.turn_ids).isdisjoint(r.turn_ids)
    assert (await ctx.list("gus")).total > before


async def test_with_an_llm_the_session_plans_and_answers_with_it(db_url: str, fake_openai: FakeOpenAI) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if system.startswith("You plan the context"):
            return Reply.json(
                {"selected_node_ids": [], "memories_to_extract": [{"content": "User likes jazz", "tags": ["preference"]}]}
            )
        if system.startswith("You are a knowledgeable assistant"):
            return Reply.text("Jazz it is.")
        return Reply.error(400, "not scripted")  # extraction: the offline fallback takes over

    fake_openai.responder = respond
    llm = OpenAICompatibleLLM("fake-model", base_url=fake_openai.url, api_key="sk-test-0123456789abcdef", timeout=5)
    c = DeepContext(
        database_url=db_url,
        embedder=HashEmbedder(256),
        clock=ManualClock(T0),
        llm=llm,
        llm_offline_fallback=True,
        summary_every_turns=0,
    )
    await c.init()
    try:
        session = await c.dialogue("hal", "music")
        assert isinstance(session.planner, LLMPlanner)
        await session.record("Hi", "Hello")
        node = await session.chat("Play something I like")
        assert session.graph.nodes[node].context.llm_role.content == "Jazz it is."
        assert [m.content for m in session.memory_store.get_all_memories()] == ["User likes jazz"]
        assert session.last_report is not None and session.last_report.plan_error is None
        assert session.last_derived is not None  # extraction ran (offline fallback after the 400)
        sid = await session.compress(keep_recent=0)  # the model fails on summaries: an extractive one
        assert sid is not None and "Play something I like" in session.graph.nodes[sid].context.llm_role.content
    finally:
        await c.close()
        await llm.aclose()


async def test_summary_label_is_kept_for_exports(ctx: DeepContext) -> None:
    session = await ctx.dialogue("ivy", "c")
    for i in range(4):
        await session.record(f"Step {i} of the recipe: add flour", "ok")
    sid = await session.compress(keep_recent=1)
    assert sid is not None
    assert session.graph.nodes[sid].context.user_role.content == SUMMARY_LABEL


def test_the_blocking_shell(tmp_path: Any) -> None:
    from deepcontext import SyncDeepContext

    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder=HashEmbedder(256), clock=ManualClock(T0)) as s:
        session = s.dialogue("jo", "c", fetcher=ScriptedAgent())
        first = session.record("My name is Jo.", "Hi Jo!")
        nodes = [first] + [session.chat(f"Question {i} about gardening") for i in range(3)]
        assert session.graph.get_ancestor_chain(nodes[-1]) == nodes and session.last_derived is not None
        sid = s.compress_conversation("jo", "c", keep_recent=1)
        assert sid is not None
        assert s.conversation_path("jo", "c").node_ids == [sid, nodes[-1]]
        assert json.loads(s.export_conversation("jo", "c", "json"))["tip"] == nodes[-1]
        assert session.flush() is None
