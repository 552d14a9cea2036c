"""PostgreSQL: memory_lexemes, the per-user document frequencies of the keyword index that
memory_fts's triggers keep (migration 3), always equal a recount of the index, through adds, text
updates, deletes, concurrent processes, a deleted user, and the migration's own backfill."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from deepcontext.store import MemoryFilters
from deepcontext.store.migrations import _v3_pg_lexemes
from deepcontext.store.postgres import PostgresStore
from deepcontext.store.postgres_keywords import INDEX_CHUNK
from tests.store_helpers import DIM, axis, later, memory, plan
from tests.store_workers import add_worker, run_processes

RECOUNT = (
    "SELECT user_id, lexeme, count(*) FROM (SELECT user_id, unnest(tsvector_to_array(tsv)) AS lexeme FROM memory_fts "
    "UNION ALL SELECT user_id, '' FROM memory_fts) AS c GROUP BY 1, 2"
)


def kept(store: PostgresStore) -> dict[tuple[str, str], int]:
    with store.engine.connect() as conn:
        return {(u, lx): int(df) for u, lx, df in conn.execute(text("SELECT user_id, lexeme, df FROM memory_lexemes"))}


def recount(store: PostgresStore) -> dict[tuple[str, str], int]:
    with store.engine.connect() as conn:
        return {(u, lx): int(n) for u, lx, n in conn.execute(text(RECOUNT))}


def test_frequencies_follow_every_write(pg: PostgresStore) -> None:
    out = pg.apply_add(
        plan("u", memories=[memory("Ana moved to Lisbon", vec=axis(0)), memory("Ana likes fado in Lisbon", vec=axis(1))])
    )
    pg.apply_add(plan("v", memories=[memory("Bob moved to Porto", vec=axis(2))]))
    assert kept(pg) == recount(pg)
    assert kept(pg)[("u", "lisbon")] == 2 and kept(pg)[("u", "")] == 2 and kept(pg)[("v", "porto")] == 1
    assert ("v", "lisbon") not in kept(pg)  # per user
    moved, likes = out.memory_ids
    pg.update_memory(
        "u",
        moved,
        text="Ana moved to Madrid",
        content_hash="h-madrid",
        embedding=axis(3),
        now=later(1),
        actor="user",
        reason=None,
    )
    assert kept(pg) == recount(pg)
    assert kept(pg)[("u", "lisbon")] == 1 and kept(pg)[("u", "madrid")] == 1 and kept(pg)[("u", "")] == 2
    pg.update_memory(
        "u", moved, text="Ana lives in Rome", content_hash="h-rome", embedding=axis(4), now=later(2), actor="user", reason=None
    )
    assert kept(pg) == recount(pg)
    assert ("u", "madrid") not in kept(pg) and ("u", "move") not in kept(pg)  # no row left at zero
    pg.delete_memory("u", likes, now=later(2), actor="user", reason=None)
    assert kept(pg) == recount(pg)
    # the keyword leg reads them: the words of a deleted memory and of an old text find nothing,
    # the new text is found
    assert pg.keyword_search("u", ["lisbon"], 5, MemoryFilters(), later(3)) == []
    assert pg.keyword_search("u", ["madrid"], 5, MemoryFilters(), later(3)) == []
    assert [m for m, _ in pg.keyword_search("u", ["rome"], 5, MemoryFilters(), later(3))] == [moved]
    pg.delete_user("u")
    assert kept(pg) == recount(pg)
    assert not [key for key in kept(pg) if key[0] == "u"]  # a deleted user leaves no word behind
    assert kept(pg)[("v", "porto")] == 1


@pytest.mark.slow  # several processes on one database
def test_concurrent_adds_from_processes_keep_exact_counts(pg_url: str, pg: PostgresStore) -> None:
    # four processes writing one shared user (same lexemes, concurrently) and one user each
    run_processes(add_worker, [(pg_url, DIM, w, 6) for w in range(4)])
    assert kept(pg) == recount(pg)
    assert kept(pg)[("shared", "worker")] == 4 * 6  # "Worker {w} fact {i}": one row each
    assert {u for u, _ in kept(pg)} == {"shared", "own-0", "own-1", "own-2", "own-3"}


def test_the_migration_backfill_counts_what_the_triggers_keep(pg: PostgresStore) -> None:
    for i in range(3):
        pg.apply_add(plan(f"user-{i}", memories=[memory(f"note {j} about topic {i} and {j % 3}", vec=axis(j)) for j in range(6)]))
    before = kept(pg)
    backfill = _v3_pg_lexemes(pg.dim)[1]
    assert backfill.startswith("INSERT INTO memory_lexemes")
    with pg.engine.begin() as conn:
        conn.execute(text("DELETE FROM memory_lexemes"))
        conn.execute(text(backfill))
    assert kept(pg) == before == recount(pg)


def test_a_large_import_indexes_in_chunks_and_keeps_exact_counts(pg_url: str, pg: PostgresStore) -> None:
    # more memories than one indexing statement takes (INDEX_CHUNK): the counters are updated once
    # per statement, not once per memory (an import of 114k memories in one transaction upserting
    # the same counters per row spent over 20 minutes on row versions)
    n = INDEX_CHUNK + 150
    pg.apply_add(plan("src", memories=[memory(f"note {i} about topic{i % 7} zebra{i}", vec=axis(i)) for i in range(n)]))
    statements: list[str] = []
    traced = PostgresStore(pg_url, DIM, tracer=lambda stmt, params: statements.append(stmt))
    try:
        counts = traced.import_rows("dst", list(pg.export_rows("src")), later(1))
    finally:
        traced.close()
    assert counts["memories"] == n
    assert kept(pg) == recount(pg)
    assert kept(pg)[("dst", "")] == n and kept(pg)[("dst", "topic3")] == len([i for i in range(n) if i % 7 == 3])
    assert sum(1 for s in statements if s.startswith("INSERT INTO memory_fts")) == 2  # two chunks, two statements
    # the last chunk's memories are found by the keyword leg
    found = pg.keyword_search("dst", [f"zebra{n - 1}"], 5, MemoryFilters(), later(2))
    assert len(found) == 1
