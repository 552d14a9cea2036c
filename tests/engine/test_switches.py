"""A change that names no old thing ("Upgraded to an iPhone 15 Pro") replaces the user's standing
fact of the same kind, told by the default embedder with its fitted threshold: never a fact of
another kind, another person's, one said later, or a compound statement (what else it says still
holds). With an embedder that has no fitted threshold such changes replace nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.embed.minilm import MiniLMEmbedder
from deepcontext.types import MemoryStatus
from tests.engine.test_knowledge_updates import facts, say


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture
async def mctx(db_url: str, clock: ManualClock, minilm: MiniLMEmbedder) -> AsyncIterator[DeepContext]:
    c = DeepContext(database_url=db_url, embedder=minilm, clock=clock)
    await c.init()
    try:
        yield c
    finally:
        await c.close()


def _status(by_text: dict[str, object], needle: str) -> MemoryStatus:
    found = [m for t, m in by_text.items() if needle in t and not t.startswith("User:")]
    assert len(found) == 1, (needle, list(by_text))
    return found[0].status  # type: ignore[attr-defined]


async def test_an_upgrade_replaces_the_thing_of_its_kind_only(mctx: DeepContext) -> None:
    await say(mctx, "I'm on an iPhone 12 at the moment.", 0, filler=4)
    await say(mctx, "I drive a VW Golf.", 1, filler=4)
    await say(mctx, "Upgraded to an iPhone 15 Pro last week.", 30, filler=4)
    by_text = await facts(mctx)
    assert _status(by_text, "iPhone 12") is MemoryStatus.SUPERSEDED
    assert _status(by_text, "VW Golf") is MemoryStatus.ACTIVE
    new = [m for t, m in by_text.items() if t == "The user is on an iPhone 15 Pro."]
    assert new and new[0].is_active  # type: ignore[attr-defined]
    old = next(m for t, m in by_text.items() if "iPhone 12" in t and not t.startswith("User:"))
    assert old.superseded_by == new[0].id  # type: ignore[attr-defined]
    hist = await mctx.history(old.id, "ana")  # type: ignore[attr-defined]
    assert any("iPhone 15 Pro" in (h.reason or "") for h in hist)


async def test_a_state_said_as_now_replaces_the_old_one(mctx: DeepContext) -> None:
    await say(mctx, "I use Chrome for browsing.", 0, filler=4)
    await say(mctx, "I bank with Lloyds.", 1, filler=4)
    await say(mctx, "I use Firefox these days.", 30, filler=4)
    by_text = await facts(mctx)
    assert _status(by_text, "Chrome") is MemoryStatus.SUPERSEDED
    assert _status(by_text, "Lloyds") is MemoryStatus.ACTIVE
    assert _status(by_text, "Firefox") is MemoryStatus.ACTIVE


async def test_another_kind_another_person_or_a_compound_fact_is_not_replaced(mctx: DeepContext) -> None:
    await say(mctx, "I'm on an iPhone 12 at the moment.", 0, filler=4)
    await say(mctx, "Switched to oat milk in my coffee.", 30, filler=4)
    await say(mctx, "My sister switched to an iPhone 15.", 31, filler=4)
    by_text = await facts(mctx)
    assert _status(by_text, "iPhone 12") is MemoryStatus.ACTIVE
    await say(mctx, "I use Chrome for browsing, and Notion for all my notes.", 0, user="both", filler=4)
    await say(mctx, "I use Firefox these days.", 30, user="both", filler=4)
    assert all(m.is_active for t, m in (await facts(mctx, "both")).items() if "Notion" in t)  # type: ignore[attr-defined]


async def test_without_a_fitted_threshold_no_such_change_replaces_anything(db_url: str, clock: ManualClock) -> None:
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock) as ctx:
        await say(ctx, "I use Chrome for browsing.", 0, filler=2)
        await say(ctx, "I use Firefox these days.", 30, filler=2)
        assert _status(await facts(ctx), "Chrome") is MemoryStatus.ACTIVE
