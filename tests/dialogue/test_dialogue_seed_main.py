"""Memory Graph's own demo flow (its main.py: an LLMFetcher, a ContextManager, six rounds chained by
``user_message=`` and ``parent_ids={...}``, then the final state printed from the graph and the
memory store) against the fake OpenAI server, written the way the seed's users wrote it."""

from __future__ import annotations

import pytest

from deepcontext.dialogue import (
    ContextDecision,
    ContextManager,
    ContextPlan,
    LLMContext,
    LLMContextGraph,
    LLMContextPair,
    LLMFetcher,
    MemoryToExtract,
)
from deepcontext.errors import ValidationError
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-0123456789abcdef"

QUESTIONS = [
    "Please describe in one paragraph where otaku culture comes from.",
    "Where does the word otaku come from, and what did it first mean?",
    "Which anime of the 1980s and 1990s pushed otaku culture forward?",
    "Given the origin of the word you mentioned, why did it become a subculture label?",
    "How did the internet and light novels change otaku culture after 2000?",
    "Taking everything so far, where will otaku culture go in the next ten years?",
]


def _answer(body: dict) -> Reply:
    msgs = body["messages"]
    system = " ".join(m["content"] for m in msgs if m["role"] == "system")
    if "summar" in system.lower():
        return Reply.text("Summary: otaku culture's origin, the word's etymology and the landmark anime.")
    question = msgs[-1]["content"]
    return Reply.text(f"Answer {len([m for m in msgs if m['role'] == 'user'])}: about {question[:40]}")


def final_state(cm: ContextManager, latest: int) -> list[str]:
    """What the seed's print_final_state reads, as lines."""
    out = []
    for nid, node in sorted(cm.graph.nodes.items()):
        if not node.archived:
            out.append(
                f"active {nid} parents={sorted(node.parent_ids)} children={sorted(node.child_ids)} summary={node.is_summary}"
            )
    for nid, node in sorted(cm.graph.nodes.items()):
        if node.archived:
            out.append(f"archived {nid} summarized_by={node.summarized_by}")
    out.append(f"chain {cm.graph.get_ancestor_chain(latest, max_nodes=8, strategy='longest')}")
    out.append(f"ancestors {sorted(cm.graph.get_all_ancestors(latest))}")
    for mem in cm.memory_store.get_pinned_memories():
        out.append(f"pinned {mem.id} {sorted(mem.tags)} {mem.content}")
    for mem in cm.memory_store.get_all_memories():
        out.append(f"memory {mem.id} pinned={mem.pinned} packable={mem.packable} {mem.content[:80]}")
    return out


async def test_the_seed_main_flow_runs(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = _answer
    fetcher = LLMFetcher(api_url=fake_openai.url, api_key=KEY, model="fake-model", timeout=60.0)
    async with fetcher:
        cm = ContextManager(fetcher=fetcher, max_context_nodes=6, pack_keep_recent=1)
        n0 = await cm.chat(user_message=QUESTIONS[0], auto_plan=False)
        nodes = [n0]
        for q in QUESTIONS[1:]:
            nodes.append(await cm.chat(user_message=q, parent_ids={nodes[-1]}, auto_plan=True))
        state = final_state(cm, latest=nodes[-1])

    assert len(set(nodes)) == 6
    for parent, child in zip(nodes, nodes[1:], strict=False):
        assert cm.graph.nodes[child].parent_ids == {parent} or cm.graph.nodes[parent].archived
    asked = [r.last_user_message for r in fake_openai.chat_requests if r.last_user_message in QUESTIONS]
    assert asked == QUESTIONS  # every round reached the model with its question, in order
    last = fake_openai.chat_requests[-1].messages
    assert any(QUESTIONS[4] in m["content"] for m in last[:-1])  # the previous round is in the context
    assert cm.graph.nodes[nodes[-1]].context.llm_role.content.startswith("Answer")
    assert state[-1].startswith(("memory", "pinned", "ancestors"))
    assert f"active {nodes[-1]}" in "\n".join(state)


async def test_fetch_takes_llm_contexts_and_linear_context(fake_openai: FakeOpenAI) -> None:
    graph = LLMContextGraph()
    n0 = graph.add_node(LLMContextPair(LLMContext("user", "hello"), LLMContext("assistant", "hi!")))
    n1 = graph.add_node(LLMContextPair(LLMContext("user", "my name is Ana"), LLMContext("assistant", "noted")), parent_ids={n0})
    fake_openai.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    async with LLMFetcher(fake_openai.url, KEY, "fake-model") as fetcher:
        r = await fetcher.fetch("what is my name?", prev_messages=graph.build_linear_context(n1))
        assert r.choices[0].message.content == "one"
        await fetcher.fetch("again", prev_messages=[LLMContext("user", "x"), {"role": "assistant", "content": "y"}])
        chunks = [c async for c in fetcher.fetch_stream("and now?", prev_messages=graph.build_linear_context(n0))]
        assert "".join(chunks) == "three"
        with pytest.raises(ValidationError):
            await fetcher.fetch("bad", prev_messages=[42])  # type: ignore[list-item]
    first, second, third = (r.messages for r in fake_openai.chat_requests)
    assert first == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi!"},
        {"role": "user", "content": "my name is Ana"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "what is my name?"},
    ]
    assert second[:2] == [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    assert third[:2] == [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi!"}]


def test_context_decision_is_built_as_in_the_seed() -> None:
    d = ContextDecision(
        "the user asks about measurement",
        [1],
        [0],
        [{"content": "collapse to |0> or |1>", "tags": ["measurement"]}],
        ["superposition"],
    )
    assert isinstance(d, ContextPlan)
    assert d.reasoning == "the user asks about measurement" and d.selected_node_ids == [1] and d.nodes_to_pack == [0]
    assert d.memory_queries == ["superposition"]
    mem = d.memories_to_extract[0]
    assert isinstance(mem, MemoryToExtract)
    assert mem.get("content", "") == "collapse to |0> or |1>" and mem["tags"] == ["measurement"] and mem.get("nope") is None
    assert ContextDecision(reasoning="r").selected_node_ids == []
    with pytest.raises(KeyError):
        mem["nope"]
