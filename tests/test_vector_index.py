"""The HNSW graph (usearch) beside a user's exact vector matrix: it proposes, the matrix decides.

Unit level on :class:`UserVectors` (clustered vectors like text embeddings), then through a real
SQLite store with a low ``vector_index_min_rows``, then a process that exits mid-build."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from deepcontext.store.interface import MemoryFilters
from deepcontext.store.vectors import UserVectors, VectorRow
from deepcontext.types import MemoryTier
from tests.store_helpers import later, memory, open_test_store, plan

DIM = 32
NOW = 1e12  # epoch seconds far ahead: nothing here expires


def clustered(n: int, seed: int = 0, clusters: int = 40) -> np.ndarray:
    """Unit vectors around a few centres (text embeddings cluster; i.i.d. random vectors are HNSW's
    worst case and unlike anything an embedder produces)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    m = centres[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, DIM))
    m = m.astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def rows(ids: range | list[int], mat: np.ndarray, *, tier: str = "short_term", active: bool = True) -> list[VectorRow]:
    return [
        VectorRow(id=i, active=active, tier=tier, memory_type="semantic", when=0.0, expires_at=None,
                  conversation_id="c", embedding=mat[j])
        for j, i in enumerate(ids)
    ]  # fmt: skip


def exact_top(uv: UserVectors, q: np.ndarray, k: int, flt: MemoryFilters | None = None) -> list[int]:
    return [i for i, _ in uv._search_exact(q.reshape(1, -1), k, flt or MemoryFilters(), NOW, None)[0]]


def ready(n: int = 3000, min_rows: int = 500) -> tuple[UserVectors, np.ndarray]:
    mat = clustered(n)
    uv = UserVectors(dim=DIM, ann_min_rows=min_rows)
    uv.apply(rows(range(1, n + 1), mat))
    assert uv.search_many(mat[:1], 5, MemoryFilters(), NOW, None)  # exact meanwhile; starts the build
    assert uv.builder is not None and uv.ann is None
    assert uv.wait_for_index(60) is True
    assert uv.ann is not None and len(uv.ann) == n
    return uv, mat


def test_small_users_scan_exactly() -> None:
    mat = clustered(200)
    uv = UserVectors(dim=DIM, ann_min_rows=500)
    uv.apply(rows(range(1, 201), mat))
    uv.search_many(mat[:1], 5, MemoryFilters(), NOW, None)
    assert uv.builder is None and uv.ann is None and uv.wait_for_index(1) is False
    off = UserVectors(dim=DIM, ann_min_rows=0)
    off.apply(rows(range(1, 201), mat))
    off.search_many(mat[:1], 5, MemoryFilters(), NOW, None)
    assert off.builder is None and off.ann is None


def near(mat: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` unit queries close to stored vectors."""
    rng = np.random.default_rng(seed)
    q = mat[rng.choice(len(mat), n, replace=False)] + 0.1 * rng.normal(size=(n, DIM)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def overlap_with_scan(uv: UserVectors, queries: np.ndarray, got: list[list[tuple[int, float]]], k: int) -> float:
    """The mean share of each query's exact top ``k`` among what the search returned."""
    return float(np.mean([len({i for i, _ in g} & set(exact_top(uv, q, k))) / k for g, q in zip(got, queries, strict=True)]))


def test_graph_results_agree_with_the_exact_scan() -> None:
    uv, mat = ready()
    queries = near(mat, 50, 1)
    got = uv.search_many(queries, 10, MemoryFilters(), NOW, None)
    assert overlap_with_scan(uv, queries, got, 10) >= 0.95
    for g, q in zip(got, queries, strict=True):
        # scores are exact cosines from the matrix, best first
        ids = [i for i, _ in g]
        assert [s for _, s in g] == pytest.approx([float(mat[i - 1] @ q) for i in ids], abs=1e-5)
        assert [s for _, s in g] == sorted((s for _, s in g), reverse=True)
    # a stored vector finds itself first
    for j in (0, 17, 2999):
        assert uv.search_many(mat[j : j + 1], 1, MemoryFilters(), NOW, None)[0][0][0] == j + 1


def test_a_deep_search_without_filters_agrees_with_the_scan() -> None:
    """Without filters the graph is asked for twice k candidates (it holds live vectors only)."""
    uv, mat = ready()
    queries = near(mat, 30, 3)
    got = uv.search_many(queries, 100, MemoryFilters(), NOW, None)
    assert all(len(g) == 100 for g in got)
    assert overlap_with_scan(uv, queries, got, 100) >= 0.95


def test_expired_rows_among_the_candidates_are_made_up_by_the_scan() -> None:
    """Expired vectors stay in the graph: when they fill a query's candidate list, the scan finds
    the k best unexpired ones all the same."""
    uv, mat = ready()
    q = mat[0]
    nearest = exact_top(uv, q, 400)
    uv.apply(
        [
            VectorRow(id=i, active=True, tier="short_term", memory_type="semantic", when=0.0, expires_at=NOW - 1.0,
                      conversation_id="c", embedding=mat[i - 1])
            for i in nearest[:300]
        ]
    )  # fmt: skip
    got = [i for i, _ in uv.search_many(q.reshape(1, -1), 50, MemoryFilters(), NOW, None)[0]]
    assert got == exact_top(uv, q, 50) == nearest[300:350]


def test_the_graph_follows_updates_and_retirements() -> None:
    uv, mat = ready()
    extra = clustered(5, seed=9)
    uv.apply(rows([5001, 5002, 5003, 5004, 5005], extra))  # new
    uv.apply(rows([10], extra[:1] * -1))  # changed vector
    uv.apply(rows([11, 12], mat[10:12], active=False))  # retired
    assert len(uv.ann) == 3000 + 5 - 2  # type: ignore[arg-type]
    for j, mid in enumerate([5001, 5002, 5003, 5004, 5005]):
        assert uv.search_many(extra[j : j + 1], 1, MemoryFilters(), NOW, None)[0][0][0] == mid
    assert uv.search_many(-extra[:1], 1, MemoryFilters(), NOW, None)[0][0][0] == 10
    for j in (10, 11):
        top = [i for i, _ in uv.search_many(mat[j : j + 1], 20, MemoryFilters(), NOW, None)[0]]
        assert j + 1 not in top and top


def test_changes_during_the_build_are_replayed() -> None:
    mat = clustered(2000)
    uv = UserVectors(dim=DIM, ann_min_rows=500)
    uv.apply(rows(range(1, 2001), mat))
    uv.search_many(mat[:1], 5, MemoryFilters(), NOW, None)  # starts the build from a snapshot
    assert uv.builder is not None
    late = clustered(3, seed=5)
    uv.apply(rows([9001, 9002, 9003], late))  # after the snapshot
    uv.apply(rows([1, 2], mat[:2], active=False))
    assert uv.builder.pending >= {9001, 9002, 9003, 1, 2}
    assert uv.wait_for_index(60)
    assert len(uv.ann) == 2000 + 3 - 2  # type: ignore[arg-type]
    assert uv.search_many(late[1:2], 1, MemoryFilters(), NOW, None)[0][0][0] == 9002
    assert 1 not in [i for i, _ in uv.search_many(mat[:1], 20, MemoryFilters(), NOW, None)[0]]


def test_filters_the_graph_cannot_satisfy_fall_back_to_the_scan() -> None:
    mat = clustered(3000)
    uv = UserVectors(dim=DIM, ann_min_rows=500)
    # 30 long-term rows among 3,000: the graph's candidates for most queries hold none of them
    uv.apply(rows(range(1, 2971), mat[:2970]))
    uv.apply(rows(range(2971, 3001), mat[2970:], tier="long_term"))
    uv.search_many(mat[:1], 5, MemoryFilters(), NOW, None)
    assert uv.wait_for_index(60)
    flt = MemoryFilters(tiers=(MemoryTier.LONG_TERM,))
    got = uv.search_many(mat[:3], 10, flt, NOW, None)
    for g, q in zip(got, mat[:3], strict=True):
        assert [i for i, _ in g] == exact_top(uv, q, 10, flt)
        assert all(i > 2970 for i, _ in g)
    # a metadata filter arrives as allowed ids
    allowed = np.array([5, 6, 7], dtype=np.int64)
    assert {i for i, _ in uv.search_many(mat[:1], 10, MemoryFilters(), NOW, allowed)[0]} == {5, 6, 7}


def test_sqlite_store_uses_the_graph_past_the_setting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ann.db'}"
    mat = clustered(400, seed=3)
    store = open_test_store(url, DIM, vector_index_min_rows=300)
    exact = open_test_store(url, DIM, vector_index_min_rows=0)
    try:
        for b in range(0, 400, 100):
            store.apply_add(plan("u", now=later(b), memories=[memory(f"fact {i}", vec=mat[i]) for i in range(b, b + 100)]))
        store.apply_add(plan("v", memories=[memory("other user's fact", vec=mat[0])]))
        flt = MemoryFilters()
        first = store.vector_search("u", mat[0], 5, flt, later(500))
        uv = store.vectors.get("u")  # type: ignore[attr-defined]
        assert uv.wait_for_index(60) is True
        q = clustered(20, seed=4)
        for v in q:
            a = [i for i, _ in store.vector_search("u", v, 10, flt, later(500))]
            b = [i for i, _ in exact.vector_search("u", v, 10, flt, later(500))]
            assert len(set(a) & set(b)) >= 9
        assert [i for i, _ in store.vector_search("u", mat[0], 5, flt, later(500))][0] == first[0][0]
        # a delete through the store reaches the graph; the other user is never a candidate
        gone = first[0][0]
        store.delete_memory("u", gone, now=later(600), actor="test", reason=None)
        after = [i for i, _ in store.vector_search("u", mat[0], 5, flt, later(700))]
        assert gone not in after and len(after) == 5
        other = store.vector_search("v", mat[0], 5, flt, later(700))
        assert len(other) == 1
    finally:
        store.close()
        exact.close()


@pytest.mark.slow  # a fresh process exiting mid-build
def test_a_process_exiting_mid_build_exits_cleanly(tmp_path: Path) -> None:
    """A build thread still inside the native library at interpreter exit would abort the process;
    the build is cancelled and joined at exit instead."""
    code = textwrap.dedent(
        """
        import numpy as np
        from deepcontext.store.interface import MemoryFilters
        from deepcontext.store.vectors import UserVectors, VectorRow
        rng = np.random.default_rng(0)
        m = rng.normal(size=(60000, 64)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        uv = UserVectors(dim=64, ann_min_rows=1000)
        uv.apply([VectorRow(id=i + 1, active=True, tier="short_term", memory_type="semantic", when=0.0,
                            expires_at=None, conversation_id=None, embedding=m[i]) for i in range(len(m))])
        uv.search_many(m[:1], 5, MemoryFilters(), 1e12, None)
        assert uv.builder is not None and not uv.builder.ready.is_set()
        print("exiting mid-build", flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "exiting mid-build" in out.stdout


@pytest.mark.parametrize(
    ("setting", "value"), [("vector_index_min_rows", -1), ("embedding_batch_size", 0), ("vector_index_min_rows", "many")]
)
def test_bad_index_settings_are_clear_errors(setting: str, value: object) -> None:
    from deepcontext import ConfigurationError, DeepContext

    with pytest.raises(ConfigurationError, match=setting):
        DeepContext(**{setting: value})
