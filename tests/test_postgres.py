"""PostgreSQL-only behaviour: URLs, the pool, the HNSW index, many processes, advisory locks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import insert, text

from deepcontext.errors import ConfigurationError, LockTimeoutError
from deepcontext.store import MemoryFilters
from deepcontext.store.locks import user_lock
from deepcontext.store.postgres import PostgresStore, normalize_url
from deepcontext.store.postgres_keywords import fold_diacritics
from tests.store_helpers import DIM, T0, later, open_test_store, random_unit
from tests.store_workers import SPAWN, add_worker, hold_lock_worker, run_processes


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@h:5433/db", "postgresql+psycopg://u:p@h:5433/db"),
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+asyncpg://u:p@h/db?ssl=true", "postgresql+psycopg://u:p@h/db?sslmode=require"),
        (
            "postgresql+asyncpg://h/db?prepared_statement_cache_size=0&ssl=verify-full",
            "postgresql+psycopg://h/db?sslmode=verify-full",
        ),
        (
            "postgresql+psycopg2://u@h/db?sslmode=disable&application_name=x",
            "postgresql+psycopg://u@h/db?application_name=x&sslmode=disable",
        ),
        ("postgresql+psycopg://u@/db?host=/var/run/postgresql", "postgresql+psycopg://u@/db?host=%2Fvar%2Frun%2Fpostgresql"),
    ],
)
def test_url_normalisation(given: str, expected: str) -> None:
    assert normalize_url(given) == expected


@pytest.mark.parametrize("bad", ["sqlite:///x.db", "mysql://u@h/db", "postgresql+pg8000://u@h/db", "::nonsense::"])
def test_bad_urls(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        normalize_url(bad)


def test_seed_style_asyncpg_url_opens(pg_url: str) -> None:
    s = open_test_store(pg_url.replace("postgresql://", "postgresql+asyncpg://"))
    try:
        assert s.backend == "postgresql" and s.engine.url.drivername == "postgresql+psycopg"  # type: ignore[attr-defined]
        assert s.list_users() == []
    finally:
        s.close()


def test_pool_settings(pg_url: str) -> None:
    s = open_test_store(pg_url, db_pool_size=3)
    try:
        pool: Any = s.engine.pool  # type: ignore[attr-defined]
        assert pool.size() == 3 and pool._pre_ping is True
    finally:
        s.close()
    other = PostgresStore("postgresql://u:secret@127.0.0.1/x", DIM)  # engines connect lazily
    try:
        assert "secret" not in repr(other) and "***" in repr(other)
    finally:
        other.close()


def test_fold_diacritics() -> None:
    assert fold_diacritics("Café Ångström naïve") == "Cafe Angstrom naive"
    assert fold_diacritics("がぎ 한국어 東京") == "がぎ 한국어 東京"  # other scripts untouched


def bulk_memories(store: PostgresStore, user_id: str, vectors: np.ndarray, conversation_id: str = "c") -> list[int]:
    """Insert many memories fast (one multi-row INSERT), indexed like apply_add would."""
    mt = store.t.memories
    rows = [
        dict(
            user_id=user_id, text=f"memory {i} of {user_id}", content_hash=f"{user_id}-{conversation_id}-{i}",
            memory_type="semantic", tier="short_term", status="active", importance=0.5, base_importance=0.5,
            confidence=0.8, access_count=0, reinforced_at=T0, created_at=T0, updated_at=T0, valid_from=T0,
            conversation_id=conversation_id, source="test", consolidated_from=[], metadata={}, pinned=False,
            tags=[], embedding=v, rev=1,
        )
        for i, v in enumerate(vectors)
    ]  # fmt: skip
    with store.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO users (user_id, version, incarnation, created_at, updated_at, consolidation_due) "
                "VALUES (:u, 1, 'x', now(), now(), false) ON CONFLICT DO NOTHING"
            ),
            {"u": user_id},
        )
        ids = [r[0] for r in conn.execute(insert(mt).returning(mt.c.id, sort_by_parameter_order=True), rows)]
        store.index_texts(conn, [(i, r["text"]) for i, r in zip(ids, rows, strict=True)])
        conn.execute(text("ANALYZE memories"))
    return ids


def exact_top(vectors: np.ndarray, ids: list[int], q: np.ndarray, k: int) -> list[int]:
    order = np.argsort(-(vectors @ q), kind="stable")[:k]
    return [ids[i] for i in order]


def explain(store: PostgresStore, user_id: str, q: np.ndarray, k: int, filters: MemoryFilters) -> str:
    """The plan of the statement vector_search runs (captured with the tracer, explained with the same settings)."""
    seen: list[tuple[str, Any]] = []
    traced = PostgresStore(store.url, store.dim, tracer=lambda s, p: seen.append((s, p)))
    try:
        traced.vector_search(user_id, q, k, filters, later(1))
        done = list(seen)
        statement, params = next((s, p) for s, p in done if "<=>" in s)
        with traced.engine.connect() as conn:
            for s, p in done:
                if "set_config" in s and "enable_indexscan" not in s:
                    conn.exec_driver_sql(s, p)
            return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params))
    finally:
        traced.close()


def test_hnsw_index_answers_vector_search(pg: PostgresStore) -> None:
    rng = np.random.default_rng(7)
    vecs = random_unit(rng, 3000)
    ids = bulk_memories(pg, "big", vecs)
    bulk_memories(pg, "small", random_unit(rng, 5))
    q = random_unit(rng, 1)[0]
    plan = explain(pg, "big", q, 10, MemoryFilters())
    assert "ix_memories_embedding_hnsw" in plan, plan
    got = [i for i, _ in pg.vector_search("big", q, 10, MemoryFilters(), later(1))]
    assert len(got) == 10 and len(set(got) & set(exact_top(vecs, ids, q, 10))) >= 8  # approximate, high recall
    # a handful of memories of a small user among many others: all found (the exact path)
    assert len(pg.vector_search("small", q, 10, MemoryFilters(), later(1))) == 5


def test_selective_filters_still_return_k(pg: PostgresStore) -> None:
    rng = np.random.default_rng(8)
    bulk_memories(pg, "u", random_unit(rng, 3000), conversation_id="big")
    rare_vecs = random_unit(rng, 40)
    rare_ids = bulk_memories(pg, "u", rare_vecs, conversation_id="rare")
    q = random_unit(rng, 1)[0]
    got = pg.vector_search("u", q, 10, MemoryFilters(conversation_ids=("rare",)), later(1))
    assert [i for i, _ in got] == exact_top(rare_vecs, rare_ids, q, 10)
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    np.testing.assert_allclose([s for _, s in got], sorted(rare_vecs @ q, reverse=True)[:10], atol=1e-5)


@pytest.mark.slow  # several processes on one database
def test_concurrent_adds_from_processes_lose_nothing(pg_url: str) -> None:
    open_test_store(pg_url).close()
    workers, n = 4, 12
    results = run_processes(add_worker, [(pg_url, DIM, w, n) for w in range(workers)])
    store = open_test_store(pg_url)
    try:
        counts = store.count_rows("shared")
        assert counts["turns"] == workers * n * 2
        # each worker's own facts + the common facts, written by every worker but stored once each
        assert counts["memories"] == workers * n + n
        common = {ids[1::2][i] for ids in results for i in range(n)}
        assert len(common) == n
        assert store.match_entities("shared", ["acme"])["acme"][1] == workers * n
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            version = conn.execute(text("SELECT version FROM users WHERE user_id = 'shared'")).scalar()
            conv = conn.execute(text("SELECT turn_count FROM conversations WHERE user_id = 'shared'")).scalar()
            parents = conn.execute(text("SELECT parent_id FROM turn_edges WHERE user_id = 'shared'")).scalars().all()
        assert version == workers * n and conv == workers * n * 2
        # the conversation stays one chain: no turn has two children (no lost tip update)
        assert len(parents) == workers * n * 2 - 1 and len(set(parents)) == len(parents)
        for w in range(workers):
            assert store.count_rows(f"own-{w}")["memories"] == n
    finally:
        store.close()


@pytest.mark.slow  # a lock holder process killed
def test_advisory_lock_is_released_when_the_holder_dies(pg_url: str) -> None:
    open_test_store(pg_url).close()
    barrier = SPAWN.Barrier(2)
    queue = SPAWN.Queue()
    from tests.store_workers import _wrap

    proc = SPAWN.Process(target=_wrap, args=(hold_lock_worker, 0, queue, barrier, pg_url, DIM, 300.0))
    proc.start()
    store = open_test_store(pg_url)
    try:
        barrier.wait(timeout=60)  # the child holds the lock now
        with pytest.raises(LockTimeoutError):
            with user_lock(store, "u", "consolidate", timeout=0.3):  # type: ignore[arg-type]
                pass
        proc.kill()
        proc.join(10)
        with user_lock(store, "u", "consolidate", timeout=20):  # type: ignore[arg-type]  # the server freed it
            pass
    finally:
        if proc.is_alive():
            proc.kill()
        store.close()


def test_delete_user_waits_for_a_write_in_flight(pg: PostgresStore) -> None:
    """A delete_user that starts while an add of the same user is open leaves none of that add's rows."""
    import threading

    pg.apply_add(plan_for("u"))
    in_write, finish = threading.Event(), threading.Event()

    def writer() -> None:
        mt = pg.t.memories
        with pg.transaction() as conn:
            rev = pg.bump_user(conn, "u", T0)
            conn.execute(
                insert(mt).values(
                    user_id="u", text="written while deleting", content_hash="w", memory_type="semantic",
                    tier="short_term", status="active", importance=0.5, base_importance=0.5, confidence=0.8,
                    access_count=0, reinforced_at=T0, created_at=T0, updated_at=T0, consolidated_from=[],
                    metadata={}, pinned=False, tags=[], rev=rev,
                )
            )  # fmt: skip
            in_write.set()
            finish.wait(30)

    w = threading.Thread(target=writer)
    w.start()
    assert in_write.wait(30)
    deleter = threading.Thread(target=pg.delete_user, args=("u",))
    deleter.start()
    with pg.engine.connect() as conn:  # wait until the delete is blocked on the user's row lock
        for _ in range(600):
            waiting = conn.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
            ).scalar()
            conn.rollback()
            if waiting:
                break
            threading.Event().wait(0.05)
        assert waiting == 1
    finish.set()
    w.join(30)
    deleter.join(30)
    assert pg.count_rows("u") == {t: 0 for t in pg.count_rows("u")}


def plan_for(user_id: str) -> Any:
    from tests.store_helpers import memory, plan, turn

    return plan(user_id, turns=[turn("hello")], memories=[memory("a first fact", source_turn_indices=[0])])


def test_planner_statistics_follow_a_bulk_insert(pg: PostgresStore) -> None:
    """Statistics taken while a table was small are refreshed once it has grown past twice their
    size (by the store itself: servers may run without autovacuum)."""
    from tests.store_helpers import axis, memory, plan, turn

    pg.refresh_statistics(force=True)  # statistics of the (nearly) empty tables
    for i in range(6):
        pg.apply_add(
            plan("bulk", turns=[turn(f"t{i}-{j}") for j in range(100)],
                 memories=[memory(f"m{i}-{j}", vec=axis(j % DIM, tilt=(j + 1) % DIM, amount=0.01 * (i + 1))) for j in range(100)])
        )  # fmt: skip
    assert {"memories", "turns"} <= set(pg.refresh_statistics())  # 600 rows against ~0 known
    assert pg.refresh_statistics() == []  # up to date now
    with pg.engine.connect() as conn:
        est = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE relname = 'memories'").scalar()
    assert est is not None and est >= 600
