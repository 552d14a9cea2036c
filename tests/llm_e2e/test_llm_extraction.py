"""`DeepContext.add` with LLM extraction: what is stored, what the LLM was asked, what is refused."""

from __future__ import annotations

from datetime import UTC, datetime

from deepcontext import DeepContext
from deepcontext.llm import Router, prompts
from deepcontext.types import MemoryTier, MemoryType
from tests.llm_e2e.conftest import KEY, Brain, MakeCtx, decisions, dumps, extraction, fact, user
from tests.support.fake_openai import FakeOpenAI, Reply

CHAT = user(
    "I moved to Berlin yesterday!",
    "I'm a data engineer at Acme now.",
    "Note to self: to deploy my app, run make release.",
)
GOOD = extraction(
    fact("Ana moved to Berlin on 2025-04-30", 0, type="episodic", occurred_at="2025-04-30", entities=["Ana", "Berlin"]),
    fact("Ana works at Acme as a data engineer", 1, entities=["Ana", "Acme"], importance=0.9),
    fact("To deploy Ana's app, run make release", 2, type="procedural"),
    entities=[
        {"name": "Ana", "type": "person", "source_indices": [0, 1]},
        {"name": "Berlin", "type": "city", "source_indices": [0]},
        {"name": "Acme", "type": "company", "source_indices": [1]},
    ],
    relations=[
        {"source": "Ana", "relation": "lives in", "target": "Berlin", "source_indices": [0]},
        {"source": "Ana", "relation": "works_at", "target": "Acme", "source_indices": [1]},
    ],
)


async def facts_of(ctx: DeepContext, user_id: str = "ana") -> dict[str, object]:
    page = await ctx.list(user_id, tier="short_term", include_inactive=True)
    return {m.text: m for m in page.memories}


async def test_extracted_facts_are_stored_with_types_dates_entities_relations_and_provenance(
    ctx: DeepContext, brain: Brain
) -> None:
    brain.extract(GOOD)
    r = await ctx.add(CHAT, user_id="ana", conversation_id="move")
    assert r.episodic_facts == ["Ana moved to Berlin on 2025-04-30"]
    assert r.semantic_facts == ["Ana works at Acme as a data engineer"]
    assert r.procedural_facts == ["To deploy Ana's app, run make release"]
    assert r.memories_added == 3 + 3  # three facts, three turn memories
    assert r.relationships_found == 2 and len(r.turn_ids) == 3

    stored = await facts_of(ctx)
    assert set(stored) == {f["text"] for f in GOOD["facts"]}
    moved = stored["Ana moved to Berlin on 2025-04-30"]
    assert moved.memory_type is MemoryType.EPISODIC and moved.tier is MemoryTier.SHORT_TERM
    assert moved.occurred_at == datetime(2025, 4, 30, tzinfo=UTC)
    assert moved.metadata["occurred_at_precision"] == "day"
    assert moved.source == "llm"
    assert [s.turn_id for s in moved.sources] == [r.turn_ids[0]]
    assert set(moved.entities) == {"Ana", "Berlin"}
    work = stored["Ana works at Acme as a data engineer"]
    assert work.importance == 0.9 and [s.turn_id for s in work.sources] == [r.turn_ids[1]]
    assert stored["To deploy Ana's app, run make release"].memory_type is MemoryType.PROCEDURAL

    graph = {(n["entity"], n["relation"]): n for n in await ctx.get_entity_graph("ana", "Ana", depth=1)}
    assert graph[("Berlin", "lives_in")]["entity_type"] == "location"
    assert graph[("Acme", "works_at")]["entity_type"] == "organization"

    res = await ctx.search("Where does Ana work?", user_id="ana", tier="short_term", limit=3)
    assert res.results[0].text == "Ana works at Acme as a data engineer"

    # what the LLM was asked: the messages numbered, with speaker and time, the extraction rules
    assert len(brain.seen["extract"]) == 1 and brain.seen["classify"] == []  # nothing stored before: no classification
    asked = brain.user_prompt("extract")
    assert "[0] (2025-05-01 12:00 UTC, Thursday) Ana (user): I moved to Berlin yesterday!" in asked
    assert "[2]" in asked and "Current time: 2025-05-01 12:00 UTC" in asked
    assert brain.system_prompt("extract").startswith(prompts.EXTRACT_SYSTEM)
    assert brain.seen["extract"][0]["model"] == "fake-model"


async def test_settings_alone_turn_the_llm_on_and_close_releases_it(
    make_ctx: MakeCtx, brain: Brain, fake_openai: FakeOpenAI
) -> None:
    ctx = await make_ctx(llm_provider="openai", llm_base_url=fake_openai.url, llm_api_key=KEY, llm_model="fake-model")
    assert isinstance(ctx.llm, Router)
    brain.extract(GOOD)
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added == 6 and len(brain.seen["extract"]) == 1
    assert fake_openai.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"
    backend = ctx.llm.backends[ctx.llm.default]
    assert backend._client is not None
    await ctx.close()
    assert backend._client is None


async def test_without_an_llm_the_rules_extract_and_no_request_is_made(make_ctx: MakeCtx, fake_openai: FakeOpenAI) -> None:
    ctx = await make_ctx(llm_provider="none", llm_base_url=fake_openai.url)
    assert ctx.llm is None
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added > 3
    assert {m.source for m in (await facts_of(ctx)).values()} == {"rules"}
    assert fake_openai.chat_requests == []


async def test_malformed_json_is_repaired_once(ctx: DeepContext, brain: Brain) -> None:
    brain.extract(Reply.text('{"facts": [{"text": "Ana works at Acme", "source_indices": [1]'), GOOD)
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added == 6
    assert set(await facts_of(ctx)) == {f["text"] for f in GOOD["facts"]}
    assert len(brain.seen["extract"]) == 2
    repair = brain.seen["extract"][1]["messages"]
    assert repair[-2]["role"] == "assistant" and repair[-1]["role"] == "user"
    assert "could not be used" in repair[-1]["content"]


async def test_answers_wrapped_in_think_blocks_and_fences_are_read(ctx: DeepContext, brain: Brain) -> None:
    wrapped = f"<think>The user moved... let me list facts {{not json}}</think>\nHere you go:\n```json\n{dumps(GOOD)}\n```"
    brain.extract(Reply.text(wrapped))
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added == 6 and len(brain.seen["extract"]) == 1  # no repair needed
    assert "Ana works at Acme as a data engineer" in await facts_of(ctx)


async def test_items_citing_no_real_message_are_not_stored(ctx: DeepContext, brain: Brain) -> None:
    brain.extract(
        extraction(
            fact("Ana works at Acme as a data engineer", 1),
            {"text": "Ana owns a yacht", "type": "semantic", "source_indices": [7]},
            {"text": "Ana likes sailing", "type": "semantic", "source_indices": []},
            entities=[{"name": "Ghost Corp", "type": "organization", "source_indices": [99]}],
            relations=[{"source": "Ana", "relation": "owns", "target": "Yacht", "source_indices": [42]}],
        )
    )
    r = await ctx.add(CHAT, user_id="ana")
    assert set(await facts_of(ctx)) == {"Ana works at Acme as a data engineer"}
    assert r.semantic_facts == ["Ana works at Acme as a data engineer"]
    assert "Ghost Corp" not in r.entities_found and r.relationships_found == 0
    assert all("yacht" not in m.text.lower() for m in (await ctx.list("ana", include_inactive=True)).memories)


async def test_a_chinese_conversation_yields_chinese_facts(ctx: DeepContext, brain: Brain) -> None:
    chat = user("我上个月搬到了上海。", "我在一家叫星辰科技的公司做数据工程师。", name="李娜")
    brain.extract(
        extraction(
            fact("李娜上个月搬到了上海", 0, type="episodic", occurred_at="2025-04", entities=["李娜", "上海"]),
            fact("李娜在星辰科技做数据工程师", 1, entities=["李娜", "星辰科技"]),
            entities=[
                {"name": "李娜", "type": "person", "source_indices": [0, 1]},
                {"name": "上海", "type": "location", "source_indices": [0]},
                {"name": "星辰科技", "type": "organization", "source_indices": [1]},
            ],
            relations=[{"source": "李娜", "relation": "works_at", "target": "星辰科技", "source_indices": [1]}],
        )
    )
    r = await ctx.add(chat, user_id="li")
    assert r.semantic_facts == ["李娜在星辰科技做数据工程师"]
    stored = await facts_of(ctx, "li")
    assert set(stored) == {"李娜上个月搬到了上海", "李娜在星辰科技做数据工程师"}
    assert stored["李娜上个月搬到了上海"].metadata["occurred_at_precision"] == "month"
    # the prompt asked to keep the conversation's language, and carried the Chinese text as is
    assert prompts.LANGUAGE_RULE in brain.system_prompt("extract")
    assert "a conversation in Chinese gives facts in Chinese" in brain.system_prompt("extract")
    assert "李娜 (user): 我上个月搬到了上海。" in brain.user_prompt("extract")
    res = await ctx.search("星辰科技", user_id="li", tier="short_term", limit=2)
    assert res.results[0].text == "李娜在星辰科技做数据工程师"
    graph = {n["entity"] for n in await ctx.get_entity_graph("li", "李娜", depth=1)}
    assert "星辰科技" in graph


async def test_a_compound_fact_is_stored_as_its_facts_and_a_move_leaves_the_job(ctx: DeepContext, brain: Brain) -> None:
    brain.extract(extraction(fact("Ana lives in Leeds and teaches maths at Parkside", 0, entities=["Ana", "Leeds", "Parkside"])))
    await ctx.add(user("I live in Leeds and teach maths at Parkside."), user_id="ana")
    stored = await facts_of(ctx)
    assert set(stored) == {"Ana lives in Leeds.", "Ana teaches maths at Parkside."}
    assert set(stored["Ana teaches maths at Parkside."].entities) == {"Ana", "Parkside"}
    # the prompt asks for one fact per changeable thing, each starting with whom it is about
    system = brain.system_prompt("extract")
    assert "One fact per thing that can change on its own" in system and "starts with whom it is about" in system

    leeds = stored["Ana lives in Leeds."].id
    brain.extract(extraction(fact("Ana moved to York", 0)))
    brain.classify(decisions({"candidate": 0, "action": "REPLACE", "memory_id": leeds, "reason": "moved"}))
    await ctx.add(user("We finally moved to York."), user_id="ana")
    stored = await facts_of(ctx)
    assert stored["Ana lives in Leeds."].superseded_by == stored["Ana moved to York"].id
    assert stored["Ana teaches maths at Parkside."].is_active
