"""The store-backed backend: the node <-> turn mapping, persistence, other writers, isolation
(SQLite and PostgreSQL through the shared ``db_url`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from deepcontext.clock import ManualClock
from deepcontext.dialogue import (
    LLMContext,
    LLMContextGraph,
    LLMContextPair,
    MemoryStore,
    NodeNotFoundError,
)
from deepcontext.dialogue.sqlstore import StoreDialogueBackend
from deepcontext.errors import ValidationError
from deepcontext.store import AddPlan, MemoryFilters, NewTurn
from deepcontext.text import content_hash
from deepcontext.types import MemoryStatus
from tests.dialogue.helpers import chain_of, open_store, pair, store_backend

CLOCK = ManualClock()


def _add(
    store: Any, user: str, *messages: tuple[str, str], conversation: str = "c1", parents: list[int] | None = None
) -> list[int]:
    """What DeepContext.add writes: one turn per message, chained after the conversation's tip."""
    turns = [NewTurn(role=r, content=c, content_hash=content_hash(c), said_at=CLOCK.now()) for r, c in messages]
    if parents is not None:
        turns[0].parent_ids = parents
    return store.apply_add(AddPlan(user_id=user, conversation_id=conversation, now=CLOCK.now(), turns=turns)).turn_ids


def _conversation(store: Any, user: str, conversation: str = "c1") -> Any:
    cv = store.t.conversations
    with store.connection() as conn:
        return conn.execute(select(cv).where(cv.c.user_id == user, cv.c.conversation_id == conversation)).first()


def test_a_node_is_two_turns_and_edges_join_last_to_first(store: Any) -> None:
    graph = LLMContextGraph(store_backend(store, "ana"))
    a = graph.add_node(pair("hello", "hi"))
    b = graph.add_node(pair("how are you", "fine"), parent_ids={a})
    turns = {t.id: t for t in store.recent_turns("ana", "c1", 10)}
    assert len(turns) == 4
    a_reply = next(t for t in turns.values() if t.parent_ids == [a])
    assert (turns[a].role, turns[a].content, a_reply.role, a_reply.content) == ("user", "hello", "assistant", "hi")
    assert turns[b].parent_ids == [a_reply.id]  # parent node's last turn -> child node's first turn
    assert turns[a].metadata["dialogue_part"] == "first" and a_reply.metadata["dialogue_part"] == "reply"
    row = _conversation(store, "ana")
    assert row.turn_count == 4 and row.tip_turn_id == max(turns)


def test_plain_add_chains_read_as_nodes(store: Any) -> None:
    t = _add(store, "bo", ("system", "be nice"), ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))
    graph = LLMContextGraph(store_backend(store, "bo"))
    assert graph.get_ancestor_chain(t[3], max_nodes=None) == [t[0], t[1], t[3]]  # system, q1+a1, q2+a2
    assert graph.nodes[t[1]].context == LLMContextPair(LLMContext("user", "q1"), LLMContext("assistant", "a1"))
    assert graph.nodes[t[0]].context.user_role == LLMContext("system", "be nice")
    assert [m.content for m in graph.build_linear_context(t[3])] == ["be nice", "q1", "a1", "q2", "a2"]
    # the dialogue continues the add's tip, and the next add continues the dialogue's
    n = graph.append(pair("q3", "a3"))
    assert graph.get_ancestor_chain(n) == [t[0], t[1], t[3], n]
    later = _add(store, "bo", ("user", "q4"), ("assistant", "a4"))
    assert graph.get_ancestor_chain(later[0]) == [t[0], t[1], t[3], n, later[0]]
    assert graph.tip_node_id() == later[0]


def test_a_reply_arriving_later_joins_its_node_and_keeps_the_id(store: Any) -> None:
    graph = LLMContextGraph(store_backend(store, "cy"))
    (q,) = _add(store, "cy", ("user", "a question"))
    assert graph.nodes[q].context.llm_role.content == ""
    _add(store, "cy", ("assistant", "the answer"))
    assert graph.nodes[q].context.llm_role.content == "the answer"
    assert len(graph) == 1
    # a second answer to the same question (a turn-level branch) splits the pair: three nodes
    (alt,) = _add(store, "cy", ("assistant", "another answer"), parents=[q])
    assert len(graph) == 3 and graph.get_ancestor_chain(alt) == [q, alt]
    assert graph.nodes[q].context.llm_role.content == ""


def test_summaries_are_summary_turns_and_originals_stay(store: Any) -> None:
    graph = LLMContextGraph(store_backend(store, "di"))
    ids = chain_of(graph, 4)
    import asyncio

    s = asyncio.run(graph.compress_ancestors(None, ids[-1], keep_recent=1))
    assert s is not None
    (summary,) = store.get_turns("di", [s])
    assert summary.kind == "summary" and summary.role == "system"
    tt = store.t.turns
    with store.connection() as conn:
        rows = conn.execute(select(tt.c.id, tt.c.archived, tt.c.summarized_by, tt.c.summary_of).where(tt.c.user_id == "di")).all()
    by_id = {r.id: r for r in rows}
    covered = [r.id for r in rows if r.archived]
    assert len(covered) == 6  # three nodes, two turns each, none deleted
    assert all(by_id[c].summarized_by == s for c in covered)
    assert sorted(by_id[s].summary_of) == sorted(covered)
    assert len(rows) == 9 and _conversation(store, "di").turn_count == 9


def test_the_graph_survives_a_restart(store_url: str) -> None:
    import asyncio

    store = open_store(store_url)
    graph = LLMContextGraph(store_backend(store, "eve"))
    ids = chain_of(graph, 5)
    branch = graph.add_node(pair("branch", "b"), parent_ids={ids[1]})
    merge = graph.add_node(pair("merge", "m"), parent_ids={ids[-1], branch})
    s = asyncio.run(graph.compress_ancestors(None, ids[-1], max_nodes=None, keep_recent=1))
    mem = MemoryStore(graph.backend).add_memory("a fact", source_nodes={branch}, tags={"t"}, pinned=True)
    chain_before = graph.get_ancestor_chain(merge, max_nodes=None)
    nodes_before = {n: graph.nodes[n] for n in graph.nodes}
    store.close()

    reopened = open_store(store_url)
    try:
        again = LLMContextGraph(StoreDialogueBackend(reopened, user_id="eve", conversation_id="c1"))
        assert again.get_ancestor_chain(merge, max_nodes=None) == chain_before
        assert chain_before[0] == s
        assert {n: again.nodes[n] for n in again.nodes} == nodes_before
        kept = MemoryStore(again.backend).get_memory(mem)
        assert kept is not None and kept.source_nodes == {branch} and kept.pinned and kept.tags == {"t"}
        assert again.tip_node_id() == merge
    finally:
        reopened.close()


def test_two_handles_see_each_others_writes(store: Any) -> None:
    import asyncio

    one = LLMContextGraph(store_backend(store, "fay"))
    two = LLMContextGraph(StoreDialogueBackend(store, user_id="fay", conversation_id="c1", clock=CLOCK))
    ids = chain_of(one, 3)
    assert two.get_ancestor_chain(ids[-1]) == ids  # appends: loaded incrementally
    more = two.add_chain([pair("x", "y")], parent_ids=[ids[-1]])
    assert one.get_ancestor_chain(more[0]) == [*ids, more[0]]
    side = one.add_node(pair("side", "s"))
    two.add_edge(ids[0], side)  # a structural change: the other handle reloads
    assert one.nodes[ids[0]].parent_ids == {side}
    s = asyncio.run(two.compress_ancestors(None, more[0], keep_recent=1))
    assert one.get_ancestor_chain(more[0], max_nodes=None) == [s, more[0]]
    (t,) = _add(store, "fay", ("user", "added by the engine"))
    # the engine chained it after the last append, `side`, which the compression archived
    assert one.tip_node_id() == t and one.get_ancestor_chain(t) == [s, t]
    assert one.nodes[t].parent_ids == {side} and one.nodes[side].archived


def test_users_and_conversations_are_isolated(store: Any) -> None:
    a = LLMContextGraph(store_backend(store, "gus", "c1"))
    b = LLMContextGraph(store_backend(store, "gus", "c2"))
    c = LLMContextGraph(store_backend(store, "hal", "c1"))
    x = a.add_node(pair("mine", "1"))
    assert len(b) == 0 and len(c) == 0 and x not in b
    with pytest.raises(NodeNotFoundError):
        b.add_node(pair("cross", "2"), parent_ids={x})
    with pytest.raises(NodeNotFoundError):
        c.get_ancestor_chain(x)
    MemoryStore(a.backend).add_memory("gus c1 only")
    assert MemoryStore(b.backend).get_all_memories() == [] and MemoryStore(c.backend).get_all_memories() == []


def test_key_memories_are_memory_rows_with_provenance(store: Any) -> None:
    graph = LLMContextGraph(store_backend(store, "ivy"))
    (n,) = chain_of(graph, 1)
    memories = MemoryStore(graph.backend)
    mid = memories.add_memory(
        "Ivy prefers tea", source_nodes={n}, tags={"preference"}, pinned=True, packable=False, canonical_key="tea", turn_id=3
    )
    (row,) = store.get_memories("ivy", [mid])
    assert row.text == "Ivy prefers tea" and row.source == "dialogue" and row.conversation_id == "c1"
    assert row.pinned and row.tags == ["preference"]
    assert row.metadata["key_memory"] == {"status": "candidate", "packable": False, "turn_id": 3}
    assert sorted(p.turn_id for p in row.sources) == sorted(t.id for t in store.recent_turns("ivy", "c1", 10))
    found = store.keyword_search("ivy", ["tea"], 5, MemoryFilters(), CLOCK.now())
    assert [m for m, _ in found] == [mid]  # the engine's keyword leg sees it
    memories.commit_candidates(3)
    assert store.get_memories("ivy", [mid])[0].metadata["key_memory"]["status"] == "committed"
    assert memories.remove_memory(mid)
    (gone,) = store.get_memories("ivy", [mid])
    assert gone.status is MemoryStatus.DELETED
    assert [h.event.value for h in store.history("ivy", mid)] == ["ADD", "DELETE"]


def test_ids_follow_the_engine_rules(store: Any) -> None:
    for user, conversation in (("", "c1"), ("ok", "  "), ("bad\x00id", "c1"), ("x" * 300, "c1")):
        with pytest.raises(ValidationError):
            StoreDialogueBackend(store, user_id=user, conversation_id=conversation)
