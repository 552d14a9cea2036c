"""ContextManager.chat with the offline planner and a deterministic test agent, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from deepcontext.dialogue import (
    SUMMARY_LABEL,
    ContextManager,
    LLMContextGraph,
    NodeNotFoundError,
)
from deepcontext.dialogue.plan import ContextPlan, PlanRequest
from deepcontext.dialogue.sqlstore import StoreDialogueBackend
from deepcontext.errors import ValidationError
from tests.dialogue.helpers import ScriptedAgent, open_store


@pytest.fixture
def make_cm(make_graph: Callable[[], LLMContextGraph]) -> Callable[..., ContextManager]:
    def make(agent: Any, **kw: Any) -> ContextManager:
        return ContextManager(agent, backend=make_graph().backend, **kw)

    return make


def _users(prompt: list[dict[str, str]]) -> list[str]:
    return [m["content"] for m in prompt if m["role"] == "user"]


async def test_chat_without_parents_continues_the_conversation(make_cm: Callable[..., ContextManager]) -> None:
    cm = make_cm(ScriptedAgent())
    n0 = await cm.chat("Explain quantum computing", auto_plan=False)
    n1 = await cm.chat("What is a qubit?")
    n2 = await cm.chat("And entanglement?")
    assert cm.graph.root_ids == {n0}  # the seed made every parentless chat a new root
    assert cm.graph.get_ancestor_chain(n2) == [n0, n1, n2]
    assert cm.graph.nodes[n2].context.llm_role.content == "answer: And entanglement?"
    assert _users(cm.last_report.prompt_messages) == ["Explain quantum computing", "What is a qubit?"]  # type: ignore[union-attr]


async def test_the_summary_comes_before_the_turns_it_precedes(make_cm: Callable[..., ContextManager]) -> None:
    agent = ScriptedAgent(summary_text="Earlier: rounds about topics one to three.")
    cm = make_cm(agent, max_context_nodes=3, pack_keep_recent=1)
    for i in range(5):
        await cm.chat(f"Round {i}: tell me about topic number {i}")
    report = cm.last_report
    assert report is not None and report.summary_nodes, "the offline planner packed the long chain"
    summary = report.summary_nodes[0]
    prompt = agent.answers[-1]["prev_messages"]
    contents = [m["content"] for m in prompt]
    at = contents.index(SUMMARY_LABEL)
    later = [i for i, c in enumerate(contents) if c.startswith("Round 3")]
    assert at < later[0]  # the seed sorted node ids, which put the (newest) summary last
    assert all(summary > n for n in report.compressed_nodes)
    assert report.context_node_ids.index(summary) < len(report.context_node_ids) - 1


async def test_key_memories_are_extracted_committed_and_pinned(make_cm: Callable[..., ContextManager]) -> None:
    agent = ScriptedAgent()
    cm = make_cm(agent)
    first = await cm.chat("Hello", auto_plan=False)
    formula_node = await cm.chat("Note the energy formula E = mc^2 for later.")
    (mem,) = cm.memory_store.get_all_memories()
    assert mem.pinned and not mem.packable and mem.status == "committed"
    assert mem.source_nodes == {formula_node}  # provenance: the node that said it
    assert cm.last_report.committed_memories == [mem.id]  # type: ignore[union-attr]
    await cm.chat("Something unrelated about cooking")
    system = agent.answers[-1]["prev_messages"][0]
    assert system["role"] == "system" and "E = mc^2" in system["content"]
    await cm.chat("Note the energy formula E = mc^2 for later.")  # the same formula again: no duplicate
    assert len(cm.memory_store.get_all_memories()) == 1
    assert first in cm.graph.nodes


async def test_a_failed_answer_rejects_candidates_and_appends_nothing(make_cm: Callable[..., ContextManager]) -> None:
    agent = ScriptedAgent()
    cm = make_cm(agent)
    await cm.chat("Hello", auto_plan=False)
    agent.fail = RuntimeError("backend down")
    with pytest.raises(RuntimeError):
        await cm.chat("I prefer answers in French.")
    assert len(cm.graph) == 1
    (mem,) = cm.memory_store.get_all_memories()
    assert mem.status == "rejected"
    agent.fail = None
    await cm.chat("I prefer answers in French.")  # a rejected candidate blocks nothing
    assert [m.status for m in cm.memory_store.get_all_memories()] == ["rejected", "committed"]


@dataclass
class FixedPlanner:
    answer: Any

    async def plan(self, request: PlanRequest) -> Any:
        self.request = request
        return self.answer


async def test_an_invalid_plan_falls_back_to_the_parents(make_cm: Callable[..., ContextManager]) -> None:
    planner = FixedPlanner({"selected_node_ids": [424242]})
    cm = make_cm(ScriptedAgent(), planner=planner)
    n0 = await cm.chat("Hello", auto_plan=False)
    n1 = await cm.chat("Next")
    report = cm.last_report
    assert report is not None and report.plan_error and "424242" in report.plan_error
    assert report.plan is not None and report.plan.selected_node_ids == [n0]
    assert cm.graph.get_ancestor_chain(n1) == [n0, n1]
    planner.answer = {"nodes_to_pack": ["x"]}
    n2 = await cm.chat("Again")
    assert "not a node id" in cm.last_report.plan_error  # type: ignore[union-attr,operator]
    assert cm.graph.get_ancestor_chain(n2) == [n0, n1, n2]
    planner.answer = ContextPlan.model_construct(
        selected_node_ids=[str(n0)], nodes_to_pack=[], memories_to_extract=[], memory_queries=[], reasoning=""
    )
    await cm.chat("Coerced ids")
    assert cm.last_report.plan_error is None and cm.last_report.plan.selected_node_ids == [n0]  # type: ignore[union-attr]
    assert planner.request.anchor_ids == [cm.last_report.parent_ids[0]]  # type: ignore[union-attr]


async def test_explicit_parents_branch_and_merge(make_cm: Callable[..., ContextManager]) -> None:
    cm = make_cm(ScriptedAgent())
    root = await cm.chat("Root question", auto_plan=False)
    a = await cm.chat("Branch A: cryptography", parent_ids={root})
    b = await cm.chat("Branch B: drug discovery", parent_ids={root})
    merged = await cm.chat("Combine both branches", parent_ids={a, b})
    assert cm.graph.nodes[merged].parent_ids == {a, b}
    users = _users(cm.last_report.prompt_messages)  # type: ignore[union-attr]
    assert users[0] == "Root question" and set(users[1:]) == {"Branch A: cryptography", "Branch B: drug discovery"}
    with pytest.raises(NodeNotFoundError):
        await cm.chat("orphan", parent_ids={987654})
    with pytest.raises(ValidationError):
        await cm.chat("   ")


async def test_a_deepcontext_llm_can_answer() -> None:
    @dataclass
    class Completion:
        text: str

    class ChatLLM:
        def __init__(self) -> None:
            self.seen: list[list[dict[str, str]]] = []

        async def chat(self, messages: list[dict[str, str]], **options: Any) -> Completion:
            self.seen.append(messages)
            return Completion(text=f"llm says: {messages[-1]['content']}")

    llm = ChatLLM()
    cm = ContextManager(llm)
    n = await cm.chat("hi", auto_plan=False)
    assert cm.graph.nodes[n].context.llm_role.content == "llm says: hi"
    assert llm.seen[0][0]["role"] == "system" and llm.seen[0][-1] == {"role": "user", "content": "hi"}


async def test_a_store_backed_manager_resumes_after_a_restart(store_url: str) -> None:
    store = open_store(store_url)
    cm = ContextManager(ScriptedAgent(), backend=StoreDialogueBackend(store, user_id="zoe", conversation_id="chat"))
    n0 = await cm.chat("My name is Zoe.", auto_plan=False)
    n1 = await cm.chat("Remember that I live in Porto.")
    store.close()
    store = open_store(store_url)
    try:
        agent = ScriptedAgent()
        cm = ContextManager(agent, backend=StoreDialogueBackend(store, user_id="zoe", conversation_id="chat"))
        n2 = await cm.chat("Where do I live?")
        assert cm.graph.get_ancestor_chain(n2) == [n0, n1, n2]
        (note,) = [m for m in cm.memory_store.get_all_memories() if "Porto" in m.content]
        assert note.pinned and note.source_nodes == {n1}
        assert "Porto" in agent.answers[-1]["prev_messages"][0]["content"]
    finally:
        store.close()
