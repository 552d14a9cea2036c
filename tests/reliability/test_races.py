"""Adds racing user deletion: an add whose planned neighbours were deleted meanwhile still writes
(no link to the gone rows), and concurrent adds and delete_user never fail with a storage error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.errors import WriteConflictError
from deepcontext.store import Store
from tests.store_helpers import axis, memory, open_test_store, plan, rows_per_table, turn


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def test_add_planned_before_delete_user_still_writes(store: Store, db_url: str) -> None:
    first = plan("u", turns=[turn("I live in Porto")], memories=[memory("Lives in Porto", vec=axis(0), source_turn_indices=[0])])
    old = store.apply_add(first).memory_ids[0]
    # planned while the neighbour existed, applied after the user was deleted
    second = plan(
        "u",
        turns=[turn("I moved to Braga")],
        memories=[memory("Moved to Braga", vec=axis(0, tilt=1), source_turn_indices=[0], links=[(old, 0.9)])],
    )
    store.delete_user("u")
    out = store.apply_add(second)
    (new,) = out.memory_ids
    assert [m.text for m in store.get_memories("u", [new])] == ["Moved to Braga"]
    assert store.memory_links("u", [new]).get(new, []) == []
    assert rows_per_table(db_url, "u")["memory_links"] == 0


def test_adds_racing_delete_user_never_fail(db_url: str) -> None:
    async def run() -> None:
        async with DeepContext(database_url=db_url, embedder=HashEmbedder(64)) as ctx:
            failures: list[BaseException] = []
            conflicts = 0

            async def adder(i: int) -> None:
                nonlocal conflicts
                for j in range(6):
                    try:
                        await ctx.add([{"role": "user", "content": f"I visited city number {j} in Spain, trip {i}"}], user_id="u")
                    except WriteConflictError:
                        conflicts += 1  # allowed: a clear, retryable error
                    except Exception as exc:  # noqa: BLE001 - anything else is the defect
                        failures.append(exc)

            async def deleter() -> None:
                for _ in range(8):
                    await ctx.delete_user("u")
                    await asyncio.sleep(0.01)

            await asyncio.gather(*(adder(i) for i in range(3)), deleter())
            assert not failures, [f"{type(f).__name__}: {f}" for f in failures]
            assert conflicts < 18  # some adds went through

    asyncio.run(run())
