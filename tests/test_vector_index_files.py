"""Saved HNSW graphs (SQLite): a restart loads a user's graph from ``<database>.vectors/`` instead of
building it, catches up with rows written since, and never trusts a file that is not the user's
or not whole. Real SQLite files and stores with a low ``vector_index_min_rows``; small data."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from deepcontext.store.interface import MemoryFilters, Store
from tests.reliability.test_read_only import read_only_view
from tests.store_helpers import later, memory, open_test_store, plan
from tests.store_workers import clustered_vectors, run_processes, write_vectors_worker

DIM = 32
MIN_ROWS = 200
FLT = MemoryFilters()
ROOT = Path(__file__).resolve().parents[1]


def open_store(path: Path, **settings: object) -> Store:
    return open_test_store(f"sqlite:///{path}", DIM, **{"vector_index_min_rows": MIN_ROWS, **settings})


def fill(store: Store, n: int = 400, seed: int = 3) -> np.ndarray:
    mat = clustered_vectors(n, DIM, seed)
    for b in range(0, n, 100):
        store.apply_add(plan("u", now=later(b), memories=[memory(f"fact {seed}-{i}", vec=mat[i]) for i in range(b, b + 100)]))
    return mat


def graph_ready(store: Store, user: str = "u") -> str:
    """Search once (the first search scans exactly and starts the build or the load), wait for the
    graph; where it came from ("file" or "build")."""
    store.vector_search(user, np.ones(DIM, dtype=np.float32) / DIM**0.5, 5, FLT, later(5000))
    uv = store.vectors.get(user)  # type: ignore[attr-defined]
    assert uv.wait_for_index(60) is True
    return str(uv.source)


def top(store: Store, queries: np.ndarray, k: int = 10) -> list[list[int]]:
    return [[i for i, _ in store.vector_search("u", q, k, FLT, later(5000))] for q in queries]


def graph_file(store: Store, user: str = "u") -> Path:
    return Path(store.vectors.files.path(user))  # type: ignore[attr-defined]


def live_count(store: Store) -> int:
    uv = store.vectors.get("u")  # type: ignore[attr-defined]
    return int(uv.n - uv.dead)


def assert_like_exact(store: Store, path: Path, queries: np.ndarray) -> None:
    """The graph holds exactly the live vectors, and its searches find what an exact scan finds."""
    exact = open_store(path, vector_index_min_rows=0)
    try:
        assert len(store.vectors.get("u").ann) == live_count(store)  # type: ignore[attr-defined]
        got, want = top(store, queries), top(exact, queries)
        assert np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(got, want, strict=True)]) >= 0.95
        # an HNSW graph is approximate: a reloaded one may miss one query's best match now and then
        # (under load); two misses mean the graph is not the rows'
        assert sum(g[0] != w[0] for g, w in zip(got, want, strict=True)) <= 1
    finally:
        exact.close()


def test_a_restart_loads_the_saved_graph(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    mat = fill(store)
    assert graph_ready(store) == "build"
    f = graph_file(store)
    assert f.parent == tmp_path / "m.db.vectors" and f.is_file()  # saved once built
    queries = mat[::40]
    before = top(store, queries)
    store.close()

    store = open_store(db)
    try:
        assert graph_ready(store) == "file"  # loaded: no build ran
        assert top(store, queries) == before
        assert_like_exact(store, db, queries)
    finally:
        store.close()


def test_changes_are_saved_at_close(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    fill(store)
    graph_ready(store)
    saved = store.vectors.files.header("u")  # type: ignore[attr-defined]
    extra = clustered_vectors(30, DIM, 8)
    store.apply_add(plan("u", now=later(800), memories=[memory(f"new {i}", vec=extra[i]) for i in range(30)]))
    store.vector_search("u", extra[0], 5, FLT, later(5000))  # the graph takes the changes
    store.close()
    store = open_store(db)
    try:
        header = store.vectors.files.header("u")  # type: ignore[attr-defined]
        assert header.version > saved.version and header.count == saved.count + 30
        assert graph_ready(store) == "file"
        assert store.vectors.get("u").unsaved == 0  # type: ignore[attr-defined]  # nothing to replay
    finally:
        store.close()


def test_rows_written_by_another_process_are_replayed(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    mat = fill(store)
    graph_ready(store)
    store.close()
    # while no process holds the graph: another one adds 50 memories and deletes 10
    (new_ids,) = run_processes(write_vectors_worker, [(f"sqlite:///{db}", DIM, 50, 77, 10)])
    extra = clustered_vectors(50, DIM, 77)
    store = open_store(db)
    try:
        assert graph_ready(store) == "file"
        uv = store.vectors.get("u")  # type: ignore[attr-defined]
        assert uv.unsaved == 60  # replayed: 50 added, 10 removed
        for j in (0, 17, 49):
            assert top(store, extra[j : j + 1], 1) == [[new_ids[j]]]
        found = {i for r in top(store, mat[:10], 10) for i in r}
        assert not found & set(range(1, 11))  # deleted
        assert_like_exact(store, db, np.concatenate([mat[::50], extra[::10]]))
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["flipped bytes", "truncated", "garbage"])
def test_a_damaged_file_is_ignored_and_rebuilt(tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    mat = fill(store)
    graph_ready(store)
    f = graph_file(store)
    store.close()
    data = bytearray(f.read_bytes())
    if damage == "flipped bytes":  # inside the vectors: usearch itself would load it
        mid = len(data) // 2  # inverted, not zeroed: that stretch may already be zeros
        data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    elif damage == "truncated":
        data = data[: len(data) // 3]
    else:
        data = bytearray(random.Random(1).randbytes(len(data)))
    f.write_bytes(bytes(data))

    store = open_store(db)
    try:
        assert graph_ready(store) == "build"
        assert_like_exact(store, db, mat[::40])
    finally:
        store.close()
    store = open_store(db)  # the rebuilt graph was saved in its place
    try:
        assert graph_ready(store) == "file"
    finally:
        store.close()


def test_a_file_of_an_earlier_incarnation_is_ignored(tmp_path: Path) -> None:
    """The user deleted and created again (new incarnation): an old file put back is not used."""
    db = tmp_path / "m.db"
    store = open_store(db)
    fill(store, seed=3)
    graph_ready(store)
    f = graph_file(store)
    old = tmp_path / "old.hnsw"
    shutil.copy(f, old)
    store.delete_user("u")
    mat = fill(store, seed=5)
    store.close()
    shutil.copy(old, f)

    store = open_store(db)
    try:
        assert graph_ready(store) == "build"
        assert_like_exact(store, db, mat[::40])
    finally:
        store.close()


def test_delete_user_removes_the_file(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    try:
        fill(store)
        graph_ready(store)
        f = graph_file(store)
        assert f.is_file()
        store.delete_user("u")
        assert not f.exists()
    finally:
        store.close()
    assert not f.exists()  # and close did not write it back


def test_a_read_only_database_reads_saved_graphs_and_writes_none(tmp_path: Path) -> None:
    src = tmp_path / "data"
    src.mkdir()
    store = open_store(src / "m.db")
    mat = fill(store)
    fill_other = clustered_vectors(300, DIM, 9)
    for b in range(0, 300, 100):  # a user big enough for a graph, never searched: no file
        store.apply_add(plan("w", memories=[memory(f"other {i}", vec=fill_other[i]) for i in range(b, b + 100)]))
    graph_ready(store)
    store.close()
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    with read_only_view(src, tmp_path) as view:
        store = open_store(view / "m.db")
        try:
            assert store.read_only  # type: ignore[attr-defined]
            assert graph_ready(store) == "file"
            assert graph_ready(store, "w") == "build"  # works, in memory only
            assert top(store, mat[:1], 1)
        finally:
            store.close()
        assert sorted(p.relative_to(view) for p in view.rglob("*")) == before


def test_no_files_when_turned_off(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db", vector_index_files=False)
    try:
        fill(store)
        assert graph_ready(store) == "build"
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]


def test_a_kill_while_saving_leaves_a_database_that_answers(tmp_path: Path) -> None:
    """A process adding, deleting and saving its graph in a loop is SIGKILLed at random moments;
    each time the database opens, the graph (loaded, or rebuilt when the kill left no usable file)
    holds exactly the live vectors and searches find what an exact scan finds."""
    db = tmp_path / "m.db"
    rng = random.Random(5)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from tests.store_workers import save_loop; save_loop(*sys.argv[1:])",
             f"sqlite:///{db}", str(DIM)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert proc.stdout is not None
        acks = 0
        while acks < 8 and proc.stdout.readline().startswith("ACK"):  # past the first build and saves
            acks += 1
        assert acks == 8, "the writer died"
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        store = open_store(db)
        try:
            graph_ready(store)
            assert_like_exact(store, db, clustered_vectors(20, DIM, 4242))
        finally:
            store.close()
    assert not list((tmp_path / "m.db.vectors").glob("*.tmp-*"))  # a dead writer's partial file is swept
