"""The activity log through the Python API, on both backends: what is recorded and when, what a
record holds, retention, paging and filters, isolation, delete_user, export, and that a failure to
record never fails the call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from deepcontext import DeepContext
from deepcontext.clock import ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.errors import NotFoundError, ValidationError
from deepcontext.services.activity import calls_from

SAID = [
    {"role": "user", "content": "I live in Leeds and I teach maths at Parkside School."},
    {"role": "user", "content": "My sister Ana works as a nurse in Porto."},
    {"role": "user", "content": "I play the cello on weekends."},
]


async def _open(db_url: str, **settings: object) -> DeepContext:
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(256), **settings)
    await ctx.init()
    await ctx.add(SAID, user_id="maya")
    return ctx


@pytest.fixture
async def logged(db_url: str) -> AsyncIterator[DeepContext]:
    ctx = await _open(db_url, activity_log=True)
    try:
        yield ctx
    finally:
        await ctx.close()


async def test_the_library_records_nothing_by_default(db_url: str) -> None:
    ctx = await _open(db_url)
    try:
        await ctx.search("where do I live", "maya")
        await ctx.context("where do I live", "maya")
        await ctx.flush()
        assert (await ctx.activity("maya")).calls == []
        with calls_from("rest", "k1"):  # the server's calls are recorded unless the setting says no
            await ctx.search("cello", "maya")
        await ctx.flush()
        [call] = (await ctx.activity("maya")).calls
        assert (call.via, call.key_id, call.query) == ("rest", "k1", "cello")
    finally:
        await ctx.close()


async def test_switched_off_records_no_server_call_either(db_url: str) -> None:
    ctx = await _open(db_url, activity_log=False)
    try:
        with calls_from("mcp", "k1"):
            await ctx.search("cello", "maya")
        await ctx.flush()
        assert (await ctx.activity("maya")).calls == []
    finally:
        await ctx.close()


async def test_a_search_is_recorded_as_it_was_returned(logged: DeepContext) -> None:
    res = await logged.search("where does my sister work", "maya", limit=5, agent_id=None, include_superseded=True)
    assert res.results
    await logged.flush()
    [call] = (await logged.activity("maya")).calls
    assert (call.kind, call.via, call.query, call.user_id) == ("search", "python", "where does my sister work", "maya")
    assert call.params["limit"] == 5 and call.params["include_superseded"] is True
    assert [(h.memory_id, h.rank, h.text) for h in call.results] == [
        (r.memory_id, i, r.text) for i, r in enumerate(res.results, start=1)
    ]
    assert [h.score for h in call.results] == pytest.approx([r.score for r in res.results])
    assert [h.legs for h in call.results] == [r.legs for r in res.results]
    assert call.took_ms == pytest.approx(res.took_ms)
    # the record keeps the text the memory had then, whatever happens to it later
    first = res.results[0]
    await logged.update(first.memory_id, "Something else entirely.", "maya")
    again = await logged.activity_call("maya", call.id)
    assert again.results[0].text == first.text


async def test_a_context_records_what_it_included_and_left_out(logged: DeepContext) -> None:
    res = await logged.context("what do I play", "maya", budget_tokens=40, agent_id="coach")
    await logged.flush()
    [call] = (await logged.activity("maya", kind="context")).calls
    assert call.agent_id == "coach" and call.params["budget_tokens"] == 40
    assert [(i.id, i.part, i.text) for i in call.included] == [(i.id, i.part, i.text) for i in res.items]
    assert [(o.id, o.cause) for o in call.left_out] == [(o.id, o.cause) for o in res.left_out]
    assert call.total_tokens == res.total_tokens


async def test_filters_and_pages(logged: DeepContext) -> None:
    for i in range(5):
        await logged.search(f"cello {i}", "maya", agent_id="a" if i % 2 else "b")
    await logged.context("cello", "maya", run_id="r1")
    await logged.flush()
    everything = (await logged.activity("maya", limit=100)).calls
    assert [c.query for c in everything] == ["cello", "cello 4", "cello 3", "cello 2", "cello 1", "cello 0"]
    assert [c.query for c in (await logged.activity("maya", agent_id="a")).calls] == ["cello 3", "cello 1"]
    assert [c.query for c in (await logged.activity("maya", run_id="r1")).calls] == ["cello"]
    assert len((await logged.activity("maya", kind="search")).calls) == 5
    seen, cursor = [], None
    while True:
        page = await logged.activity("maya", limit=2, cursor=cursor)
        seen += [c.id for c in page.calls]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [c.id for c in everything]
    future = datetime.now(UTC) + timedelta(days=1)
    assert (await logged.activity("maya", after=future)).calls == []
    assert len((await logged.activity("maya", before=future)).calls) == 6


async def test_retention_keeps_the_newest_calls_by_count_and_age(db_url: str) -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    ctx = DeepContext(
        database_url=db_url, embedder=HashEmbedder(256), clock=clock, activity_log=True, activity_max_calls=3,
        activity_max_age_days=10,
    )  # fmt: skip
    try:
        await ctx.init()
        await ctx.add(SAID, user_id="maya")
        for q in ("one", "two", "three", "four", "five"):
            await ctx.search(q, "maya")
            await ctx.flush()
        assert [c.query for c in (await ctx.activity("maya")).calls] == ["five", "four", "three"]
        clock.advance(days=11)
        await ctx.search("six", "maya")
        await ctx.flush()
        assert [c.query for c in (await ctx.activity("maya")).calls] == ["six"]
        counts = await ctx.stats("maya")
        assert counts["activity"] == 1 and counts["activity_hits"] <= 10
    finally:
        await ctx.close()


async def test_calls_stay_with_their_user(logged: DeepContext) -> None:
    await logged.add([{"role": "user", "content": "I live in Oslo."}], user_id="other")
    await logged.search("where do I live", "maya")
    await logged.flush()
    [call] = (await logged.activity("maya")).calls
    assert (await logged.activity("other")).calls == []
    with pytest.raises(NotFoundError):
        await logged.activity_call("other", call.id)
    with pytest.raises(NotFoundError):
        await logged.activity_call("maya", call.id + 1000)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"kind": "add"}, "kind"), ({"via": "smoke"}, "via"), ({"limit": 0}, "limit"), ({"limit": 201}, "limit"),
     ({"cursor": "not-a-cursor"}, "cursor"), ({"after": "yesterday-ish"}, "after"), ({"agent_id": ""}, "agent_id")],
)  # fmt: skip
async def test_bad_filters_are_validation_errors(logged: DeepContext, kwargs: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValidationError) as err:
        await logged.activity("maya", **kwargs)
    assert err.value.field == field


async def test_the_inspectors_previews_are_never_recorded(logged: DeepContext) -> None:
    with calls_from("inspector"):
        await logged.search("cello", "maya")
        await logged.context("cello", "maya")
    await logged.flush()
    assert (await logged.activity("maya")).calls == []


async def test_delete_user_deletes_the_log(logged: DeepContext) -> None:
    await logged.search("cello", "maya")  # still queued when delete_user starts
    await logged.delete_user("maya")
    await logged.flush()
    counts = await logged.stats("maya")
    assert counts["activity"] == 0 and counts["activity_hits"] == 0


async def test_export_holds_the_log_and_import_leaves_it_out(logged: DeepContext) -> None:
    await logged.search("cello", "maya")
    await logged.flush()
    records = [r async for r in logged.export("maya")]
    [call] = [r for r in records if r["record"] == "activity"]
    assert call["query"] == "cello" and call["details"]["results"]
    counts = await logged.import_records(records, user_id="copy")
    assert "activity" not in counts
    assert (await logged.activity("copy")).calls == []
    assert (await logged.stats("copy"))["memories"] == (await logged.stats("maya"))["memories"]


async def test_a_failure_to_record_never_fails_the_call(logged: DeepContext, caplog: pytest.LogCaptureFixture) -> None:
    engine = logged.store.engine  # type: ignore[attr-defined]
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE activity_hits"))
        conn.execute(text("DROP TABLE activity"))
    with caplog.at_level(logging.WARNING, logger="deepcontext"):
        res = await logged.search("where do I live", "maya")
        got = await logged.context("where do I live", "maya")
        await logged.flush()
    assert res.results and got.text
    assert any("background" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records)
