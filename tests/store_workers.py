"""Functions the store tests run in separate processes (multiprocessing, spawn: each process opens
its own store, so its own engine and connection pool)."""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections.abc import Callable
from typing import Any

SPAWN = mp.get_context("spawn")


def run_processes(target: Callable[..., Any], args_list: list[tuple[Any, ...]], *, timeout: float = 120.0) -> list[Any]:
    """Start one process per argument tuple (each gets a result queue and a shared barrier as the
    first two arguments), wait for all, return their results in order; a failure in any is raised."""
    queue = SPAWN.Queue()
    barrier = SPAWN.Barrier(len(args_list))
    procs = [SPAWN.Process(target=_wrap, args=(target, i, queue, barrier, *args)) for i, args in enumerate(args_list)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(results) < len(procs):
            i, ok, value = queue.get(timeout=max(0.1, deadline - time.monotonic()))
            if not ok:
                raise AssertionError(f"worker {i} failed:\n{value}")
            results[i] = value
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    return [results[i] for i in range(len(procs))]


def _wrap(target: Callable[..., Any], i: int, queue: Any, barrier: Any, *args: Any) -> None:
    try:
        queue.put((i, True, target(barrier, *args)))
    except BaseException:  # noqa: BLE001 - reported to the parent
        queue.put((i, False, traceback.format_exc()))


def migrate_worker(barrier: Any, url: str, dim: int) -> int:
    from tests.store_helpers import open_test_store

    store = open_test_store(url, dim, migrate=False)
    try:
        barrier.wait(timeout=60)
        return store.migrate()
    finally:
        store.close()


def add_worker(barrier: Any, url: str, dim: int, worker: int, n: int) -> list[int]:
    """``n`` adds to user "shared" (each: two turns, one memory of its own, one memory every worker
    also writes, one entity every add mentions) and ``n`` adds to a user of its own."""
    from deepcontext.store import EntityUpsert
    from deepcontext.types import EntityType
    from tests.store_helpers import axis, memory, open_test_store, plan, turn

    store = open_test_store(url, dim, migrate=False)
    ids: list[int] = []
    try:
        barrier.wait(timeout=60)
        for i in range(n):
            out = store.apply_add(
                plan(
                    "shared",
                    conversation_id="same",
                    turns=[turn(f"worker {worker} says {i}"), turn(f"noted {worker}-{i}", role="assistant")],
                    memories=[
                        memory(f"Worker {worker} fact {i}", vec=axis(worker + i), source_turn_indices=[0], entity_names=["acme"]),
                        memory(f"Common fact {i}", vec=axis(i), source_turn_indices=[0]),
                    ],
                    entities=[EntityUpsert("Acme", "acme", EntityType.ORGANIZATION)],
                )
            )
            ids += out.memory_ids
            store.apply_add(plan(f"own-{worker}", memories=[memory(f"own fact {i}", vec=axis(i))]))
        return ids
    finally:
        store.close()


def locked_increment_worker(barrier: Any, url: str, dim: int, rounds: int) -> int:
    """Read-modify-write a kv counter under the user lock ``rounds`` times (lost updates without it)."""
    from deepcontext.store.locks import user_lock
    from tests.store_helpers import T0, open_test_store

    store = open_test_store(url, dim, migrate=False)
    try:
        barrier.wait(timeout=60)
        for _ in range(rounds):
            with user_lock(store, "u", "counter", timeout=60):  # type: ignore[arg-type]
                value = store.kv_get("u", "test", "counter") or 0
                time.sleep(0.005)
                store.kv_put("u", "test", "counter", value + 1, T0)
        return rounds
    finally:
        store.close()


def hold_lock_worker(barrier: Any, url: str, dim: int, seconds: float) -> str:
    """Take the lock, tell the parent (barrier), hold it for ``seconds``."""
    from deepcontext.store.locks import user_lock
    from tests.store_helpers import open_test_store

    store = open_test_store(url, dim, migrate=False)
    try:
        with user_lock(store, "u", "consolidate", timeout=10):  # type: ignore[arg-type]
            barrier.wait(timeout=60)
            time.sleep(seconds)
        return "released"
    finally:
        store.close()


def die_holding_lock_worker(barrier: Any, url: str, dim: int) -> str:
    """Take the lock, tell the parent (barrier), wait to be killed (SIGKILL: no release)."""
    from deepcontext.store.locks import user_lock
    from tests.store_helpers import open_test_store

    store = open_test_store(url, dim, migrate=False)
    with user_lock(store, "u", "consolidate", timeout=10):  # type: ignore[arg-type]
        barrier.wait(timeout=60)
        time.sleep(600)
    return "released"


def clustered_vectors(n: int, dim: int, seed: int, clusters: int = 40) -> Any:
    """Unit vectors around a few centres, as text embeddings cluster (the same for a seed)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).normal(size=(clusters, dim))
    m = centres[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, dim))
    m = m.astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def write_vectors_worker(barrier: Any, url: str, dim: int, n: int, seed: int, delete: int) -> list[int]:
    """Another process's writes: ``n`` memories of user "u" with vectors of ``seed``, then the first
    ``delete`` of the user's memories deleted. No search: this process neither loads nor saves a
    graph. The new memories' ids."""
    from tests.store_helpers import later, memory, open_test_store, plan

    store = open_test_store(url, dim, migrate=False, vector_index_min_rows=200)
    try:
        mat = clustered_vectors(n, dim, seed)
        out = store.apply_add(
            plan("u", now=later(900), memories=[memory(f"later fact {seed}-{i}", vec=mat[i]) for i in range(n)])
        )
        for mid in range(1, delete + 1):
            store.delete_memory("u", mid, now=later(901), actor="test", reason=None)
        return out.memory_ids
    finally:
        store.close()


def save_loop(url: str, dim: str) -> None:
    """Until killed: add memories to user "u" in small batches, delete one now and then, search (the
    graph follows) and save the graph, printing ``ACK <n>`` after each round."""
    import sys

    from deepcontext.store.interface import MemoryFilters
    from tests.store_helpers import later, memory, open_test_store, plan

    d = int(dim)
    store = open_test_store(url, d, vector_index_min_rows=200)
    vectors = store.vectors  # type: ignore[attr-defined]
    for i in range(10_000):
        mat = clustered_vectors(40, d, 1000 + i)
        out = store.apply_add(plan("u", now=later(i), memories=[memory(f"fact {i}-{j}", vec=mat[j]) for j in range(40)]))
        if i % 3 == 2:
            store.delete_memory("u", out.memory_ids[0], now=later(i), actor="test", reason=None)
        store.vector_search("u", mat[0], 5, MemoryFilters(), later(i))
        vectors.get("u").wait_for_index(60)
        vectors.flush()
        sys.stdout.write(f"ACK {i}\n")
        sys.stdout.flush()
