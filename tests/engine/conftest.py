"""Fixtures for engine tests: a DeepContext on a real database (SQLite file and PostgreSQL via the
root ``db_url`` fixture), the deterministic hash embedder and a manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def ctx(db_url: str, clock: ManualClock) -> AsyncIterator[DeepContext]:
    c = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock)
    await c.init()
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def sqlite_ctx(tmp_path, clock: ManualClock) -> AsyncIterator[DeepContext]:
    c = DeepContext(database_url=f"sqlite:///{tmp_path}/engine.db", embedder=HashEmbedder(256), clock=clock)
    await c.init()
    try:
        yield c
    finally:
        await c.close()
