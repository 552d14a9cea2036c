"""SQLite's plans for what every add and search runs: a lookup of rows by id goes through the
primary key, never through a user_id index (that reads all of the user's rows), the user's name
comes from the partial index of named turns, and a result's best links from the links' similarity
index. Checked with EXPLAIN QUERY PLAN on the statements the store ran, on a database without
statistics (as a new one is)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deepcontext.settings import DeepContextSettings
from deepcontext.store import Store, open_store
from deepcontext.types import HistoryEvent
from tests.store_helpers import DIM, later, memory, plan, turn

#: user_id indexes that a lookup by id must not scan
USER_INDEXES = ("ix_turns_user_conv", "ix_memories_user_status")


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[Store, list[tuple[str, Any]]]]:
    seen: list[tuple[str, Any]] = []
    settings = DeepContextSettings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'plans.db'}")  # type: ignore[call-arg]
    store = open_store(settings, DIM, tracer=lambda s, p: seen.append((s, p)))
    store.migrate()
    try:
        yield store, seen
    finally:
        store.close()


def plans(store: Store, statements: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """(statement, its plan in one line) for each single-row-set statement."""
    out = []
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        for s, p in statements:
            if isinstance(p, list) or not s.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE")):
                continue
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + s, tuple(p) if p else ())
            out.append((s, " | ".join(str(r[3]) for r in rows)))
    return out


def fill(store: Store, turns: int = 60) -> list[int]:
    """A conversation of named user turns and assistant replies, each kept as a verbatim memory."""
    msgs = [
        turn(f"line {i} about the garden", role="user" if i % 2 == 0 else "assistant", name="Maya" if i % 2 == 0 else None)
        for i in range(turns)
    ]
    mems = [memory(f"line {i} about the garden", source="turn", source_turn_indices=[i]) for i in range(turns)]
    return store.apply_add(plan("u", turns=msgs, memories=mems)).turn_ids


def test_an_add_looks_turns_up_by_primary_key(traced: tuple[Store, list[tuple[str, Any]]]) -> None:
    store, seen = traced
    fill(store)
    seen.clear()
    # the next add indexes each verbatim memory with the turns before it (keyword context)
    more = [turn(f"more {i} on the roses", name="Maya") for i in range(5)]
    store.apply_add(
        plan(
            "u",
            turns=more,
            memories=[memory(f"more {i} on the roses", source="turn", source_turn_indices=[i]) for i in range(5)],
            now=later(1),
        )
    )
    by_id = [(s, p) for s, p in plans(store, list(seen)) if "turns.id IN" in s or "turns.id IN" in s.replace('"', "")]
    assert by_id, "the add read turns by id"
    for s, p in by_id:
        assert not any(f"INDEX {ix} (user_id=?)" in p for ix in USER_INDEXES), (s, p)


def test_a_replaced_fact_outdates_its_turns_by_primary_key(traced: tuple[Store, list[tuple[str, Any]]]) -> None:
    store, seen = traced
    first = store.apply_add(
        plan("u", turns=[turn("I live in Madrid.")], memories=[
            memory("I live in Madrid.", source="turn", source_turn_indices=[0]),
            memory("User lives in Madrid.", source_turn_indices=[0]),
        ])
    )  # fmt: skip
    fill(store)
    old_fact = first.memory_ids[1]
    seen.clear()
    store.apply_add(
        plan("u", turns=[turn("We moved to Porto.")], now=later(5), memories=[
            memory("User lives in Porto.", source_turn_indices=[0], supersedes=old_fact, event=HistoryEvent.REPLACE),
        ])
    )  # fmt: skip
    outdating = [
        (s, p)
        for s, p in plans(store, list(seen))
        if s.lstrip().startswith("UPDATE memories") and "valid_to" in s and "memory_sources" in s
    ]
    assert outdating, "the replace outdated the old fact's turns"
    for s, p in outdating:
        assert not any(f"INDEX {ix} (user_id=?" in p for ix in USER_INDEXES), (s, p)
    madrid_turn = store.get_memories("u", [first.memory_ids[0]])[0]
    assert madrid_turn.valid_to is not None  # the statement did its work


def test_the_users_name_comes_from_the_named_turns_index(traced: tuple[Store, list[tuple[str, Any]]]) -> None:
    store, seen = traced
    fill(store)
    seen.clear()
    assert store.user_name("u") == "Maya"
    named = [(s, p) for s, p in plans(store, list(seen)) if "FROM turns" in s]
    assert named and all("ix_turns_user_named" in p for _, p in named), named
    assert store.user_name("nobody") is None


def test_a_results_links_are_read_best_first_from_their_index(traced: tuple[Store, list[tuple[str, Any]]]) -> None:
    store, seen = traced
    from tests.store_helpers import axis

    hub = store.apply_add(plan("u", memories=[memory("the garden hub", vec=axis(0))])).memory_ids[0]
    # many links to one memory: reading them all and sorting is what the index spares
    store.apply_add(
        plan(
            "u",
            now=later(1),
            memories=[memory(f"garden note {i}", vec=axis(0, tilt=1), links=[(hub, 0.5 + i / 100)]) for i in range(40)],
        )
    )
    seen.clear()
    links = store.memory_links("u", [hub], 5)
    assert len(links[hub]) == 5
    ((sql, params),) = [(s, p) for s, p in seen if "memory_links" in s]
    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        plan_ = " | ".join(str(r[3]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, tuple(params)))
    assert "ix_memory_links_best" in plan_ and "TEMP B-TREE" not in plan_, plan_
