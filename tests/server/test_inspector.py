"""The web inspector over httpx (the browser walk-through is test_inspector_browser.py): every page
needs a key (or loopback with auth off), keys stay in an HttpOnly cookie, tenants and user lists
hold, read-only keys get no write controls and their writes are refused, writes need the CSRF
token, user text is escaped, and pages show what the API returns."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import pytest

from deepcontext import DeepContext
from deepcontext.clock import ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from deepcontext.server.inspector.data import lifecycle_preview
from deepcontext.server.inspector.svg import dag_layout, force_layout
from tests.server.helpers import ROOT, Api, cli_env, flat_routes, running

EVIL = '<script>alert("x")</script> and "><img src=x onerror=alert(1)>'


def ui_routes(app) -> list[tuple[str, str]]:
    mount = next(r for r in app.routes if getattr(r, "path", None) == "/ui")
    return [(m, p) for p, methods, _ in flat_routes(mount.app) for m in sorted(methods) if m != "HEAD"]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


@asynccontextmanager
async def browser(api: Api, key: str | None = None, **kw) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A client that keeps cookies, signed in with ``key``; yields it and its CSRF token."""
    async with api.client(**kw) as c:
        page = await c.get("/ui/login")
        token = csrf_of(page.text)
        if key is not None:
            r = await c.post("/ui/login", data={"key": key, "csrf": token})
            assert r.status_code == 303, r.text
        yield c, token


async def add(api: Api, user: str, text: str, conversation: str = "c1") -> list[int]:
    r = await api.ctx.add([{"role": "user", "name": "Ana", "content": text}], user, conversation)
    return r.memory_ids


async def test_every_page_needs_a_key(api: Api) -> None:
    routes = ui_routes(api.app)
    open_routes = {("GET", "/login"), ("POST", "/login"), ("POST", "/logout"), ("GET", "/static/{name}")}
    assert open_routes <= set(routes) and len(routes) >= 14
    rw = api.key("acme")
    revoked = api.key("acme")
    api.ctx.store.keys.revoke(revoked.split("_")[1], now=api.ctx.clock.now())
    async with api.client() as c:
        for method, path in routes:
            if (method, path) in open_routes:
                continue
            url = "/ui" + path.replace("{memory_id}", "1")
            # a key is no session: even a valid key's text in the cookie signs nothing in
            for cookie in (None, "garbage", revoked, rw, "A" * 43):
                c.cookies.clear()
                if cookie is not None:
                    c.cookies.set("dc_ui_session", cookie, path="/ui")
                r = await c.request(method, url, params={"user": "ana"}, data={"user": "ana"} if method == "POST" else None)
                if method == "GET" and cookie is None:
                    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login?next="), (path, r.status_code)
                else:
                    assert r.status_code == 401 and 'id="key"' in r.text, (method, path, cookie, r.status_code)
                assert "dc_ui_session=" not in r.headers.get("set-cookie", "") or cookie is None
    # the static files are ours and public; nothing else is served from there
    async with api.client() as c:
        assert (await c.get("/ui/static/inspector.js")).status_code == 200
        assert (await c.get("/ui/static/..%2Fpages.py")).status_code == 404


async def test_signing_in_returns_to_the_page_asked_for_and_never_leaves_the_site(api: Api) -> None:
    key = api.key("acme")
    async with api.client() as c:
        asked = await c.get("/ui/memories", params={"user": "ana", "q": "lisbon trip"})
        assert asked.status_code == 303
        form = await c.get(asked.headers["location"])
        assert 'name="next" value="/memories?user=ana&amp;q=lisbon+trip"' in form.text
        token = csrf_of(form.text)
        r = await c.post("/ui/login", data={"key": key, "csrf": token, "next": "/memories?user=ana&q=lisbon+trip"})
        assert r.status_code == 303 and r.headers["location"] == "/ui/memories?user=ana&q=lisbon+trip"
        for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "evil", "/login", "/a:b", "/x\n"):
            c.cookies.clear()
            token = csrf_of((await c.get("/ui/login", params={"next": elsewhere})).text)
            r = await c.post("/ui/login", data={"key": key, "csrf": token, "next": elsewhere})
            assert r.status_code == 303 and r.headers["location"] == "/ui/", elsewhere
        # a wrong key keeps the page to return to
        token = csrf_of((await c.get("/ui/login", params={"next": "/graph?user=ana"})).text)
        r = await c.post("/ui/login", data={"key": "dck_nope", "csrf": token, "next": "/graph?user=ana"})
        assert r.status_code == 401 and 'name="next" value="/graph?user=ana"' in r.text


async def test_sign_in_opens_a_server_side_session_and_the_cookie_holds_no_key(api: Api) -> None:
    key = api.key("acme")
    async with api.client() as c:
        token = csrf_of((await c.get("/ui/login")).text)
        assert (await c.post("/ui/login", data={"key": key})).status_code == 403  # no CSRF token
        r = await c.post("/ui/login", data={"key": "dck_nope", "csrf": token})
        assert r.status_code == 401 and "not valid" in r.text
        r = await c.post("/ui/login", data={"key": key, "csrf": token})
        assert r.status_code == 303 and key not in r.headers["location"]
        cookie = r.headers["set-cookie"]
        session = re.search(r"dc_ui_session=([A-Za-z0-9_-]+)", cookie).group(1)
        assert key not in cookie and key.split("_", 2)[2] not in cookie  # neither the key nor its secret
        assert all(flag in cookie.lower() for flag in ("httponly", "samesite=strict", "path=/ui"))
        # stored hashed: the database holds no session id in clear
        with api.ctx.store.connection() as conn:  # type: ignore[attr-defined]
            stored = [tuple(r) for r in conn.execute(api.ctx.store.t.ui_sessions.select())]  # type: ignore[attr-defined]
        assert stored and all(session not in map(str, row) for row in stored)
        page = await c.get("/ui/")
        assert page.status_code == 200 and key not in page.text
        r = await c.post("/ui/logout", data={"csrf": token})
        assert r.status_code == 303 and 'dc_ui_session=""' in r.headers["set-cookie"]
        assert (await c.get("/ui/")).status_code == 303
        # signing out ends the session on the server too: the old cookie, replayed, signs nothing in
        c.cookies.set("dc_ui_session", session, path="/ui")
        assert (await c.get("/ui/memories?user=ana")).status_code == 401


async def test_revoking_the_key_ends_its_sessions_at_once(api: Api) -> None:
    key = api.key("acme")
    async with browser(api, key) as (c, _):
        assert (await c.get("/ui/")).status_code == 200
        api.ctx.store.keys.revoke(key.split("_")[1], now=api.ctx.clock.now())
        r = await c.get("/ui/memories?user=ana")
        assert r.status_code == 401 and "sign in again" in r.text


async def test_tenants_and_user_lists_hold(api: Api) -> None:
    await add(api, "acme/ana", "Ana works at Orbital in Lisbon.")
    await add(api, "acme/bob", "Bob plays the cello.")
    [other] = (await add(api, "globex/ana", "Globex Ana likes jazz."))[:1]
    async with browser(api, api.key("globex")) as (c, _):
        users = (await c.get("/ui/")).text
        assert ">ana<" in users and "bob" not in users
        assert "jazz" in (await c.get("/ui/memories", params={"user": "ana"})).text
        assert "works at Orbital" not in (await c.get("/ui/memories", params={"user": "ana", "q": "Orbital Lisbon"})).text
        assert (await c.get("/ui/memory/1", params={"user": "ana"})).status_code == 404  # acme's memory 1
        assert (await c.get(f"/ui/memory/{other}", params={"user": "ana"})).status_code == 200
    async with browser(api, api.key("acme", users=["bob"])) as (c, _):
        users = (await c.get("/ui/")).text
        assert ">bob<" in users and ">ana<" not in users
        for path in ("/ui/memories", "/ui/graph", "/ui/lifecycle", "/ui/context", "/ui/conversations", "/ui/memory/1",
                     "/ui/user", "/ui/export", "/ui/activity"):  # fmt: skip
            r = await c.get(path, params={"user": "ana", "q": "Ana"})
            assert r.status_code == 403, path
            assert "Orbital" not in r.text


async def test_read_only_keys_see_no_write_controls_and_cannot_write(api: Api) -> None:
    [mid, *_] = await add(api, "acme/ana", "Ana moved to Lisbon in 2021.")
    before = await api.ctx.get(mid, "acme/ana")
    async with browser(api, api.key("acme", read_only=True)) as (c, token):
        page = (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        assert 'id="read-only"' in page and "write-controls" not in page and "/forget" not in page
        assert 'id="run-form"' not in (await c.get("/ui/lifecycle", params={"user": "ana"})).text
        for path, form in (
            (f"/ui/memory/{mid}/forget", {}),
            (f"/ui/memory/{mid}/edit", {"text": "changed"}),
            ("/ui/lifecycle/run", {}),
            (f"/ui/memory/{mid}/pin", {}),
            (f"/ui/memory/{mid}/restore", {}),
            (f"/ui/memory/{mid}/metadata", {"metadata": "{}"}),
            (f"/ui/memory/{mid}/expiry", {"expires_at": ""}),
            ("/ui/user/delete", {"confirm": "ana"}),
        ):
            r = await c.post(path, data={"user": "ana", "csrf": token, **form})
            assert r.status_code == 403 and "read-only" in r.text, path
    assert await api.ctx.get(mid, "acme/ana") == before
    async with browser(api, api.key("acme")) as (c, token):
        page = (await c.get(f"/ui/memory/{mid}", params={"user": "ana"})).text
        assert 'id="write-controls"' in page
        r = await c.post(f"/ui/memory/{mid}/edit", data={"user": "ana", "csrf": token, "text": "Ana moved to Porto in 2021."})
        assert r.status_code == 303
        page = (await c.get(r.headers["location"])).text
        assert "memory updated" in page and "Porto" in page and "UPDATE" in page
        r = await c.post(f"/ui/memory/{mid}/forget", data={"user": "ana", "csrf": token})
        assert r.status_code == 303
    assert (await api.ctx.get(mid, "acme/ana")).status.value == "deleted"
    assert [h.event.value for h in await api.ctx.history(mid, "acme/ana")][-2:] == ["UPDATE", "DELETE"]


async def test_writes_need_the_csrf_token_and_our_origin(api: Api) -> None:
    [mid, *_] = await add(api, "acme/ana", "Ana has a cat named Miso.")
    async with browser(api, api.key("acme")) as (c, token):
        url = f"/ui/memory/{mid}/forget"
        assert (await c.post(url, data={"user": "ana"})).status_code == 403
        assert (await c.post(url, data={"user": "ana", "csrf": "A" * 43})).status_code == 403
        for origin in ("https://evil.example", "http://testserver.evil.example", "null"):
            r = await c.post(url, data={"user": "ana", "csrf": token}, headers={"Origin": origin})
            assert r.status_code == 403 and "cross-site" in r.text, origin
        assert (await api.ctx.get(mid, "acme/ana")).status.value == "active"
        r = await c.post(url, data={"user": "ana", "csrf": token}, headers={"Origin": "http://testserver"})
        assert r.status_code == 303


async def test_no_page_can_be_framed_or_run_foreign_script(api: Api) -> None:
    # a page of another port of this host is same-site, so SameSite cookies reach a frame of it:
    # only frame-ancestors keeps the write buttons from being clicked through a disguised frame
    [mid, *_] = await add(api, "acme/ana", "Ana has a dog named Pico.")
    async with browser(api, api.key("acme")) as (c, token):
        for method, path, params in (
            ("GET", "/ui/login", {}),
            ("GET", "/ui/", {}),
            ("GET", f"/ui/memory/{mid}", {"user": "ana"}),
            ("GET", "/ui/lifecycle", {"user": "ana"}),
            ("GET", "/ui/memory/1", {"user": "<script>"}),
            ("POST", f"/ui/memory/{mid}/edit", {"user": "ana", "csrf": token, "text": "Ana has a dog named Nico."}),
        ):
            r = await c.request(
                method, path, params=params if method == "GET" else None, data=params if method == "POST" else None
            )
            csp = r.headers.get("content-security-policy", "")
            assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "default-src 'none'" in csp, path
            assert r.headers.get("x-frame-options") == "DENY" and r.headers.get("x-content-type-options") == "nosniff", path
        assert 'style="' not in (await c.get("/ui/lifecycle", params={"user": "ana"})).text  # style-src 'self'


async def test_user_text_is_escaped_everywhere(api: Api) -> None:
    ids = await add(api, "acme/ana", f"Ana wrote {EVIL} on the wiki page.", conversation="x<b>y")
    async with browser(api, api.key("acme")) as (c, _):
        pages = [
            ("/ui/", {}),
            ("/ui/memories", {"user": "ana"}),
            ("/ui/memories", {"user": "ana", "q": "script alert wiki"}),
            ("/ui/memories", {"user": "ana", "metadata": "k=<script>"}),
            *[(f"/ui/memory/{i}", {"user": "ana"}) for i in ids],
            ("/ui/graph", {"user": "ana"}),
            ("/ui/graph", {"user": "ana", "find": "<script>"}),
            ("/ui/conversations", {"user": "ana", "conversation": "x<b>y", "node": 1}),
            ("/ui/lifecycle", {"user": "ana"}),
            ("/ui/context", {"user": "ana", "q": "<script>wiki</script>"}),
            ("/ui/memory/1", {"user": "<script>"}),
        ]
        seen_escaped = 0
        for path, params in pages:
            r = await c.get(path, params=params)
            assert r.status_code < 500, (path, r.text)
            assert "<script>alert" not in r.text and "<img src=x" not in r.text and "<b>y" not in r.text, path
            assert r.text.count("<script") == 1  # ours: /ui/static/inspector.js
            seen_escaped += "&lt;script&gt;alert" in r.text
        assert seen_escaped >= 5


async def test_pages_show_what_the_api_returns(api: Api) -> None:
    texts = [f"Ana visited museum number {i} in Lisbon." for i in range(57)] + ["Bob likes Porto wine."]
    for t in texts:
        await add(api, "acme/ana", t)
    key = api.key("acme")
    async with api.client(key) as rest, browser(api, key) as (c, _):
        found = (await rest.post("/v1/search", json={"user_id": "ana", "query": "museum Lisbon", "limit": 50})).json()
        page = (await c.get("/ui/memories", params={"user": "ana", "q": "museum Lisbon"})).text
        shown = [int(x) for x in re.findall(r'href="/ui/memory/(\d+)\?user=ana" class="memory-link"', page)]
        assert shown == [r["memory_id"] for r in found["results"]]
        first = found["results"][0]
        assert f"{first['score']:.3f}" in page and all(f"{leg[0]}{rank}<" in page for leg, rank in first["legs"].items())
        # cursor paging through everything, as GET /v1/memories pages
        listed: list[int] = []
        url: str | None = "/ui/memories?user=ana&tier=working"
        while url:
            page = (await c.get(url.replace("&amp;", "&"))).text
            listed += [int(x) for x in re.findall(r'href="/ui/memory/(\d+)\?user=ana" class="memory-link"', page)]
            nxt = re.search(r'id="next" href="([^"]+)"', page)
            url = nxt.group(1) if nxt else None
        api_page = (await rest.get("/v1/memories", params={"user_id": "ana", "tier": "working", "limit": 1000})).json()
        assert listed == [m["memory_id"] if "memory_id" in m else m["id"] for m in api_page["memories"]]
        assert len(listed) > 50
        # a status filter shows deleted memories; the default list does not
        await rest.delete(f"/v1/memories/{listed[0]}", params={"user_id": "ana"})
        deleted = (await c.get("/ui/memories", params={"user": "ana", "status": "deleted"})).text
        assert re.findall(r'href="/ui/memory/(\d+)\?user=ana" class="memory-link"', deleted) == [str(listed[0])]
        # the memory page quotes its source turn verbatim
        mem = (await rest.get(f"/v1/memories/{listed[1]}", params={"user_id": "ana"})).json()
        page = (await c.get(f"/ui/memory/{listed[1]}", params={"user": "ana"})).text
        turn = mem["sources"][0]
        assert f'id="turn-{turn["turn_id"]}"' in page and f"conversation={turn['conversation_id']}" in page
        # the context preview is the API's context
        ctx = (
            await rest.post("/v1/context", json={"user_id": "ana", "query": "Which museums in Lisbon?", "budget_tokens": 120})
        ).json()
        page = (await c.get("/ui/context", params={"user": "ana", "q": "Which museums in Lisbon?", "budget": 120})).text
        assert f"{ctx['total_tokens']} of 120 tokens" in page
        for part in ctx["parts"]:
            assert f"{part['tokens']} tokens used of {part['allotted_tokens']} allotted" in page
        assert ctx["left_out"] and 'id="left-out"' in page


async def test_memories_filter_by_agent_and_run(api: Api) -> None:
    ctx = api.ctx
    for i in range(53):  # more than a page, so paging must keep the filter
        await ctx.add([{"role": "user", "content": f"Ana planned trip number {i} to Lisbon."}], "acme/ana", "c1",
                      agent_id="planner", run_id=f"r{i % 2}")  # fmt: skip
    for i in range(3):
        await ctx.add([{"role": "user", "content": f"Ana asked the cook about Lisbon recipe {i}."}], "acme/ana", "c2",
                      agent_id="cook", run_id="r9")  # fmt: skip
    evil = await ctx.add([{"role": "user", "content": "Ana met a Lisbon stranger."}], "acme/ana", "c3",
                         agent_id="<script>x</script>", run_id='"><img src=x>')  # fmt: skip
    link = r'href="/ui/memory/(\d+)\?user=ana" class="memory-link"'

    async def ids(**kw: object) -> set[int]:
        return {m.id for m in (await ctx.list("acme/ana", limit=1000, **kw)).memories}  # type: ignore[arg-type]

    planner, cook, r0 = await ids(agent_id="planner"), await ids(agent_id="cook"), await ids(run_id="r0")
    assert len(planner) > 50 and cook and r0 and not planner & cook
    async with browser(api, api.key("acme")) as (c, _):
        # the list, paged: only the planner's memories, every one of them
        listed: list[int] = []
        url: str | None = "/ui/memories?user=ana&agent=planner"
        pages = 0
        while url:
            page = (await c.get(url.replace("&amp;", "&"))).text
            pages += 1
            assert 'value="planner"' in page and "cook" not in page
            listed += [int(x) for x in re.findall(link, page)]
            nxt = re.search(r'id="next" href="([^"]+)"', page)
            url = nxt.group(1) if nxt else None
            assert url is None or "agent=planner" in url
        assert pages >= 2 and len(listed) == len(set(listed)) and set(listed) == planner
        page = (await c.get("/ui/memories", params={"user": "ana", "run": "r0"})).text
        shown = {int(x) for x in re.findall(link, page)}
        assert shown and shown <= r0 and f'id="total">{len(r0)} matching' in page
        page = (await c.get("/ui/memories", params={"user": "ana", "agent": "planner", "run": "r9"})).text
        assert not re.findall(link, page)
        # search: the same filter
        page = (await c.get("/ui/memories", params={"user": "ana", "q": "Lisbon recipe cook trip", "agent": "cook"})).text
        found = {int(x) for x in re.findall(link, page)}
        assert found and found <= cook and "planner" not in page
        page = (await c.get("/ui/memories", params={"user": "ana", "q": "Lisbon trip", "run": "r0"})).text
        found = {int(x) for x in re.findall(link, page)}
        assert found and found <= r0
        # the one-memory page shows agent and run
        one = min(cook)
        page = (await c.get(f"/ui/memory/{one}", params={"user": "ana"})).text
        assert '<dd id="agent">cook</dd>' in page and '<dd id="run">r9</dd>' in page
        # a hostile agent or run id is shown escaped, in the form, the table and the memory page
        for path, params in [
            ("/ui/memories", {"user": "ana", "agent": "<script>x</script>"}),
            ("/ui/memories", {"user": "ana", "q": "stranger", "run": '"><img src=x>'}),
            *[(f"/ui/memory/{i}", {"user": "ana"}) for i in evil.memory_ids],
        ]:
            r = await c.get(path, params=params)
            assert r.status_code == 200, (path, r.text)
            assert "<script>x" not in r.text and "<img src=x" not in r.text and r.text.count("<script") == 1
            assert "&lt;script&gt;x&lt;/script&gt;" in r.text and "&#34;&gt;&lt;img src=x&gt;" in r.text
            assert re.findall(link, r.text) or "/memory/" in path
        # a bad id is a clear error, not a crash
        r = await c.get("/ui/memories", params={"user": "ana", "agent": " planner"})
        assert r.status_code == 400 and "agent_id" in r.text


async def test_looking_is_not_an_access(api: Api) -> None:
    await add(api, "acme/ana", "Ana keeps bees on the roof in Porto.")
    key = api.key("acme")

    async def accesses() -> list[int]:
        await api.ctx.flush()
        page = await api.ctx.list("acme/ana", limit=100)
        return [m.access_count for m in page.memories]

    before = await accesses()
    async with browser(api, key) as (c, _):
        assert "bees" in (await c.get("/ui/memories", params={"user": "ana", "q": "bees Porto"})).text
        assert "bees" in (await c.get("/ui/context", params={"user": "ana", "q": "Where are the bees?"})).text
    assert await accesses() == before  # the forgetting curve is not reset by looking
    async with api.client(key) as rest:
        await rest.post("/v1/search", json={"user_id": "ana", "query": "bees Porto"})
    assert sum(await accesses()) > sum(before)  # a search by the agent is


def local(app, client_host: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(client_host, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000")


async def test_auth_off_serves_loopback_clients_and_hosts_only(tmp_path) -> None:
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/l.db", embedder=HashEmbedder(256), require_auth=False)
    app = create_app(ctx)
    try:
        async with running(app):
            api = Api(app, ctx)
            await add(api, "ana", "Ana likes tea.")
            async with local(app, "127.0.0.1") as c:
                assert ">ana<" in (await c.get("/ui/")).text
                r = await c.get("/ui/", headers={"Host": "rebind.example:8000"})
                assert r.status_code == 403 and "tea" not in r.text
            async with local(app, "10.0.0.5") as c:
                assert (await c.get("/ui/memories", params={"user": "ana"})).status_code == 403
    finally:
        await ctx.close()


async def test_lifecycle_preview_matches_the_run(db_url: str) -> None:
    clock = ManualClock()
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock, auto_consolidate=False)
    async with ctx:
        for i in range(6):
            await ctx.add([{"role": "user", "content": f"On day {i} I went hiking near the lake with Rui."}], "ana", "walks")
        clock.advance(timedelta(days=40))
        pv = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        assert pv.would_deactivate and pv.curves
        report = await ctx.run_lifecycle("ana", consolidate=False)
        assert report["memories_deactivated"] == len(pv.would_deactivate)
        assert report["memories_cleaned"] == pv.would_soft_delete
        after = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        assert not after.would_deactivate and after.active == pv.active - len(pv.would_deactivate)
        assert after.would_lower == 0  # the run wrote every importance the curve gives now
        await ctx.add([{"role": "user", "content": "My cousin Ines teaches chemistry in Braga."}], "ana", "family")
        clock.advance(timedelta(days=2))
        later = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        report = await ctx.run_lifecycle("ana", consolidate=False)
        assert report["memories_decayed"] == later.would_lower + len(later.would_deactivate) > 0


@pytest.mark.parametrize("days", [0, 3650])
async def test_the_preview_says_consolidation_is_due_exactly_when_the_run_consolidates(db_url: str, days: int) -> None:
    # the run decays first: short-term memories that fade then are not there to consolidate
    clock = ManualClock()
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock, auto_consolidate=False,
                      consolidation_threshold=3)  # fmt: skip
    async with ctx:
        for text in ("I like green tea.", "My cousin Ines teaches chemistry in Braga.", "I drive a blue Fiat.",
                     "My dog Rex is afraid of thunder.", "I play padel on Sundays."):  # fmt: skip
            await ctx.add([{"role": "user", "content": text}], "ana")
        clock.advance(timedelta(days=days))
        pv = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        report = await ctx.run_lifecycle("ana")
        assert pv.consolidation_due == report["consolidation_ran"], (pv.short_term, report)
        assert pv.consolidation_due is (days == 0)


def test_dag_layout_branches_and_merges() -> None:
    class N:
        def __init__(self, id: int, parents: list[int], summary_of: list[int] | None = None) -> None:
            self.id, self.parents, self.summary_of = id, parents, summary_of or []

    # ids as stored: a summary (9) is newer than the turn that continues from it (8)
    nodes = [N(1, []), N(2, [1]), N(3, [2]), N(4, [2]), N(5, [4]), N(6, [3, 5]), N(7, [6]), N(8, [7, 9]), N(9, [], [1, 2])]
    place, lanes, rows = dag_layout(nodes)
    assert place[3][0] == place[2][0] != place[4][0] == place[5][0]  # 4 branches off 2
    assert place[6][0] == place[3][0] and place[6][1] > max(place[3][1], place[5][1])  # the merge
    assert place[9][1] > place[2][1] and place[9][0] not in (place[1][0], place[4][0])  # after what it compresses
    assert all(place[p][1] < place[n.id][1] for n in nodes for p in n.parents)
    assert sorted(r for _, r in place.values()) == list(range(9))  # one node per row
    assert lanes == 3 and rows == 9


@pytest.mark.parametrize("n", [300, 900])  # every pair repelled; a sample of them
def test_force_layout_is_deterministic_and_inside_the_square(n: int) -> None:
    ids = list(range(1, n + 1))
    edges = [(i, i + 1) for i in range(1, n)] + [(1, n // 2)]
    a = force_layout(ids, edges, centre=7)
    assert a == force_layout(ids, edges, centre=7)
    assert all(0 <= x <= 1000 and 0 <= y <= 1000 for x, y in a.values())
    assert a[7] == (500.0, 500.0)
    half = n // 2
    near = sum(abs(a[i][0] - a[i + 1][0]) + abs(a[i][1] - a[i + 1][1]) for i in range(1, n)) / (n - 1)
    far = sum(abs(a[i][0] - a[i + half][0]) + abs(a[i][1] - a[i + half][1]) for i in range(1, half)) / (half - 1)
    assert near < far / 2  # neighbours end up closer than strangers


@pytest.mark.slow
def test_deepcontext_ui_prints_its_address_and_serves_this_machine(tmp_path) -> None:
    env = cli_env(DEEPCONTEXT_DATABASE_URL=f"sqlite:///{tmp_path}/ui.db", DEEPCONTEXT_EMBEDDER="hash")
    proc = subprocess.Popen([sys.executable, "-m", "deepcontext", "ui"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, cwd=str(ROOT), text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"DeepContext inspector: (http://127\.0\.0\.1:(\d+)/ui/)", line)
        assert m and int(m.group(2)) > 0, line
        start = time.monotonic()
        while True:
            try:
                r = httpx.get(m.group(1), timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() - start < 60
                time.sleep(0.2)
        assert r.status_code == 200 and "<h1>Users" in r.text  # no key needed from this machine
        assert httpx.get(m.group(1), headers={"Host": "rebind.example"}, timeout=5).status_code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stdout:
            proc.stdout.close()


async def test_errors_unknown_pages_and_the_front_door_are_html_with_real_links(api: Api) -> None:
    key = api.key("acme")
    await add(api, "acme/ana", "I live in Porto.")
    async with browser(api, key) as (c, _):
        # an error page's "back" is a real link to the page one came from (never javascript:)
        r = await c.get("/ui/memory/999999?user=ana", headers={"referer": f"{c.base_url}/ui/memories?user=ana"})
        assert r.status_code == 404 and 'href="/ui/memories?user=ana" id="back"' in r.text
        r = await c.get("/ui/memory/999999?user=ana", headers={"referer": "https://elsewhere.example/ui/x"})
        assert 'href="/ui/" id="back"' in r.text  # not a foreign page
        r = await c.get("/ui/no-such-page")
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html") and "no such page" in r.text
        for page in ("/ui/", "/ui/memories?user=ana", "/ui/lifecycle?user=ana", "/ui/graph?user=ana", "/ui/no-such-page"):
            assert "javascript:" not in (await c.get(page)).text, page
        icon = await c.get("/ui/static/favicon.svg")
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    async with api.client() as c:
        r = await c.get("/", headers={"accept": "text/html,application/xhtml+xml"})
        assert r.status_code == 307 and r.headers["location"] == "/ui/"
        r = await c.get("/", headers={"accept": "application/json"})
        assert r.status_code == 200 and r.json()["docs"] == "/docs"
        r = await c.get("/favicon.ico")
        assert r.status_code == 200 and r.content.startswith(b"<svg")


async def test_running_the_lifecycle_redirects_to_its_report(api: Api) -> None:
    key = api.key("acme")
    await add(api, "acme/ana", "I went hiking near the lake with Rui.")
    async with browser(api, key) as (c, token):
        r = await c.post("/ui/lifecycle/run", data={"user": "ana", "csrf": token})
        assert r.status_code == 303 and r.headers["location"].startswith("/ui/lifecycle?user=ana&ran_")
        page = await c.get(r.headers["location"])  # what a refresh asks for again: a GET, no new run
        assert page.status_code == 200 and 'id="report"' in page.text and "memories decayed" in page.text
        assert 'data-confirm="Run the lifecycle of ana now?' in page.text


async def test_the_preview_says_due_only_when_the_run_consolidates(db_url: str) -> None:
    """A run that consolidates nothing leaves its short-term memories over, and the next needs the
    threshold above them: the preview counts them as the runner does."""
    clock = ManualClock()
    ctx = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=clock, auto_consolidate=False,
                      consolidation_threshold=3)  # fmt: skip
    async with ctx:
        for text in ("I keep bees on the roof.", "My sister plays the cello.", "Our boiler broke in January."):
            await ctx.add([{"role": "user", "content": text}], "ana", "c")
        pv = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        assert pv.consolidation_due and pv.consolidation_left_over == 0
        first = await ctx.run_lifecycle("ana")
        assert first["consolidation_ran"] and first["groups"] == 0  # unrelated: nothing to merge, all left over
        await ctx.add([{"role": "user", "content": "I bought a green bicycle."}], "ana", "c")
        pv = lifecycle_preview(ctx.store, ctx.settings, "ana", clock.now())
        assert pv.short_term >= pv.consolidation_threshold and pv.consolidation_left_over >= 3
        again = await ctx.run_lifecycle("ana")
        assert pv.consolidation_due is again["consolidation_ran"] is False  # the page never says "due" for nothing


async def test_lists_page_both_ways_with_their_position_and_search_explains_itself(api: Api) -> None:
    key = api.key("acme")
    for i in range(120):
        await add(api, "acme/ana", f"On day {i} I fixed the shed with Rui using {i} planks of cedar.", conversation=f"c{i % 3}")
    async with browser(api, key) as (c, _):
        first = await c.get("/ui/memories?user=ana&tier=working")
        assert re.search(r'id="position">1–50<', first.text) and 'id="prev"' not in first.text
        nxt = re.search(r'id="next" href="([^"]+)"', first.text).group(1).replace("&amp;", "&")
        second = await c.get(nxt)
        assert re.search(r'id="position">51–100<', second.text)
        back = re.search(r'id="prev" href="([^"]+)"', second.text).group(1).replace("&amp;", "&")
        again = await c.get(back)
        ids = lambda html: re.findall(r"/ui/memory/(\d+)\?", html)  # noqa: E731
        assert ids(again.text) == ids(first.text) and re.search(r'id="position">1–50<', again.text)
        third = await c.get(re.search(r'id="next" href="([^"]+)"', second.text).group(1).replace("&amp;", "&"))
        back2 = await c.get(re.search(r'id="prev" href="([^"]+)"', third.text).group(1).replace("&amp;", "&"))
        assert ids(back2.text) == ids(second.text) and re.search(r'id="position">51–100<', back2.text)
        # an entity's memories page through all of them, with their count
        graph = await c.get("/ui/graph?user=ana&entity=Rui")
        count = int(re.search(r'id="mentioned">(\d+)', graph.text).group(1))
        assert count > 60 and 'id="entity-next"' in graph.text and "1–30" in graph.text
        later = await c.get("/ui/graph?user=ana&entity=Rui&page=1")
        assert "31–60" in later.text and 'id="entity-prev"' in later.text
        assert set(ids(later.text)).isdisjoint(ids(graph.text))
        # search: the legend, the similarity, and no pretence when nothing is relevant
        found = await c.get("/ui/memories?user=ana&q=cedar+planks+for+the+shed")
        assert 'id="legend"' in found.text and 'class="n similarity"' in found.text
        nonsense = await c.get("/ui/memories?user=ana&q=zqxv+wubble+frindle")
        assert 'id="nothing-relevant"' in nonsense.text


async def test_a_long_conversation_pages_and_a_link_opens_the_window_holding_its_turn(api: Api) -> None:
    key = api.key("acme")
    ids: list[int] = []
    for i in range(0, 460, 20):  # 460 turns, 20 an add
        r = await api.ctx.add(
            [{"role": "user", "content": f"turn {j} of the long chat"} for j in range(i, i + 20)], "acme/ana", "long"
        )
        ids += r.turn_ids
    async with browser(api, key) as (c, _):
        last = await c.get("/ui/conversations?user=ana&conversation=long")
        assert "turns 61–460 of 460" in last.text and 'id="newer"' not in last.text
        older = re.search(r'id="older" href="([^"]+)"', last.text).group(1).replace("&amp;", "&")
        first = await c.get(older)
        assert "turns 1–60 of 460" in first.text and "turn 0 of the long chat" in first.text and 'id="newer"' in first.text
        # a link to the oldest turn (as a memory's source links) opens the window that holds it, at it
        linked = await c.get(f"/ui/conversations?user=ana&conversation=long&node={ids[5]}")
        assert f'id="node-{ids[5]}"' in linked.text and "turn 5 of the long chat" in linked.text
        assert f'id="dnode-{ids[5]}"' in linked.text


async def test_a_walk_of_every_page_finds_no_javascript_link(api: Api) -> None:
    from html.parser import HTMLParser
    from urllib.parse import urljoin, urlsplit

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[str] = []
            self.bad: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for name, value in attrs:
                if name in ("href", "src", "action", "formaction") and (value or "").strip().lower().startswith("javascript:"):
                    self.bad.append(f"<{tag} {name}={value}>")
                if name.startswith("on"):  # inline handlers: the CSP refuses them, so none may be relied on
                    self.bad.append(f"<{tag} {name}>")
                if tag == "a" and name == "href" and value:
                    self.links.append(value)

    await add(api, "acme/ana", "I moved to Lisbon in 2021 and I work at Orbital with Joao.")
    await add(api, "acme/ana", "My sister Marta lives in Porto.", conversation="family")
    await api.ctx.search("where do I live", "acme/ana")
    async with browser(api, api.key("acme")) as (c, _):
        seen: set[str] = set()
        queue = ["/ui/", "/ui/no/such/page", "/ui/memory/999999?user=ana"]
        while queue and len(seen) < 120:
            path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            r = await c.get(path)
            if "text/html" not in r.headers.get("content-type", ""):
                continue
            parser = Links()
            parser.feed(r.text)
            assert not parser.bad, (path, parser.bad)
            for link in parser.links:
                target = urlsplit(urljoin(f"http://127.0.0.1{path}", link))
                if target.path.startswith("/ui/") and "/export" not in target.path and "again=" not in target.query:
                    queue.append(target.path + (f"?{target.query}" if target.query else ""))
        assert len(seen) >= 20  # the walk reached the pages, not just the front


async def test_the_users_list_and_the_picker_page_through_many_users(api: Api) -> None:
    from deepcontext.server.inspector.pages import USERS_PER_PAGE

    names = [f"user-{i:04d}" for i in range(2 * USERS_PER_PAGE + 5)]
    for name in names:
        await api.ctx.add([{"role": "user", "content": f"{name} likes tea."}], f"acme/{name}", infer=False)
    await api.ctx.add([{"role": "user", "content": "Zed of another tenant."}], "globex/user-0001b", infer=False)

    def listed(html: str, cls: str = "user-link") -> list[str]:
        return re.findall(rf'class="{cls}">([^<]+)<', html)

    async with browser(api, api.key("acme")) as (c, _):
        seen: list[str] = []
        page = await c.get("/ui/")
        pages = 0
        while True:
            pages += 1
            rows = listed(page.text)
            assert 0 < len(rows) <= USERS_PER_PAGE
            seen += rows
            more = re.search(r'id="more-users" href="([^"]+)"', page.text)
            if more is None:
                break
            page = await c.get(more.group(1).replace("&amp;", "&"))
        assert pages == 3 and seen == names  # in id order, each once, the other tenant's never
        # "users after" as a starting point: the ones after it, not itself
        r = await c.get("/ui/", params={"after": "user-0199"})
        assert listed(r.text) == names[200:] and 'id="more-users"' not in r.text and 'id="first-users"' in r.text
        assert "No user after" in (await c.get("/ui/", params={"after": "zzz"})).text
        bad = await c.get("/ui/", params={"after": "a" * 300})  # not an id: a clear refusal, not a crash
        assert bad.status_code == 400 and "after" in bad.text
        # a page that needs a user offers them a page at a time too
        pick = await c.get("/ui/memories")
        first = re.findall(r'<li><a href="[^"]*user=([^"&]+)">', pick.text)
        assert first == names[:USERS_PER_PAGE]
        more = re.search(r'id="more-users" href="([^"]+)"', pick.text)
        assert more is not None
        nxt = re.findall(r'<li><a href="[^"]*user=([^"&]+)">', (await c.get(more.group(1).replace("&amp;", "&"))).text)
        assert nxt == names[USERS_PER_PAGE : 2 * USERS_PER_PAGE]
