"""Times hold to one range, years 1 to 9998 (UTC), at every entry: a time at the very end of year
9999 (which a float of epoch seconds rounds into year 10000) is refused by the Python API, the
CLI, bulk input, import and REST alike; and a time already stored outside it (an older or crafted
database) does not break the reads of its user."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepcontext import DeepContext, ValidationError
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from tests.server.helpers import Api, running
from tests.support.cli import run_cli

MSG = [{"role": "user", "name": "Ana", "content": "I work at Globex in Porto"}]
#: the last microseconds of year 9999: as epoch seconds they round to 253402300800.0, year 10000
END_OF_9999 = datetime(9999, 12, 31, 23, 59, 59, 999990, tzinfo=UTC)
#: what such a time became when it was stored
YEAR_10000 = 253402300800.0

ENTRIES: dict[str, dict[str, Any]] = {
    "timestamp": {"timestamp": END_OF_9999},
    "timestamp as ISO": {"timestamp": END_OF_9999.isoformat()},
    "timestamp as epoch seconds": {"timestamp": YEAR_10000 - 0.00001},
    "naive timestamp": {"timestamp": END_OF_9999.replace(tzinfo=None)},
    "year 9999 west of UTC": {"timestamp": datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-14)))},
    "year 1 east of UTC": {"timestamp": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14)))},
    "expires_at=datetime.max": {"expires_at": datetime.max},
    "message timestamp": {"messages": [{**MSG[0], "timestamp": END_OF_9999.isoformat()}]},
}


@pytest.mark.parametrize("case", list(ENTRIES))
async def test_times_past_the_range_are_refused(tmp_path: Path, case: str) -> None:
    kw = dict(ENTRIES[case])
    messages = kw.pop("messages", MSG)
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        with pytest.raises(ValidationError) as err:
            await ctx.add(messages, user_id="u", **kw)
        assert err.value.field in ("timestamp", "expires_at", "messages[0].timestamp")
        assert "9998" in str(err.value)
        assert await ctx.users() == []


async def test_the_range_edges_are_accepted_and_read_back(tmp_path: Path) -> None:
    first, last = datetime(1, 1, 1, tzinfo=UTC), datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{**MSG[0], "content": "I was born yesterday and move to Lisbon next year"}], user_id="a", timestamp=first)
        await ctx.add([{**MSG[0], "content": "Tomorrow I fly to Rome; next year I retire"}], user_id="b", timestamp=last)
        for user, when in (("a", first), ("b", last)):
            said = {t.said_at for t in await ctx.turns(user)}
            assert said and all(abs(s - when) < timedelta(milliseconds=1) for s in said), said
            assert (await ctx.search("When do I retire or move?", user_id=user)).results
            await ctx.run_lifecycle(user, consolidate=True)


def test_cli_and_bulk_input_refuse_a_time_past_the_range(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/m.db"
    p = run_cli(["--db", db, "--embedder", "hash", "add", "-u", "u", "--timestamp", END_OF_9999.isoformat()],
                stdin=json.dumps(MSG))  # fmt: skip
    assert p.returncode != 0 and "Traceback" not in p.stderr + p.stdout
    assert "9998" in p.stderr + p.stdout
    lines = "\n".join(json.dumps({**m, "timestamp": YEAR_10000 - 0.00001}) for m in MSG)
    p = run_cli(["--db", db, "--embedder", "hash", "add", "-u", "u"], stdin=lines)
    assert p.returncode != 0 and "Traceback" not in p.stderr + p.stdout
    assert "9998" in p.stderr + p.stdout


async def test_import_refuses_a_time_past_the_range(tmp_path: Path) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add(MSG, user_id="u")
        records = [r async for r in ctx.export("u")]
        for bad in (END_OF_9999.isoformat(), "0001-01-01T00:00:00+14:00", ["2024-01-01"], 10**20):
            crafted = [dict(r, said_at=bad) if r["record"] == "turns" else r for r in records]
            with pytest.raises(ValidationError) as err:
                await ctx.import_records(crafted, user_id="v")
            assert err.value.field == "turns.said_at"
        assert "v" not in await ctx.users()


def _write_year_10000(db: Path, user: str) -> int:
    """Every time of one fact (short-term memory) and one turn of ``user`` (and the user's conversation) set to what
    a time at the end of year 9999 was stored as, straight into the file, as an older version of
    deepcontext left it; returns the memory's id."""
    with sqlite3.connect(db) as conn:
        mid = conn.execute("SELECT min(id) FROM memories WHERE user_id = ? AND tier = 'short_term'", (user,)).fetchone()[0]
        tid = conn.execute("SELECT min(id) FROM turns WHERE user_id = ?", (user,)).fetchone()[0]
        t = YEAR_10000
        conn.execute(
            "UPDATE memories SET said_at = ?, occurred_at = ?, valid_from = ?, expires_at = ?, reinforced_at = ?, "
            "created_at = ?, updated_at = ?, last_accessed_at = ? WHERE id = ?",
            (t, t, t, t, t, t, t, t, mid),
        )
        conn.execute("UPDATE turns SET said_at = ?, created_at = ? WHERE id = ?", (t, t, tid))
        conn.execute("UPDATE conversations SET updated_at = ? WHERE user_id = ?", (t, user))
    return int(mid)


async def test_a_stored_time_past_year_9999_does_not_break_its_user(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "m.db"
    async with DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(64)) as ctx:
        await ctx.add(MSG, user_id="u")
        await ctx.add([{"role": "user", "content": "My sister Eva lives in Braga"}], user_id="u")
    mid = _write_year_10000(db, "u")
    caplog.set_level(logging.WARNING, logger="deepcontext")
    async with DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(64)) as ctx:
        found = await ctx.search("Where does Ana work?", user_id="u", limit=20)
        assert mid in {r.memory_id for r in found.results}
        page = await ctx.list("u", limit=100)
        assert mid in {m.id for m in page.memories}
        assert (await ctx.get(mid, "u")).said_at.year == 9998  # the nearest time in range
        assert await ctx.turns("u")
        assert (await ctx.context("Where does Ana live?", user_id="u")).text
        records = [r async for r in ctx.export("u")]
        assert any(r["record"] == "memories" and r["id"] == mid for r in records)
        await ctx.run_lifecycle("u", consolidate=True)
        await ctx.add([{"role": "user", "content": "I also work at Initech"}], user_id="u")
        assert (await ctx.import_records(records, user_id="copy"))["memories"] >= 1  # the export re-imports
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "year" in r.getMessage()]
    assert warnings, "a time out of range is read with a warning"


# --- REST: the same rule (epoch seconds, never milliseconds) and the same range; a 422 outside it


@asynccontextmanager
async def rest(db: Path) -> AsyncIterator[tuple[Api, httpx.AsyncClient]]:
    ctx = DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(64))
    app = create_app(ctx)
    try:
        async with running(app):
            api = Api(app, ctx)
            async with api.client(api.key("acme")) as client:
                yield api, client
    finally:
        await ctx.close()


@pytest.mark.parametrize(
    ("timestamp", "said"),
    [
        (1_700_000_000, "2023-11-14T22:13:20+00:00"),
        (1_700_000_000.5, "2023-11-14T22:13:20.500000+00:00"),
        ("1700000000", "2023-11-14T22:13:20+00:00"),
        (30_000_000_000, "2920-08-30T05:20:00+00:00"),  # seconds, as the library reads it (not 1970)
        ("2023-11-14T23:13:20+01:00", "2023-11-14T22:13:20+00:00"),
    ],
)
async def test_rest_reads_numeric_times_as_epoch_seconds_like_the_library(tmp_path: Path, timestamp: Any, said: str) -> None:
    async with rest(tmp_path / "m.db") as (api, client):
        r = await client.post("/v1/memories", json={"user_id": "u", "messages": MSG, "timestamp": timestamp})
        assert r.status_code == 201, r.text
        turns = (await client.get("/v1/turns", params={"user_id": "u"})).json()
        expected = (await api.ctx.turns("acme/u"))[0].said_at
        assert expected.isoformat() == said
        await api.ctx.add(MSG, "acme/lib", timestamp=timestamp)  # the library, given the same value
        assert (await api.ctx.turns("acme/lib"))[0].said_at == expected
        assert turns


@pytest.mark.parametrize(
    "timestamp",
    [253_402_300_800, YEAR_10000 - 0.00001, 1e300, END_OF_9999.isoformat(), "0001-01-01T00:00:00+14:00", "soon", True],
)
async def test_rest_answers_422_for_a_time_out_of_range(tmp_path: Path, timestamp: Any) -> None:
    async with rest(tmp_path / "m.db") as (api, client):
        for body in (
            {"user_id": "u", "messages": MSG, "timestamp": timestamp},
            {"user_id": "u", "messages": [{**MSG[0], "timestamp": timestamp}]},
            {"user_id": "u", "messages": MSG, "expires_at": timestamp},
        ):
            r = await client.post("/v1/memories", json=body)
            assert r.status_code == 422, r.text
        r = await client.post("/v1/search", json={"user_id": "u", "query": "Porto", "before": timestamp})
        assert r.status_code == 422, r.text
        r = await client.get("/v1/memories", params={"user_id": "u", "after": str(timestamp)})
        assert r.status_code == 422, r.text
        assert await api.ctx.users() == []


async def test_rest_and_the_inspector_survive_a_stored_time_past_year_9999(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    async with DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(64)) as ctx:
        await ctx.add(MSG, user_id="acme/u")
    mid = _write_year_10000(db, "acme/u")
    async with rest(db) as (api, client):
        for r in (
            await client.post("/v1/search", json={"user_id": "u", "query": "Where does Ana live?"}),
            await client.post("/v1/context", json={"user_id": "u", "query": "Where does Ana live?"}),
            await client.get("/v1/memories", params={"user_id": "u"}),
            await client.get(f"/v1/memories/{mid}", params={"user_id": "u"}),
            await client.get("/v1/turns", params={"user_id": "u"}),
            await client.post("/v1/lifecycle/run", json={"user_id": "u"}),
        ):
            assert r.status_code == 200, (r.request.url, r.text)
        key = api.key("acme")
        async with api.client() as ui:
            token = re.search(r'name="csrf" value="([^"]+)"', (await ui.get("/ui/login")).text).group(1)  # type: ignore[union-attr]
            assert (await ui.post("/ui/login", data={"key": key, "csrf": token})).status_code == 303
            for path in ("/ui/", "/ui/memories", f"/ui/memory/{mid}", "/ui/lifecycle", "/ui/conversations", "/ui/graph"):
                r = await ui.get(path, params={"user": "u"})
                assert r.status_code == 200, (path, r.status_code)


async def test_postgres_reads_the_range_edges_whatever_the_server_time_zone(pg_url: str) -> None:
    # a session west of UTC would show 0001-01-01T00:00Z as a time of year 0, which psycopg cannot load
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE \"{conn.info.dbname}\" SET timezone = 'America/New_York'")
    first, last = datetime(1, 1, 1, tzinfo=UTC), datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(64)) as ctx:
        for user, when in (("a", first), ("b", last)):
            await ctx.add(MSG, user, timestamp=when)
            assert [t.said_at for t in await ctx.turns(user)] == [when]
            assert (await ctx.search("Where does Ana live?", user_id=user)).results
            assert [r async for r in ctx.export(user)]


async def test_bench_reliability_reports_the_times_scenario(tmp_path: Path) -> None:
    from deepcontext_bench.reliability_times import run_times

    out = await run_times(f"sqlite:///{tmp_path}/bench.db")
    assert out.tried >= 18  # every entry, the two CLI inputs, every read of the stored row
    assert (out.failed, out.lost, out.server_errors) == (0, 0, 0), out.notes
