"""Fixtures of the lifecycle tests: a DeepContext on a real database (SQLite and PostgreSQL through the
root ``db_url`` fixture), the hash embedder, a manual clock, the scripted extractor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from tests.lifecycle.helpers import ScriptedExtractor
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def make_ctx(db_url: str, clock: ManualClock) -> AsyncIterator[Callable[..., Any]]:
    """Open DeepContexts on the test database (offline unless LLM settings are given); all closed
    at the end. Auto-consolidation is off unless asked for."""
    made: list[DeepContext] = []

    async def make(**kw: Any) -> DeepContext:
        kw.setdefault("embedder", HashEmbedder(256))
        kw.setdefault("clock", clock)
        kw.setdefault("extractor", ScriptedExtractor())
        kw.setdefault("auto_consolidate", False)
        kw.setdefault("llm_provider", "none")
        c = DeepContext(database_url=db_url, **kw)
        await c.init()
        made.append(c)
        return c

    yield make
    for c in made:
        await c.close()


@pytest.fixture
async def ctx(make_ctx: Callable[..., Any]) -> DeepContext:
    return await make_ctx()
