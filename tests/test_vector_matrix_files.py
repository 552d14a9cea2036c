"""Saved vector matrices (SQLite): a restart maps a user's live vectors and their attributes from
``<database>.vectors/`` instead of reading every row, applies the rows changed since, and falls back
to the rows whenever the file is not the user's, not whole, or no longer adds up to the rows. Each
check compares the matrix with the one a store that saves nothing reads from the rows. Real SQLite
files, stores with a low ``vector_index_min_rows``; small data."""

from __future__ import annotations

import logging
import random
import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from deepcontext.store.interface import MemoryFilters, Store
from deepcontext.types import MemoryTier, MemoryType
from tests.reliability.test_read_only import read_only_view
from tests.store_helpers import later, memory, open_test_store, plan
from tests.store_workers import clustered_vectors, run_processes, write_vectors_worker

DIM = 32
MIN_ROWS = 200
FLT = MemoryFilters()
NOW = later(5000)


def open_store(path: Path, **settings: object) -> Store:
    return open_test_store(f"sqlite:///{path}", DIM, **{"vector_index_min_rows": MIN_ROWS, **settings})


def fill(store: Store, n: int = 400, seed: int = 3) -> np.ndarray:
    """``n`` memories of user "u" with every attribute a vector search filters on varied: tier, type,
    conversation, time said, and an expiry (some past) for every seventh."""
    rng = random.Random(seed)
    mat = clustered_vectors(n, DIM, seed)
    tiers, types = list(MemoryTier), list(MemoryType)
    for b in range(0, n, 100):
        for conv in ("c1", "c2", "c3"):
            mems = [
                memory(
                    f"fact {seed}-{i}", vec=mat[i], tier=rng.choice(tiers), mtype=rng.choice(types),
                    said_at=later(i), expires_at=later(4000 + (i % 2) * 2000) if i % 7 == 0 else None,
                )
                for i in range(b, b + 100)
                if f"c{i % 3 + 1}" == conv
            ]  # fmt: skip
            store.apply_add(plan("u", conversation_id=conv, now=later(b), memories=mems))
    return mat


def first_search(store: Store, user: str = "u") -> None:
    store.vector_search(user, np.ones(DIM, dtype=np.float32) / DIM**0.5, 5, FLT, NOW)


def saved_and_closed(db: Path) -> np.ndarray:
    """A database whose user "u" has a graph and a matrix saved beside it."""
    store = open_store(db)
    mat = fill(store)
    first_search(store)
    assert store.vectors.get("u").wait_for_index(60)  # type: ignore[attr-defined]
    store.close()
    return mat


def matrix_source(store: Store, user: str = "u") -> str:
    first_search(store, user)
    return str(store.vectors.get(user).matrix_source)  # type: ignore[attr-defined]


def state(store: Store, user: str = "u") -> dict[int, tuple[object, ...]]:
    """Every live row of the user's matrix: id -> (vector, tier, type, time, expiry, conversation)."""
    uv = store.vectors.get(user)  # type: ignore[attr-defined]
    names = {code: conv for conv, code in uv.conv_codes.items()}
    return {
        int(uv.ids[i]): (tuple(uv.mat[i].tolist()), int(uv.tier[i]), int(uv.mtype[i]), float(uv.when[i]),
                         float(uv.expires[i]), names[int(uv.conv[i])])
        for i in range(uv.n)
        if uv.alive[i]
    }  # fmt: skip


def from_rows(db: Path) -> dict[int, tuple[object, ...]]:
    """The matrix as a store that saves nothing reads it from the rows."""
    plain = open_store(db, vector_index_files=False)
    try:
        assert matrix_source(plain) == "rows"
        return state(plain)
    finally:
        plain.close()


def reopened_from(db: Path, source: str) -> None:
    """A new store's matrix of "u" came from ``source`` and equals the one read from the rows."""
    want = from_rows(db)
    store = open_store(db)
    try:
        assert matrix_source(store) == source
        assert state(store) == want
    finally:
        store.close()


FILTERED = [
    MemoryFilters(),
    MemoryFilters(include_expired=True),
    MemoryFilters(tiers=[MemoryTier.LONG_TERM]),
    MemoryFilters(types=[MemoryType.EPISODIC, MemoryType.PROCEDURAL]),
    MemoryFilters(conversation_ids=["c2"]),
    MemoryFilters(after=later(100), before=later(300)),
]


def answers(store: Store, queries: np.ndarray) -> list[list[int]]:
    """Exact rankings under each filter: asked for half the user's rows, a search scans the matrix
    instead of asking the graph (an approximate graph would make the comparison flaky)."""
    return [[i for i, _ in store.vector_search("u", q, 200, f, NOW)] for f in FILTERED for q in queries]


def test_a_restart_maps_the_saved_matrix(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    mat = saved_and_closed(db)
    assert (tmp_path / "m.db.vectors").is_dir()
    assert len(list((tmp_path / "m.db.vectors").glob("*.vecs"))) == 1
    want = from_rows(db)
    plain = open_store(db, vector_index_files=False)
    try:
        expected = answers(plain, mat[::50])
    finally:
        plain.close()

    store = open_store(db)
    try:
        assert matrix_source(store) == "file"
        assert state(store) == want
        assert answers(store, mat[::50]) == expected  # every filter, on the mapped matrix
        extra = clustered_vectors(5, DIM, 21)
        store.apply_add(plan("u", now=later(900), memories=[memory(f"new {i}", vec=extra[i]) for i in range(5)]))
        first_search(store)  # a mapped matrix takes new rows (it grows out of the map)
        assert len(state(store)) == len(want) + 5
    finally:
        store.close()


def test_rows_changed_since_the_save_are_applied(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    saved_and_closed(db)
    # while no process holds the user: another one adds 50 memories and deletes 10
    run_processes(write_vectors_worker, [(f"sqlite:///{db}", DIM, 50, 77, 10)])
    reopened_from(db, "file")


def test_an_active_row_removed_for_good_meanwhile_means_the_rows_are_read(tmp_path: Path) -> None:
    """A purge removes expired rows without a trace in the rows changed since: the count of active
    rows tells, and the matrix is read from the rows (then saved anew)."""
    db = tmp_path / "m.db"
    saved_and_closed(db)
    other = open_store(db, vector_index_files=False)
    try:
        gone = other.purge("u", deleted_before=NOW, expired_before=later(5000), now=NOW)
        assert gone.expired
    finally:
        other.close()
    want = from_rows(db)
    assert not set(gone.expired) & set(want)
    store = open_store(db)
    try:
        assert matrix_source(store) == "rows"
        assert state(store) == want
        uv = store.vectors.get("u")  # type: ignore[attr-defined]
        assert uv.wait_for_index(60) and uv.matrix_unsaved
    finally:
        store.close()  # saves the matrix it had to read
    store = open_store(db)
    try:
        assert matrix_source(store) == "file"
        assert state(store) == want
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["flipped bytes", "truncated", "garbage", "removed"])
def test_a_damaged_or_missing_matrix_is_read_from_the_rows_and_saved_again(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    saved_and_closed(db)
    (f,) = (tmp_path / "m.db.vectors").glob("*.vecs")
    data = bytearray(f.read_bytes())
    if damage == "flipped bytes":  # inside the vectors: the arrays would still map
        mid = len(data) // 2
        data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    elif damage == "truncated":
        data = data[: len(data) // 3]
    elif damage == "garbage":
        data = bytearray(random.Random(1).randbytes(len(data)))
    if damage == "removed":  # a database saved before matrices were: the next save writes one
        f.unlink()
    else:
        f.write_bytes(bytes(data))
    want = from_rows(db)

    store = open_store(db)
    try:
        with caplog.at_level(logging.WARNING):
            assert matrix_source(store) == "rows"
        if damage == "flipped bytes":
            assert "unusable" in caplog.text
        assert state(store) == want
        uv = store.vectors.get("u")  # type: ignore[attr-defined]
        assert uv.wait_for_index(60)
        assert uv.source == "file"  # the graph's own file was fine
        for _ in range(100):  # the first search after the graph is ready saves the matrix
            first_search(store)
            if not uv.matrix_unsaved:
                break
            if uv.saver is not None:
                uv.saver.join(30)
        assert not uv.matrix_unsaved
    finally:
        store.close()
    store = open_store(db)
    try:
        assert matrix_source(store) == "file"
        assert state(store) == want
    finally:
        store.close()


def test_a_matrix_of_an_earlier_incarnation_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = open_store(db)
    fill(store, seed=3)
    first_search(store)
    assert store.vectors.get("u").wait_for_index(60)  # type: ignore[attr-defined]
    f = Path(store.vectors.files.matrix_path("u"))  # type: ignore[attr-defined]
    old = tmp_path / "old.vecs"
    shutil.copy(f, old)
    store.delete_user("u")
    assert not f.exists()  # delete_user removes it with the graph
    fill(store, seed=5)
    store.close()
    shutil.copy(old, f)
    reopened_from(db, "rows")


def test_a_read_only_database_maps_saved_matrices(tmp_path: Path) -> None:
    src = tmp_path / "data"
    src.mkdir()
    saved_and_closed(src / "m.db")
    want = from_rows(src / "m.db")
    before = sorted((p.relative_to(src), p.stat().st_size) for p in src.rglob("*"))
    with read_only_view(src, tmp_path) as view:
        store = open_store(view / "m.db")
        try:
            assert store.read_only  # type: ignore[attr-defined]
            assert matrix_source(store) == "file"
            assert state(store) == want
        finally:
            store.close()
        assert sorted((p.relative_to(view), p.stat().st_size) for p in view.rglob("*")) == before


def test_a_matrix_saved_later_covers_the_changes(tmp_path: Path) -> None:
    """Changes made while a process runs are in the matrix it saves at close: the next restart
    applies no rows."""
    db = tmp_path / "m.db"
    saved_and_closed(db)
    store = open_store(db)
    try:
        first_search(store)
        uv = store.vectors.get("u")  # type: ignore[attr-defined]
        assert uv.wait_for_index(60)
        before = store.vectors.files.matrix_header("u")  # type: ignore[attr-defined]
        extra = clustered_vectors(30, DIM, 8)
        store.apply_add(plan("u", now=later(800), memories=[memory(f"new {i}", vec=extra[i]) for i in range(30)]))
        store.delete_memory("u", 3, now=later(801), actor="test", reason=None)
        first_search(store)
    finally:
        store.close()
    store = open_store(db)
    try:
        header = store.vectors.files.matrix_header("u")  # type: ignore[attr-defined]
        assert header.version > before.version and header.count == before.count + 30 - 1
        assert matrix_source(store) == "file"
        assert state(store) == from_rows(db)
    finally:
        store.close()


def test_times_survive_the_file_exactly(tmp_path: Path) -> None:
    """Epoch seconds go through the file as the float64 the rows give (a filter on a boundary
    keeps or drops the same rows)."""
    db = tmp_path / "m.db"
    saved_and_closed(db)
    store = open_store(db)
    try:
        assert matrix_source(store) == "file"
        edge = MemoryFilters(after=later(150), before=later(150) + timedelta(minutes=1))
        got = store.vector_search("u", np.ones(DIM, dtype=np.float32), 5, edge, NOW)
        assert len(got) == 1
    finally:
        store.close()


def test_opening_reads_the_newest_saved_users_ahead(tmp_path: Path) -> None:
    """``warm_up`` reads the saved matrices (and starts the graph loads) of the users saved most
    recently, before any search, as many as the cache holds; a user that would not fit is left to
    its first search."""
    db = tmp_path / "m.db"
    saved_and_closed(db)
    store = open_store(db)
    mat = clustered_vectors(300, DIM, 9)
    for b in range(0, 300, 100):
        store.apply_add(plan("w", now=later(b), memories=[memory(f"w {i}", vec=mat[i]) for i in range(b, b + 100)]))
    first_search(store, "w")
    assert store.vectors.get("w").wait_for_index(60)  # type: ignore[attr-defined]
    store.close()
    want = {"u": from_rows(db)}

    store = open_store(db)
    try:
        store.warm_up()
        store._read_ahead.join(60)  # type: ignore[attr-defined]
        held = store.vectors._users  # type: ignore[attr-defined]
        assert set(held) == {"u", "w"}
        assert held["u"].matrix_source == "file" and state(store) == want["u"]
        assert held["u"].wait_for_index(60) and held["u"].source == "file"
    finally:
        store.close()

    store = open_store(db, vector_cache_max_rows=350)  # room for "w" (saved last, 300 rows), not "u" too
    try:
        store.warm_up()
        store._read_ahead.join(60)  # type: ignore[attr-defined]
        assert set(store.vectors._users) == {"w"}  # type: ignore[attr-defined]
    finally:
        store.close()


def test_closing_while_reading_ahead(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    saved_and_closed(db)
    store = open_store(db)
    store.warm_up()
    store.close()  # waits for the user being read, then stops
    assert not store._read_ahead.is_alive()  # type: ignore[attr-defined]
    store = open_store(db)
    try:
        assert matrix_source(store) == "file"
    finally:
        store.close()


def test_the_engine_reads_ahead_when_it_opens(tmp_path: Path) -> None:
    import asyncio

    from deepcontext import DeepContext

    async def held_users(**settings: object) -> set[str]:
        ctx = DeepContext(database_url=f"sqlite:///{tmp_path / 'e.db'}", embedder="hash", embedding_dimensions=DIM,
                          vector_index_min_rows=MIN_ROWS, **settings)  # fmt: skip
        await ctx.init()
        try:
            thread = ctx.store._read_ahead  # type: ignore[attr-defined]
            if thread is not None:
                thread.join(60)
            return set(ctx.store.vectors._users)  # type: ignore[attr-defined]
        finally:
            await ctx.close()

    store = open_store(tmp_path / "e.db")
    store.ensure_embedder(f"hash-v1-{DIM}", DIM)
    store.close()
    saved = open_store(tmp_path / "e.db")
    fill(saved)
    first_search(saved)
    assert saved.vectors.get("u").wait_for_index(60)  # type: ignore[attr-defined]
    saved.close()
    assert asyncio.run(held_users()) == {"u"}
    assert asyncio.run(held_users(vector_read_ahead=False)) == set()


def test_a_first_search_during_the_read_ahead_reads_the_user_once(tmp_path: Path) -> None:
    """A search of a user the read-ahead is reading waits for it and uses what it read: the saved
    matrix is checked (its active rows counted) once, and one graph is loaded."""
    db = tmp_path / "m.db"
    saved_and_closed(db)
    for _ in range(5):
        store = open_store(db)
        counts: list[str] = []
        store.tracer = lambda sql, _params: counts.append(sql) if "count(*)" in sql else None  # type: ignore[attr-defined]
        try:
            store.warm_up()
            first_search(store)
            store._read_ahead.join(60)  # type: ignore[attr-defined]
            uv = store.vectors.get("u")  # type: ignore[attr-defined]
            assert uv.matrix_source == "file" and len(counts) == 1
            assert uv.wait_for_index(60) and uv.source == "file"
        finally:
            store.close()
