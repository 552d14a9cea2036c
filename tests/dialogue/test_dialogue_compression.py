"""Compression: the seed's defects fixed, on every backend.

Each test names the seed behaviour it would catch: the summary placed after newer turns, chains
running through archived nodes at a merge, originals unlinked, key memories' nodes compressed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from deepcontext.dialogue import (
    SUMMARY_LABEL,
    LLMContextGraph,
    MemoryStore,
    NodeNotFoundError,
)
from deepcontext.dialogue.backend import DialogueBackend
from deepcontext.dialogue.vocabulary import DialogueConflictError
from deepcontext.errors import ValidationError
from tests.dialogue.helpers import ScriptedAgent, chain_of, pair


async def test_summary_sits_before_the_turns_that_follow_it(graph: LLMContextGraph) -> None:
    *_, e, f = chain_of(graph, 6)
    s = await graph.compress_ancestors(None, f, max_nodes=None, keep_recent=2)
    assert s is not None
    assert graph.get_ancestor_chain(f, max_nodes=None) == [s, e, f]
    linear = graph.build_linear_context(f)
    assert [m.content for m in linear[:1]] == [SUMMARY_LABEL]
    assert [m.content for m in linear[2:]] == ["q4 question", "q4 answer", "q5 question", "q5 answer"]
    assert "q0 question" in linear[1].content  # the extractive summary kept the old turns' words


async def test_window_compression_keeps_older_nodes_before_the_summary(graph: LLMContextGraph) -> None:
    a, b, c, d, e, f = chain_of(graph, 6)
    s = await graph.compress_ancestors(None, f, max_nodes=4, keep_recent=2)  # window [c, d, e, f]
    assert s is not None
    assert graph.get_ancestor_chain(f, max_nodes=None) == [a, b, s, e, f]
    assert graph.nodes[s].summarized_ids == {c, d}


async def test_compression_deletes_and_unlinks_nothing(graph: LLMContextGraph) -> None:
    a, b, c, d, e = chain_of(graph, 5)
    before = len(graph)
    s = await graph.compress_ancestors(None, e, max_nodes=None, keep_recent=1)
    assert s is not None and len(graph) == before + 1
    for n in (a, b, c, d):
        node = graph.nodes[n]
        assert node.archived and node.summarized_by == {s}
    assert graph.nodes[s].is_summary and graph.nodes[s].summarized_ids == {a, b, c, d}
    # the seed replaced d -> e by s -> e; here both stay: the original history is still a path
    assert graph.nodes[e].parent_ids == {d, s}
    assert graph.nodes[d].child_ids == {e}
    assert graph.get_ancestor_chain(d, max_nodes=None) == [a, b, c, d]  # an archived node: its history
    assert graph.get_all_ancestors(e) == {a, b, c, d, s}
    assert graph.get_ancestor_chain(e, max_nodes=None) == [s, e]


async def test_a_merge_gets_the_summary_not_the_archived_turns(graph: LLMContextGraph) -> None:
    r = graph.add_node(pair("root", "r"))
    a1, _, a3 = chain_of(graph, 3, parent_ids=[r], prefix="a")
    b1 = graph.add_node(pair("branch b", "b"), parent_ids={r})
    m = graph.add_node(pair("merge", "m"), parent_ids={a3, b1})
    s = await graph.compress_ancestors(None, a3, max_nodes=None, keep_recent=1)
    assert s is not None
    # the seed's "longest" ran r -> a1 -> a2 -> a3 -> m through archived nodes and dropped the summary
    chain = graph.get_ancestor_chain(m, max_nodes=None)
    assert chain == [s, a3, m]
    assert not any(graph.nodes[n].archived for n in chain)
    # the other branch hangs under the summary of its compressed root, in every strategy
    assert graph.get_ancestor_chain(b1, max_nodes=None) == [s, b1]
    assert graph.get_ancestor_chain(m, max_nodes=None, strategy="shortest")[0] == s
    assert graph.get_ancestor_chain(m, max_nodes=None, strategy="first")[0] == s
    # a branch started later from an archived node continues from its summary too
    late = graph.add_node(pair("late branch", "x"), parent_ids={a1})
    assert graph.get_ancestor_chain(late) == [s, late]


async def test_a_branch_merging_into_the_compressed_run_stays_an_ancestor(graph: LLMContextGraph) -> None:
    r, a, b = chain_of(graph, 3)
    x = graph.add_node(pair("a separate thread", "x"))  # a second root
    inner = graph.add_node(pair("from inside the run", "y"), parent_ids={a})  # descends from the run
    m = graph.add_node(pair("merge", "m"), parent_ids=[b, x, inner])
    c, d = chain_of(graph, 2, parent_ids=[m], prefix="after")
    s = await graph.compress_ancestors(None, d, max_nodes=None, keep_recent=1)
    assert s is not None and graph.nodes[s].summarized_ids == {r, a, b, m, c}
    assert graph.nodes[s].parent_ids == {x}  # x kept; `inner` would close a cycle: not a parent
    assert graph.get_ancestor_chain(d, max_nodes=None) == [x, s, d]
    assert graph.get_ancestor_chain(inner, max_nodes=None) == [x, s, inner]  # under the summary of `a`


async def test_summaries_of_summaries_keep_the_order(graph: LLMContextGraph) -> None:
    ids = chain_of(graph, 4)
    s1 = await graph.compress_ancestors(None, ids[-1], max_nodes=None, keep_recent=1)
    more = chain_of(graph, 3, parent_ids=[ids[-1]], prefix="later")
    s2 = await graph.compress_ancestors(None, more[-1], max_nodes=None, keep_recent=1)
    assert s1 is not None and s2 is not None
    assert graph.nodes[s1].archived and graph.nodes[s1].summarized_by == {s2}
    assert graph.get_ancestor_chain(more[-1], max_nodes=None) == [s2, more[-1]]
    assert graph.get_ancestor_chain(ids[1], max_nodes=None) == ids[:2]  # archived: its stored history
    branch = graph.add_node(pair("from an old turn", "x"), parent_ids={ids[1]})
    assert graph.get_ancestor_chain(branch) == [s2, branch]  # through both summaries to the live one


async def test_key_memory_nodes_are_never_compressed(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    a, b, c, d, e, f, g = chain_of(graph, 7)
    memories = MemoryStore(graph.backend)
    formula = memories.add_memory("E = mc^2", source_nodes={c}, tags={"formula"}, pinned=True, packable=False)
    s = await graph.compress_ancestors(None, g, max_nodes=None, keep_recent=1)
    assert s is not None
    assert not graph.nodes[c].archived  # the seed compressed it
    assert graph.nodes[s].summarized_ids == {d, e, f}  # the longest unprotected run
    assert graph.get_ancestor_chain(g, max_nodes=None) == [a, b, c, s, g]
    assert memories.get_memory(formula) is not None and memories.get_memory(formula).source_nodes == {c}  # type: ignore[union-attr]
    # a rejected memory protects nothing
    memories.add_memory("noise", source_nodes={a}, packable=False, turn_id=9)
    memories.reject_candidates(9)
    assert a not in graph.protected_node_ids()


async def test_an_agent_writes_the_summary(graph: LLMContextGraph) -> None:
    ids = chain_of(graph, 4)
    agent = ScriptedAgent(summary_text="They discussed q0 to q2.")
    s = await graph.compress_ancestors(agent, ids[-1], keep_recent=1, summary_system_prompt="be brief")
    assert graph.nodes[s].context.llm_role.content == "They discussed q0 to q2."  # type: ignore[index]
    call = agent.calls[0]
    assert call["system_prompt"] == "be brief"
    assert "q0 question" in call["msg"] and "q2 answer" in call["msg"] and "q3" not in call["msg"]


async def test_an_empty_agent_answer_falls_back_to_an_extractive_summary(graph: LLMContextGraph) -> None:
    ids = chain_of(graph, 3)
    s = await graph.compress_ancestors(ScriptedAgent(summary_text="   "), ids[-1], keep_recent=1)
    assert "q0 question" in graph.nodes[s].context.llm_role.content  # type: ignore[index]


async def test_nothing_to_compress(graph: LLMContextGraph) -> None:
    *_, c = chain_of(graph, 3)
    assert await graph.compress_ancestors(None, c, keep_recent=2) is None  # as the seed: chain <= keep + 1
    s = await graph.compress_ancestors(None, c, keep_recent=0)  # everything, the node included
    assert s is not None and graph.nodes[c].archived
    with pytest.raises(ValidationError):
        await graph.compress_ancestors(None, c)  # archived: compress from a live node
    with pytest.raises(NodeNotFoundError):
        await graph.compress_ancestors(None, 987654)
    with pytest.raises(ValidationError):
        await graph.compress_ancestors(None, s, keep_recent=-1)


async def test_a_concurrent_compression_wins_and_the_other_returns_none(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    ids = chain_of(graph, 5)

    class Racer(ScriptedAgent):
        async def fetch(self, msg: str, *args: object, **kw: object) -> str:
            # while this summary is being written, another writer compresses the same nodes
            if not self.calls:
                self.calls.append({"msg": msg, "system_prompt": None, "prev_messages": None})
                assert await graph.compress_ancestors(None, ids[-1], keep_recent=1) is not None
            return "late summary"

    nodes_before = len(graph)
    assert await graph.compress_ancestors(Racer(), ids[-1], keep_recent=1) is None
    assert len(graph) == nodes_before + 1  # one summary, not two


def test_backend_refuses_to_archive_twice(graph: LLMContextGraph) -> None:
    backend: DialogueBackend = graph.backend
    a, b, c = chain_of(graph, 3)
    s = backend.add_summary(pair("x", "summary"), parent_ids=[], summarized_ids=[a, b], child_ids=[c])
    with pytest.raises(DialogueConflictError):
        backend.add_summary(pair("x", "again"), parent_ids=[], summarized_ids=[b], child_ids=[c])
    assert graph.nodes[c].parent_ids == {b, s}
