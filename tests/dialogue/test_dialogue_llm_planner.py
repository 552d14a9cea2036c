"""The LLM planner against the fake OpenAI server: valid plans, coercion, rejection and retry,
fallback, and a prompt that stays bounded however big the graph is."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from deepcontext.dialogue import (
    ContextManager,
    LLMContextGraph,
    LLMPlanner,
    OfflinePlanner,
)
from deepcontext.dialogue.plan import PlanRequest, select_candidates
from deepcontext.llm import OpenAICompatibleLLM, Router
from tests.dialogue.helpers import ScriptedAgent, chain_of, pair
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
async def llm(fake_openai: FakeOpenAI) -> AsyncIterator[Router]:
    router = Router([OpenAICompatibleLLM("fake-model", base_url=fake_openai.url, api_key=KEY, timeout=5.0)], max_retries=0)
    yield router
    await router.aclose()


def _request(graph: LLMContextGraph, anchor: int, message: str, budget: int = 6) -> PlanRequest:
    candidates, chain, length = select_candidates(graph, [anchor], message)
    return PlanRequest(
        message=message,
        anchor_ids=[anchor],
        chain=chain,
        chain_length=length,
        candidates=candidates,
        memories=[],
        max_context_nodes=budget,
        keep_recent=1,
        last_reply=graph.nodes[anchor].context.llm_role.content,
    )


def _branchy() -> tuple[LLMContextGraph, int, list[int]]:
    graph = LLMContextGraph()
    root = graph.add_node(pair("Let us plan a trip", "Sure"))
    crypto = graph.add_node(pair("How does RSA encryption work?", "RSA uses modular exponentiation."), {root})
    main = chain_of(graph, 4, parent_ids=[root], prefix="weather")
    return graph, crypto, main


async def test_a_valid_plan_is_used(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph, crypto, main = _branchy()
    fake_openai.script(
        Reply.json(
            {
                "reasoning": "the user returns to RSA",
                "selected_node_ids": [main[-1], crypto],
                "nodes_to_pack": [],
                "memories_to_extract": [{"content": "The user studies RSA", "tags": ["topic"]}],
                "memory_queries": ["RSA"],
            }
        )
    )
    planner = LLMPlanner(llm)
    plan = await planner.plan(_request(graph, main[-1], "Back to RSA: which key is public?"))
    assert plan.selected_node_ids == [main[-1], crypto] and plan.memory_queries == ["RSA"]
    assert plan.memories_to_extract[0].content == "The user studies RSA"
    assert planner.last_outcome.attempts == 1 and not planner.last_outcome.fallback
    (req,) = fake_openai.chat_requests
    assert "JSON Schema" in req.system_prompt and "selected_node_ids" in req.system_prompt
    prompt = req.last_user_message
    assert "Back to RSA: which key is public?" in prompt and f"[{crypto}]" in prompt
    assert req.body["response_format"]["type"] in ("json_schema", "json_object")


async def test_string_ids_are_coerced(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph, crypto, main = _branchy()
    fake_openai.script(Reply.text(f'```json\n{{"selected_node_ids": ["{main[-1]}", " {crypto} "], "nodes_to_pack": []}}\n```'))
    planner = LLMPlanner(llm)
    plan = await planner.plan(_request(graph, main[-1], "RSA again"))
    assert plan.selected_node_ids == [main[-1], crypto]
    assert all(isinstance(i, int) for i in plan.selected_node_ids)
    assert planner.last_outcome.attempts == 1


async def test_unknown_ids_are_rejected_then_retried_with_the_error(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph, _, main = _branchy()
    fake_openai.script(
        Reply.json({"selected_node_ids": [main[-1], 999], "nodes_to_pack": [4242]}),
        Reply.json({"selected_node_ids": [main[-1]], "nodes_to_pack": []}),
    )
    planner = LLMPlanner(llm)
    plan = await planner.plan(_request(graph, main[-1], "continue"))
    assert plan.selected_node_ids == [main[-1]]
    assert planner.last_outcome.attempts == 2 and not planner.last_outcome.fallback
    first, second = fake_openai.chat_requests
    retry = second.messages
    assert retry[-2]["role"] == "assistant" and "999" in retry[-2]["content"]  # its own answer, shown back
    assert "unknown node ids: [999, 4242]" in retry[-1]["content"]
    assert retry[:2] == first.messages  # the same prompt, then the correction


async def test_an_id_that_exists_but_was_not_shown_is_rejected(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph = LLMContextGraph()
    ids = chain_of(graph, 300)
    fake_openai.script(Reply.json({"selected_node_ids": [ids[0]]}), Reply.json({"selected_node_ids": [ids[-1]]}))
    planner = LLMPlanner(llm)
    plan = await planner.plan(_request(graph, ids[-1], "q0 question"))
    assert ids[0] not in planner.last_outcome.shown_ids  # outside the bounded window: never shown
    assert plan.selected_node_ids == [ids[-1]] and planner.last_outcome.attempts == 2


async def test_garbage_twice_falls_back_to_the_offline_plan(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph, _, main = _branchy()
    fake_openai.script(Reply.text("I think you should load some nodes."), Reply.json({"selected_node_ids": ["three"]}))
    planner = LLMPlanner(llm)
    request = _request(graph, main[-1], "Back to RSA encryption: which key is public?", budget=3)
    plan = await planner.plan(request)
    offline = await OfflinePlanner().plan(request)
    assert planner.last_outcome.fallback and planner.last_outcome.attempts == 2
    assert plan.selected_node_ids == offline.selected_node_ids and plan.nodes_to_pack == offline.nodes_to_pack == [main[-1]]
    assert plan.reasoning.startswith("fallback (OfflinePlanner)")
    assert "no JSON" in planner.last_error and "three" in planner.last_error  # type: ignore[operator]
    assert len(fake_openai.chat_requests) == 2


async def test_an_unreachable_model_falls_back_without_a_second_call(fake_openai: FakeOpenAI, llm: Router) -> None:
    graph, _, main = _branchy()
    fake_openai.script(Reply.error(500))
    planner = LLMPlanner(llm)
    plan = await planner.plan(_request(graph, main[-1], "continue"))
    assert planner.last_outcome.fallback and planner.last_outcome.attempts == 1
    assert plan.selected_node_ids[0] == main[-1]
    assert len(fake_openai.chat_requests) == 1


async def test_the_prompt_stays_bounded_on_a_big_graph(fake_openai: FakeOpenAI, llm: Router) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        shown = [int(x) for x in re.findall(r"- \[(\d+)\]", body["messages"][-1]["content"])]
        return Reply.json({"selected_node_ids": shown[-1:]})

    fake_openai.responder = reply
    sizes = {}
    for n in (20, 20_000):
        graph = LLMContextGraph()
        ids = graph.add_chain([pair(f"turn {i} about topic{i % 97} " + "words " * 40, "ok " * 60) for i in range(n)])
        planner = LLMPlanner(llm)
        await planner.plan(_request(graph, ids[-1], "tell me about topic5 again"))
        sizes[n] = planner.last_outcome.prompt_chars
        assert len(planner.last_outcome.shown_ids) <= 16 + 12 + 1
    big = fake_openai.chat_requests[-1]
    assert len(json.dumps(big.messages)) < 20_000
    assert sizes[20_000] <= 12_000 + len(big.system_prompt)
    assert sizes[20_000] < 2 * sizes[20]  # the same order of size, not 1,000 times more


async def test_chat_with_the_llm_planner_on_every_backend(
    fake_openai: FakeOpenAI, llm: Router, make_graph: Callable[[], LLMContextGraph]
) -> None:
    cm = ContextManager(ScriptedAgent(), backend=make_graph().backend, planner=LLMPlanner(llm))
    first = await cm.chat("Let us talk about RSA encryption", auto_plan=False)
    second = await cm.chat("And the weather in Lisbon?", auto_plan=False)
    fake_openai.script(
        Reply.json(
            {
                "selected_node_ids": [str(second), first],
                "memories_to_extract": [{"content": "Remember: RSA keys are 2048 bits", "tags": ["note"], "pinned": True}],
            }
        )
    )
    node = await cm.chat("Which RSA key size did we pick?")
    report = cm.last_report
    assert report is not None and report.plan is not None and report.plan_error is None
    assert report.plan.selected_node_ids == [second, first]
    (mem,) = cm.memory_store.get_all_memories()
    assert mem.pinned and mem.status == "committed" and mem.source_nodes == {node}
    assert report.prompt_messages[0]["role"] == "system" and "2048 bits" in report.prompt_messages[0]["content"]
    fake_openai.script(Reply.text("garbage"), Reply.text("more garbage"))
    await cm.chat("Thanks!")
    assert cm.last_report is not None and "fallback" in (cm.last_report.plan_error or "")
