"""Fixtures of the context tests: a DeepContext on a real database (SQLite file and PostgreSQL via
the root ``db_url`` fixture), the deterministic hash embedder and a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from deepcontext import DeepContext, ManualClock
from tests.context.helpers import T0, open_ctx


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def ctx(db_url: str, clock: ManualClock) -> AsyncIterator[DeepContext]:
    c = open_ctx(db_url, clock)
    await c.init()
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def sqlite_ctx(tmp_path, clock: ManualClock) -> AsyncIterator[DeepContext]:
    c = open_ctx(f"sqlite:///{tmp_path}/context.db", clock)
    await c.init()
    try:
        yield c
    finally:
        await c.close()
