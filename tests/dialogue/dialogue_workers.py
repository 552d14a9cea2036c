"""Functions the dialogue concurrency tests run in separate processes (spawn: each process opens its
own store, engine and connection pool)."""

from __future__ import annotations

from typing import Any

# the process harness is the store tests' one
from tests.store_workers import run_processes

__all__ = ["run_processes"]


def append_worker(barrier: Any, url: str, user_id: str, tag: str, n: int) -> list[int]:
    """Append ``n`` nodes after the conversation's tip, and add one key memory every worker also adds
    (same canonical key); returns the node ids in order."""
    from deepcontext.dialogue import LLMContextGraph, MemoryStore
    from tests.dialogue.helpers import open_store, pair, store_backend

    store = open_store(url)
    try:
        graph = LLMContextGraph(store_backend(store, user_id=user_id))
        memories = MemoryStore(graph.backend)
        barrier.wait(timeout=60)
        ids = []
        for i in range(n):
            ids.append(graph.append(pair(f"{tag} question {i}", f"{tag} answer {i}")))
            if i == n // 2:
                memories.add_memory(f"shared fact from {tag}", source_nodes={ids[-1]}, canonical_key="shared")
        return ids
    finally:
        store.close()


def add_worker(barrier: Any, url: str, user_id: str, n: int) -> list[int]:
    """What ``DeepContext.add`` writes: ``n`` adds of a user and an assistant message, chained after
    the conversation's tip by the engine's store; returns the turn ids."""
    from deepcontext.clock import ManualClock
    from deepcontext.store import AddPlan, NewTurn
    from deepcontext.text import content_hash
    from tests.dialogue.helpers import open_store

    store = open_store(url)
    clock = ManualClock()
    try:
        barrier.wait(timeout=60)
        out: list[int] = []
        for i in range(n):
            turns = [
                NewTurn(role=r, content=f"add {r} {i}", content_hash=content_hash(f"add {r} {i}"), said_at=clock.now())
                for r in ("user", "assistant")
            ]
            out += store.apply_add(AddPlan(user_id=user_id, conversation_id="c1", now=clock.now(), turns=turns)).turn_ids
        return out
    finally:
        store.close()


def mixed_worker(barrier: Any, url: str, user_id: str, which: int, n: int) -> list[int]:
    """Worker 0 appends through the dialogue, worker 1 adds through the engine's store."""
    if which == 0:
        return append_worker(barrier, url, user_id, "D", n)
    return add_worker(barrier, url, user_id, n)
