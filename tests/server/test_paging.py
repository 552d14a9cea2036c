"""List responses are capped by bytes as well as by count (max_response_bytes), and their cursors
continue to the end without losing or repeating an item; listing a tenant's users reads only that
tenant's range of the users index."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from tests.server.helpers import Api, running

CAP = 4096


@pytest.fixture
async def capped(db_url: str) -> AsyncIterator[Api]:
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(64), max_response_bytes=CAP)
    app = create_app(ctx)
    try:
        async with running(app):
            yield Api(app, ctx)
    finally:
        await ctx.close()


def said(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"Note {i}: the {i}th shelf holds " + "old atlases and maps " * 8}


async def test_memories_cut_by_bytes_and_the_cursor_reaches_the_end(capped: Api) -> None:
    key = capped.key("acme")
    async with capped.client(key) as c:
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": [said(i) for i in range(24)]})
        assert r.status_code == 201, r.text
        pages: list[dict[str, Any]] = []
        params: dict[str, Any] = {"user_id": "ana", "limit": 1000}
        while True:
            r = await c.get("/v1/memories", params=params)
            assert r.status_code == 200, r.text
            assert len(r.content) <= CAP
            pages.append(r.json())
            if r.json()["next_cursor"] is None:
                break
            params["cursor"] = r.json()["next_cursor"]
        ids = [m["id"] for p in pages for m in p["memories"]]
        total = pages[0]["total"]
        assert total >= 24 and len(pages) > 2  # the cap, not the limit, ended the pages
        assert len(ids) == len(set(ids)) == total and ids == sorted(ids, reverse=True)
        assert all(m["user_id"] == "ana" for p in pages for m in p["memories"])
        # a limit under the cap ends the page too, with the same cursor
        r = await c.get("/v1/memories", params={"user_id": "ana", "limit": 1})
        assert [m["id"] for m in r.json()["memories"]] == ids[:1]
        r = await c.get("/v1/memories", params={"user_id": "ana", "limit": 2, "cursor": r.json()["next_cursor"]})
        assert [m["id"] for m in r.json()["memories"]] == ids[1:3] and r.json()["next_cursor"]


async def test_turns_cut_by_bytes_page_back_through_the_conversation(capped: Api) -> None:
    key = capped.key("acme")
    async with capped.client(key) as c:
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": [said(i) for i in range(30)], "infer": False})
        assert r.status_code == 201, r.text
        seen: list[int] = []
        pages = 0
        url = "/v1/turns?user_id=ana&limit=1000"
        while url:
            r = await c.get(url)
            assert r.status_code == 200, r.text
            assert len(r.content) <= CAP
            page = [t["id"] for t in r.json()]
            assert page == sorted(page) and all(t["user_id"] == "ana" for t in r.json())
            seen = page + seen  # each page is older than the one before
            pages += 1
            link = r.headers.get("link")
            assert (link is None) == ("x-next-cursor" not in r.headers)
            url = link.split(";")[0].strip("<>") if link else ""
        assert pages > 2 and len(seen) == len(set(seen)) == 30 and seen == sorted(seen)
        # without a byte cut, a full page says whether older turns remain
        r = await c.get("/v1/turns", params={"user_id": "ana", "limit": 3})
        assert [t["id"] for t in r.json()] == seen[-3:]
        r2 = await c.get("/v1/turns", params={"user_id": "ana", "limit": 3, "cursor": r.headers["x-next-cursor"]})
        assert [t["id"] for t in r2.json()] == seen[-6:-3]
        bad = await c.get("/v1/turns", params={"user_id": "ana", "cursor": "nonsense"})
        assert bad.status_code == 400 and "cursor" in bad.text


async def test_users_page_within_the_tenant(capped: Api) -> None:
    ours = [f"user-{i:03d}-" + "x" * 150 for i in range(40)]
    for u in ours:
        await capped.ctx.set_user(f"acme/{u}", name="Ana")
    for u in ("user-000", "zed", "a"):  # other tenants, before and after acme in byte order
        await capped.ctx.set_user(f"acma/{u}", name="Bo")
        await capped.ctx.set_user(f"acme0/{u}", name="Bo")
        await capped.ctx.set_user(f"acme.x/{u}", name="Bo")
    async with capped.client(capped.key("acme")) as c:
        got: list[str] = []
        pages = 0
        params: dict[str, Any] = {}
        while True:
            r = await c.get("/v1/users", params=params)
            assert r.status_code == 200 and len(r.content) <= CAP, r.text[:300]
            got += r.json()["users"]
            pages += 1
            if r.json()["next_cursor"] is None:
                break
            params["cursor"] = r.json()["next_cursor"]
        assert pages > 1 and got == sorted(ours)
        r = await c.get("/v1/users", params={"limit": 7})
        assert r.json()["users"] == sorted(ours)[:7]
        r = await c.get("/v1/users", params={"limit": 7, "cursor": r.json()["next_cursor"]})
        assert r.json()["users"] == sorted(ours)[7:14]
    # a key limited to some users pages over those only
    some = sorted(ours)[::9]
    async with capped.client(capped.key("acme", users=some)) as c:
        r = await c.get("/v1/users", params={"limit": 2})
        got = r.json()["users"]
        while r.json()["next_cursor"]:
            r = await c.get("/v1/users", params={"limit": 2, "cursor": r.json()["next_cursor"]})
            got += r.json()["users"]
        assert got == some


async def test_listing_a_tenants_users_reads_its_range_of_the_index(db_url: str, caplog: pytest.LogCaptureFixture) -> None:
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(64), debug=True)
    app = create_app(ctx)
    try:
        async with running(app):
            api = Api(app, ctx)
            await ctx.set_user("acme/ana", name="Ana")
            await ctx.set_user("other/bo", name="Bo")
            async with api.client(api.key("acme")) as c:
                caplog.clear()
                with caplog.at_level(logging.DEBUG, logger="deepcontext"):
                    assert (await c.get("/v1/users")).json()["users"] == ["ana"]
            statement, params = next(
                rec.args
                for rec in caplog.records
                if isinstance(rec.args, tuple) and len(rec.args) == 2 and "FROM users" in str(rec.args[0])
            )
            plan = explain(ctx, str(statement), params)
    finally:
        await ctx.close()
    if db_url.startswith("sqlite"):
        assert plan.startswith("SEARCH users") and "user_id>? AND user_id<?" in plan, plan
    else:
        assert "ix_users_user_c" in plan and "Index Cond" in plan, plan


def explain(ctx: DeepContext, statement: str, params: Any) -> str:
    """The plan of a statement the store ran (PostgreSQL: whether an index can answer it at all,
    with sequential scans off, as the tables here are tiny)."""
    with ctx.store.engine.connect() as conn:  # type: ignore[attr-defined]
        if conn.dialect.name == "sqlite":
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, tuple(params))
            return " | ".join(str(r[3]) for r in rows)
        conn.exec_driver_sql("SET enable_seqscan = off")
        return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, params))
