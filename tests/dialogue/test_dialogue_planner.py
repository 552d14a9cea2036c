"""The planner contract (validation) and the offline planner (retrieval, recency, packing, rules)."""

from __future__ import annotations

import pytest

from deepcontext.dialogue import LLMContextGraph
from deepcontext.dialogue.offline_planner import OfflinePlanner
from deepcontext.dialogue.plan import (
    ContextPlan,
    PlanRequest,
    select_candidates,
    validate_plan,
)
from deepcontext.dialogue.rules import extract_key_memories, formula_key
from deepcontext.dialogue.summarize import extractive_summary, split_sentences
from deepcontext.errors import ValidationError
from tests.dialogue.helpers import chain_of, pair

SEED_PLAN = {
    "reasoning": "用户问的是测量行为，与 Node 1 的叠加态公式直接相关",
    "selected_node_ids": [1],
    "nodes_to_pack": [0],
    "memories_to_extract": [{"content": "测量后坍缩到 |0⟩ 或 |1⟩", "tags": ["测量"]}],
    "memory_queries": ["叠加态", "测量"],
}


def test_the_seed_readme_plan_validates() -> None:
    plan = validate_plan(SEED_PLAN, {0, 1})
    assert plan.selected_node_ids == [1] and plan.nodes_to_pack == [0]
    assert plan.memories_to_extract[0].content == "测量后坍缩到 |0⟩ 或 |1⟩"
    assert plan.memories_to_extract[0].pinned is False and plan.memory_queries == ["叠加态", "测量"]


def test_string_ids_are_coerced_everything_else_rejected() -> None:
    plan = validate_plan({**SEED_PLAN, "selected_node_ids": ["1", " 0 ", 1]}, {0, 1})
    assert plan.selected_node_ids == [1, 0]  # the seed silently ignored "1": here it counts, once
    for bad in (["one"], [1.5], [True], [None], [[1]], "1", ["1a"]):
        with pytest.raises(ValidationError):
            validate_plan({**SEED_PLAN, "selected_node_ids": bad}, {0, 1})


def test_ids_must_exist() -> None:
    with pytest.raises(ValidationError) as info:
        validate_plan({**SEED_PLAN, "nodes_to_pack": [7]}, {0, 1})
    assert "7" in str(info.value)
    cites = {**SEED_PLAN, "memories_to_extract": [{"content": "x", "source_node_ids": ["9"]}]}
    with pytest.raises(ValidationError):
        validate_plan(cites, {0, 1})
    assert validate_plan(cites).memories_to_extract[0].source_node_ids == [9]  # no graph given: shape only


def test_other_shapes_are_rejected() -> None:
    for bad in ("not json", "[1, 2]", {"memories_to_extract": [{"content": "   "}]}, {"memory_queries": [3]}, 42):
        with pytest.raises(ValidationError):
            validate_plan(bad, {0})  # type: ignore[arg-type]
    assert validate_plan('{"reasoning": "ok", "extra": 1}', set()).reasoning == "ok"
    assert validate_plan(ContextPlan(selected_node_ids=[0]), {0}).selected_node_ids == [0]


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


async def test_offline_planner_loads_a_relevant_branch_and_packs_long_chains() -> None:
    graph = LLMContextGraph()
    root = graph.add_node(pair("Let us plan a trip", "Sure"))
    crypto = graph.add_node(pair("How does RSA encryption work?", "RSA uses modular exponentiation."), {root})
    main = chain_of(graph, 8, parent_ids=[root], prefix="weather")
    plan = await OfflinePlanner().plan(_request(graph, main[-1], "Back to RSA encryption: which key is public?"))
    assert plan.selected_node_ids[0] == main[-1] and crypto in plan.selected_node_ids
    assert plan.nodes_to_pack == [main[-1]]  # a chain of 9 > a budget of 6
    short = await OfflinePlanner().plan(_request(graph, main[-1], "anything else", budget=20))
    assert short.nodes_to_pack == [] and crypto not in short.selected_node_ids
    validate_plan(plan, set(graph.nodes))


async def test_offline_planner_extracts_memories_by_rules() -> None:
    graph = LLMContextGraph()
    (n,) = chain_of(graph, 1)
    graph.backend.update_node(n, tags=["x"])
    request = _request(graph, n, "Remember that my deadline is Friday. I prefer short answers. The energy is E = mc^2.")
    request.last_reply = "In conclusion, the qubit state is |ψ⟩ = α|0⟩ + β|1⟩."
    plan = await OfflinePlanner().plan(request)
    by_tag = {m.tags[0]: m for m in plan.memories_to_extract}
    assert set(by_tag) == {"note", "preference", "formula"}
    assert by_tag["note"].pinned and by_tag["formula"].pinned and not by_tag["formula"].packable
    assert by_tag["note"].source_node_ids == []  # from the new message: the node this round writes
    from_reply = [m for m in plan.memories_to_extract if m.source_node_ids == [n]]
    assert len(from_reply) == 1 and "qubit" in from_reply[0].content
    assert plan.memory_queries[:3] == ["remember", "deadline", "friday"]


def test_candidates_stay_bounded_on_a_big_graph() -> None:
    graph = LLMContextGraph()
    ids = graph.add_chain([pair(f"turn {i} about topic{i % 97}", "ok") for i in range(5000)])
    candidates, chain, length = select_candidates(graph, [ids[-1]], "tell me about topic5 again", limit=16, window=200)
    assert length == 5000 and len(chain) == 200 and chain[-1] == ids[-1]
    assert len(candidates) <= 16
    assert all(c.id in ids[-250:] for c in candidates)  # only the window was read
    assert any("topic5 " in c.user + " " for c in candidates)


def test_rules_and_formula_keys() -> None:
    assert formula_key("E = mc²") == formula_key("e = m c 2") == "e=mc2"
    assert formula_key(r"\frac{a}{b} = c") == formula_key("a/b = c".replace("/", "")) == "ab=c"
    assert formula_key("|ψ⟩ = α|0⟩ + β|1⟩") == formula_key("|ψ> = α|0> + β|1>")
    zh = extract_key_memories("我喜欢简洁的回答。叠加态公式: |ψ⟩ = α|0⟩ + β|1⟩。记住我的生日是五月。")
    assert [m.tags[0] for m in zh] == ["preference", "formula", "note"]
    assert extract_key_memories("I prefer tea.", from_user=False) == []
    assert extract_key_memories("nothing to see here") == []


def test_extractive_summary_is_deterministic_and_keeps_informative_sentences() -> None:
    messages = [
        ("user", "Hi there. I want to learn about qubits and superposition."),
        ("assistant", "Sure. A qubit is in superposition |ψ⟩ = α|0⟩ + β|1⟩. Qubits and superposition matter. Ok."),
        ("user", "Thanks. And measurement of qubits?"),
        ("assistant", "Measurement collapses the superposition of the qubit to 0 or 1."),
    ]
    a = extractive_summary(messages, max_chars=200)
    assert a == extractive_summary(messages, max_chars=200)
    assert "|ψ⟩ = α|0⟩ + β|1⟩" in a and "Measurement collapses" in a
    assert "Ok." not in a and len(a) < 260
    assert a.splitlines()[0].startswith(("User:", "Assistant:"))
    assert extractive_summary([]) == "" and extractive_summary([("user", "   ")]) == ""
    assert split_sentences("第一句。第二句！ Third one. Fourth?") == ["第一句。", "第二句！", "Third one.", "Fourth?"]


async def test_embedding_relevance_finds_what_words_miss() -> None:
    import numpy as np

    graph = LLMContextGraph()
    root = graph.add_node(pair("Let us talk", "Sure"))
    pets = graph.add_node(pair("My cat Tom sleeps all day", "Cats do that."), {root})
    main = chain_of(graph, 6, parent_ids=[root], prefix="weather")

    def embed(texts: list[str]) -> np.ndarray:  # a toy embedder: "animal-ness" on axis 0
        animal = ("cat", "kitten", "pet")
        rows = [[1.0, 0.0] if any(a in t.lower() for a in animal) else [0.0, 1.0] for t in texts]
        return np.asarray(rows, dtype=np.float32)

    words_only, _, _ = select_candidates(graph, [main[-1]], "How do I care for a kitten?")
    assert pets not in [c.id for c in words_only]
    with_vectors, _, _ = select_candidates(graph, [main[-1]], "How do I care for a kitten?", embed=embed)
    assert pets in [c.id for c in with_vectors]
