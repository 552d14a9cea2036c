"""Two processes writing one conversation at once: a valid DAG, no lost node (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from deepcontext.dialogue import LLMContextGraph, MemoryStore
from tests.dialogue.dialogue_workers import append_worker, mixed_worker, run_processes
from tests.dialogue.helpers import open_store, store_backend

N = 40


def _turn_count(store: Any, user: str) -> int:
    tt = store.t.turns
    with store.connection() as conn:
        return int(conn.execute(select(func.count()).select_from(tt).where(tt.c.user_id == user)).scalar_one())


@pytest.mark.slow
def test_two_processes_appending_keep_one_chain(store_url: str) -> None:
    results = run_processes(append_worker, [(store_url, "shared", "A", N), (store_url, "shared", "B", N)])
    store = open_store(store_url)
    try:
        graph = LLMContextGraph(store_backend(store, "shared"))
        written = set(results[0]) | set(results[1])
        assert len(written) == 2 * N and set(graph.nodes) == written  # no node lost, none invented
        tip = graph.tip_node_id()
        assert tip is not None
        chain = graph.get_ancestor_chain(tip, max_nodes=None)
        assert sorted(chain) == sorted(written)  # every append continued the tip: one chain
        with graph.backend.topology() as topo:
            assert [len(topo.parents[n]) for n in chain] == [0] + [1] * (2 * N - 1)
        for ids in results:  # each process's nodes keep their own order along the chain
            positions = [chain.index(n) for n in ids]
            assert positions == sorted(positions)
        # one key memory for the canonical key both added, citing a node of each process
        (shared,) = MemoryStore(graph.backend).get_all_memories()
        assert shared.canonical_key == "shared" and len(shared.source_nodes) == 2
        assert _turn_count(store, "shared") == 4 * N
    finally:
        store.close()


@pytest.mark.slow
def test_dialogue_appends_and_engine_adds_interleave(store_url: str) -> None:
    dialogue, engine = run_processes(mixed_worker, [(store_url, "mixed", 0, N), (store_url, "mixed", 1, N)])
    store = open_store(store_url)
    try:
        graph = LLMContextGraph(store_backend(store, "mixed"))
        tip = graph.tip_node_id()
        assert tip is not None
        chain = graph.get_ancestor_chain(tip, max_nodes=None)
        engine_nodes = set(engine[0::2])  # each add: a user turn (its node's id) and the reply
        assert set(chain) == set(dialogue) | engine_nodes
        assert len(chain) == 2 * N
        for n in engine_nodes:
            context = graph.nodes[n].context
            assert context.user_role.content.startswith("add user") and context.llm_role.content.startswith("add assistant")
        assert _turn_count(store, "mixed") == 4 * N
    finally:
        store.close()
