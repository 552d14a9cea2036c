"""The Memory Graph API as the seed's README shows it, on every backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deepcontext.dialogue import (
    CyclicGraphError,
    LLMContext,
    LLMContextGraph,
    LLMContextPair,
    NodeNotFoundError,
)
from deepcontext.errors import NotFoundError, ValidationError
from tests.dialogue.helpers import chain_of, pair


def test_readme_example_merge_and_longest_chain(graph: LLMContextGraph) -> None:
    n0 = graph.add_node(pair("你好", "你好！"))
    n1 = graph.add_node(pair("密码学", "分支 A"), parent_ids={n0})
    n2 = graph.add_node(pair("合并", "综合判断"), parent_ids={n0, n1})
    assert graph.get_ancestor_chain(n2, strategy="longest") == [n0, n1, n2]
    assert graph.get_ancestor_chain(n2, strategy="shortest") == [n0, n2]
    assert graph.get_ancestor_chain(n2, strategy="first") == [n0, n2]  # a set's parents: ascending
    assert graph.root_ids == {n0}
    linear = graph.build_linear_context(n2, max_nodes=8)
    assert [(m.role, m.content) for m in linear] == [
        ("user", "你好"), ("assistant", "你好！"),
        ("user", "密码学"), ("assistant", "分支 A"),
        ("user", "合并"), ("assistant", "综合判断"),
    ]  # fmt: skip


def test_in_memory_ids_start_at_zero_like_the_seed() -> None:
    g = LLMContextGraph()
    assert [g.add_node(pair("a", "b")), g.add_node(pair("c", "d"), parent_ids={0})] == [0, 1]


def test_branches_share_a_parent(graph: LLMContextGraph) -> None:
    root = graph.add_node(pair("root", "r"))
    a = graph.add_node(pair("crypto", "A"), parent_ids={root})
    b = graph.add_node(pair("drugs", "B"), parent_ids={root})
    node = graph.nodes[root]
    assert node.child_ids == {a, b}
    assert graph.nodes[a].parent_ids == {root}
    assert graph.get_ancestor_chain(b) == [root, b]
    assert graph.get_all_ancestors(b) == {root}
    assert len(graph) == 3 and a in graph and 10**9 not in graph


def test_add_edge_links_and_rejects_cycles(graph: LLMContextGraph) -> None:
    a, b, c = chain_of(graph, 3)
    d = graph.add_node(pair("side", "branch"))
    graph.add_edge(d, a)  # d gains a parent
    assert graph.nodes[d].parent_ids == {a}
    graph.add_edge(d, a)  # again: no-op
    with pytest.raises(CyclicGraphError) as info:
        graph.add_edge(a, c)  # c descends from a
    assert isinstance(info.value, ValueError)
    with pytest.raises(CyclicGraphError):
        graph.add_edge(a, a)
    assert graph.nodes[a].parent_ids == set()  # nothing was written
    assert graph.get_ancestor_chain(c) == [a, b, c]


def test_missing_ids_raise_key_errors(graph: LLMContextGraph) -> None:
    n = graph.add_node(pair("a", "b"))
    for call in (
        lambda: graph.add_node(pair("x", "y"), parent_ids={n, 424242}),
        lambda: graph.add_edge(424242, n),
        lambda: graph.add_edge(n, 424242),
        lambda: graph.get_ancestor_chain(424242),
        lambda: graph.get_all_ancestors(424242),
        lambda: graph.build_linear_context(424242),
        lambda: graph.nodes[424242],
    ):
        with pytest.raises(KeyError) as info:
            call()
        assert isinstance(info.value, NodeNotFoundError) and isinstance(info.value, NotFoundError)
    assert len(graph) == 1  # the failed add_node wrote nothing


def test_bad_arguments_are_validation_errors(graph: LLMContextGraph) -> None:
    n = graph.add_node(pair("a", "b"))
    with pytest.raises(ValueError):
        graph.get_ancestor_chain(n, strategy="random")
    with pytest.raises(ValidationError):
        graph.get_ancestor_chain(n, max_nodes=0)
    with pytest.raises(ValidationError):
        graph.add_node("not a pair")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        LLMContext("user", 3)  # type: ignore[arg-type]


def test_max_nodes_keeps_the_suffix_near_the_node(graph: LLMContextGraph) -> None:
    ids = chain_of(graph, 12)
    assert graph.get_ancestor_chain(ids[-1], max_nodes=3) == ids[-3:]
    assert graph.get_ancestor_chain(ids[-1], max_nodes=None) == ids
    assert graph.get_ancestor_chain(ids[-1], max_nodes=4, strategy="first") == ids[-4:]
    assert len(graph.build_linear_context(ids[-1], max_nodes=8)) == 16


def test_parent_order_of_a_list_decides_first_strategy(graph: LLMContextGraph) -> None:
    a = graph.add_node(pair("a", "1"))
    b = graph.add_node(pair("b", "2"))
    m = graph.add_node(pair("m", "3"), parent_ids=[b, a])
    assert graph.get_ancestor_chain(m, strategy="first") == [b, m]
    assert graph.get_ancestor_chain(m, strategy="longest") == [b, m]  # tie: the first parent wins


def test_tags_summary_and_snapshots(graph: LLMContextGraph) -> None:
    n = graph.add_node(pair("formula", "E = mc^2"))
    graph.set_node_tags(n, ["physics", "formula"])
    graph.set_node_summary(n, "mass-energy")
    node = graph.get_node(n)
    assert node.tags == {"physics", "formula"} and node.summary == "mass-energy"
    node.tags.add("changed locally")
    node.context.user_role.content = "edited copy"
    again = graph.get_node(n)
    assert again.tags == {"physics", "formula"}  # snapshots: local edits change nothing stored
    assert again.context.user_role.content == "formula"


def test_half_empty_pairs_round_trip(graph: LLMContextGraph) -> None:
    waiting = graph.add_node(LLMContextPair(LLMContext("user", "still waiting"), LLMContext("assistant", "")))
    lone = graph.add_node(LLMContextPair(LLMContext("user", ""), LLMContext("assistant", "unprompted")), {waiting})
    assert graph.nodes[waiting].context.llm_role.content == ""
    assert graph.nodes[lone].context.llm_role.content == "unprompted"
    assert graph.get_ancestor_chain(lone) == [waiting, lone]  # the two stay two nodes
    assert [m.content for m in graph.build_linear_context(lone)] == ["still waiting", "unprompted"]


def test_append_continues_the_tip(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    assert graph.tip_node_id() is None
    first = graph.append(pair("start", "ok"))
    second = graph.append(pair("next", "ok"))
    branch = graph.add_node(pair("branch", "ok"), parent_ids={first})
    third = graph.append(pair("after branch", "ok"))
    assert graph.tip_node_id() == third
    assert graph.get_ancestor_chain(third) == [first, branch, third]
    assert graph.nodes[second].parent_ids == {first}


def test_add_chain_links_its_nodes(graph: LLMContextGraph) -> None:
    root = graph.add_node(pair("r", "r"))
    ids = chain_of(graph, 5, parent_ids=[root])
    assert graph.get_ancestor_chain(ids[-1], max_nodes=None) == [root, *ids]
    assert graph.tip_node_id() == ids[-1]
    assert [n.id for n in graph.backend.iter_nodes(batch=2)] == [root, *ids]
