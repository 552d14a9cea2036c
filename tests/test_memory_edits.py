"""Pin, unpin, restore, metadata and expiry of one memory, on both backends: each is recorded in
the history, restore brings a memory back to search, and bad input is a ValidationError."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.errors import MemoryNotFoundError, ValidationError
from deepcontext.types import HistoryEvent, MemoryStatus


@pytest.fixture
async def ctx(db_url: str) -> AsyncIterator[DeepContext]:
    c = DeepContext(database_url=db_url, embedder=HashEmbedder(256))
    await c.init()
    try:
        yield c
    finally:
        await c.close()


async def _fact(ctx: DeepContext, text: str = "I play the cello in an orchestra.") -> int:
    r = await ctx.add([{"role": "user", "content": text}], user_id="maya")
    return r.memory_ids[-1]


async def test_pin_and_unpin_are_in_the_history_and_the_context(ctx: DeepContext) -> None:
    mid = await _fact(ctx)
    assert (await ctx.pin(mid, "maya")).pinned is True
    got = await ctx.context("anything at all about volcanoes", "maya")
    assert mid in [i.memory_id for i in got.part("pinned").items]
    assert (await ctx.unpin(mid, "maya")).pinned is False
    events = [(h.event, h.reason, h.details.get("pinned")) for h in await ctx.history(mid, "maya")]
    assert events[-2:] == [(HistoryEvent.UPDATE, "pinned", True), (HistoryEvent.UPDATE, "unpinned", False)]


async def test_a_pinned_memory_is_never_forgotten(db_url: str) -> None:
    from deepcontext.clock import ManualClock

    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock) as c:
        kept = await _fact(c, "I had toast for breakfast today.")
        faded = await _fact(c, "I had porridge for breakfast yesterday.")
        await c.pin(kept, "maya")
        clock.advance(days=3650)
        await c.run_lifecycle("maya")
        assert (await c.get(kept, "maya")).status is MemoryStatus.ACTIVE
        assert (await c.get(faded, "maya")).status is not MemoryStatus.ACTIVE
        # and a decayed memory can be restored
        assert (await c.restore(faded, "maya")).status is MemoryStatus.ACTIVE


async def test_restore_brings_a_deleted_memory_back_to_search(ctx: DeepContext) -> None:
    mid = await _fact(ctx)
    await ctx.delete(mid, "maya")
    assert mid not in [r.memory_id for r in (await ctx.search("cello orchestra", "maya")).results]
    mem = await ctx.restore(mid, "maya")
    assert mem.status is MemoryStatus.ACTIVE and mem.valid_to is None
    # the fact's tier alone: a search shows one memory per source turn, and the turn said it too
    for config in ("keyword", "vector"):
        found = await ctx.search("cello orchestra", "maya", config=config, tier="short_term")
        assert mid in [r.memory_id for r in found.results]
    last = (await ctx.history(mid, "maya"))[-1]
    assert last.event is HistoryEvent.RESTORE and last.details["status"] == {"old": "deleted", "new": "active"}
    with pytest.raises(ValidationError, match="only deleted or decayed"):
        await ctx.restore(mid, "maya")  # active already


async def test_a_superseded_memory_cannot_be_restored(ctx: DeepContext) -> None:
    await ctx.add([{"role": "user", "content": "I live in Leeds."}], user_id="maya")
    await ctx.add([{"role": "user", "content": "I moved to York."}], user_id="maya")
    page = await ctx.list("maya", include_inactive=True)
    old = [m for m in page.memories if m.status is MemoryStatus.SUPERSEDED]
    assert old
    with pytest.raises(ValidationError, match="superseded"):
        await ctx.restore(old[0].id, "maya")


async def test_metadata_and_expiry(ctx: DeepContext) -> None:
    mid = await _fact(ctx)
    text = (await ctx.get(mid, "maya")).text
    mem = await ctx.set_metadata(mid, "maya", {"source": "email", "n": 2})
    assert mem.metadata == {"source": "email", "n": 2} and mem.text == text
    when = datetime.now(UTC) + timedelta(days=7)
    assert (await ctx.set_expiry(mid, "maya", when)).expires_at == when.replace(microsecond=when.microsecond)
    assert (await ctx.set_expiry(mid, "maya", ttl=60)).expires_at is not None
    assert (await ctx.set_expiry(mid, "maya")).expires_at is None
    history = await ctx.history(mid, "maya")
    assert [h.reason for h in history[-4:]] == ["metadata changed", "expiry set", "expiry set", "expiry cleared"]
    assert history[-4].details["metadata"]["new"] == {"source": "email", "n": 2}


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c, m: c.set_metadata(m, "maya", ["not", "an", "object"]), "metadata"),
        (lambda c, m: c.set_metadata(m, "maya", {"x": float("nan")}), "metadata"),
        (lambda c, m: c.set_expiry(m, "maya", "2001-01-01T00:00:00Z"), "expires_at"),
        (lambda c, m: c.set_expiry(m, "maya", "soon"), "expires_at"),
        (lambda c, m: c.set_expiry(m, "maya", ttl=-5), "ttl"),
        (lambda c, m: c.pin(0, "maya"), "memory_id"),
        (lambda c, m: c.pin(m, ""), "user_id"),
    ],
)
async def test_bad_edits_are_validation_errors(ctx: DeepContext, call, field: str) -> None:  # noqa: ANN001
    mid = await _fact(ctx)
    with pytest.raises(ValidationError) as err:
        await call(ctx, mid)
    assert (err.value.field or "").split(".")[0] == field


async def test_edits_stay_with_their_user(ctx: DeepContext) -> None:
    mid = await _fact(ctx)
    for call in (
        ctx.pin(mid, "other"),
        ctx.restore(mid, "other"),
        ctx.set_metadata(mid, "other", {}),
        ctx.set_expiry(mid, "other"),
    ):
        with pytest.raises(MemoryNotFoundError):
            await call
    assert (await ctx.get(mid, "maya")).pinned is False


async def test_one_edit_changes_text_metadata_pin_and_expiry_in_one_entry(ctx: DeepContext) -> None:
    mid = await _fact(ctx)
    old = (await ctx.get(mid, "maya")).text
    before = len(await ctx.history(mid, "maya"))
    later = datetime.now(UTC) + timedelta(days=30)
    got = await ctx.edit(
        mid, "maya", text="I play the viola in a quartet.", metadata={"source": "call"}, pinned=True, expires_at=later
    )
    assert (got.text, got.metadata, got.pinned) == ("I play the viola in a quartet.", {"source": "call"}, True)
    assert got.expires_at is not None and abs((got.expires_at - later).total_seconds()) < 1
    history = await ctx.history(mid, "maya")
    assert len(history) == before + 1  # one change, one entry
    entry = history[-1]
    assert (entry.event, entry.old_text, entry.new_text) == (HistoryEvent.UPDATE, old, got.text)
    assert entry.details["pinned"] is True and entry.details["metadata"]["new"] == {"source": "call"}
    # the new text is what the keyword and vector legs find
    found = await ctx.search("viola quartet", "maya", limit=3)
    assert found.results and found.results[0].memory_id == mid
    cleared = await ctx.edit(mid, "maya", clear_expiry=True)
    assert cleared.expires_at is None and cleared.text == got.text and cleared.pinned is True


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"text": "a new text", "metadata": "not an object"}, "metadata"),
        ({"text": "a new text", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"text": "a new text", "pinned": "yes"}, "pinned"),
        ({"text": "   "}, "text"),
        ({"expires_at": "2999-01-01T00:00:00Z", "clear_expiry": True}, "expires_at"),
        ({}, "memory_id"),
    ],
)
async def test_an_edit_with_any_part_refused_changes_nothing(ctx: DeepContext, kwargs: dict, field: str) -> None:  # type: ignore[type-arg]
    mid = await _fact(ctx)
    old = await ctx.get(mid, "maya")
    before = len(await ctx.history(mid, "maya"))
    with pytest.raises(ValidationError) as err:
        await ctx.edit(mid, "maya", **kwargs)
    assert err.value.field == field
    mem = await ctx.get(mid, "maya")
    assert (mem.text, mem.pinned, mem.metadata, mem.expires_at) == (old.text, old.pinned, old.metadata, old.expires_at)
    assert len(await ctx.history(mid, "maya")) == before
