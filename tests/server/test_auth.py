"""API keys: every protected route refuses a missing, wrong or revoked key (the routes are read
from the app, so a new endpoint cannot be forgotten); read-only and user-limited keys; keys are
stored hashed; the `deepcontext keys` commands."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
from sqlalchemy import select

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from deepcontext.server.auth import _writer, authenticate
from tests.server.helpers import ROOT, Api, flat_routes, running
from tests.support.cli import run_cli

#: the only routes served without a key
# the front door (a browser goes to /ui/, a client learns where the API is) and the icon say nothing of any user
PUBLIC = {("GET", "/health"), ("GET", "/v1/health"), ("GET", "/v1/ready"), ("GET", "/"), ("GET", "/favicon.ico")}
#: POST routes that only read (every other non-GET route must refuse read-only keys)
READS_BY_POST = {("POST", "/memory/search"), ("POST", "/v1/search"), ("POST", "/v1/context"), ("POST", "/graph/neighbors")}
DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
#: mounted apps with their own checks (the web inspector: tests/server/test_inspector.py; the API docs' scripts)
MOUNTS = {"/ui", "/docs-assets"}


def _calls(dep) -> set:  # every dependency callable of a route, recursively
    out = {dep.call}
    for d in dep.dependencies:
        out |= _calls(d)
    return out


def routes(app) -> list[tuple[str, str, set]]:
    out = []
    for path, methods, r in flat_routes(app):
        if path in DOCS | MOUNTS:
            continue
        dependant = getattr(r, "dependant", None)
        assert dependant is not None, f"unexpected non-API route {path}"
        for m in sorted(methods):
            out.append((m, path, _calls(dependant)))
    return out


def concrete(path: str) -> str:
    return path.replace("{memory_id}", "1").replace("{user_id}", "ana")


async def call(c: httpx.AsyncClient, method: str, path: str, **kw) -> httpx.Response:
    body = {} if method in ("POST", "PUT", "PATCH", "DELETE") else None
    return await c.request(method, concrete(path), json=body, params={"user_id": "ana"}, **kw)


def test_every_route_is_protected_or_listed_public(api: Api) -> None:
    seen_public = set()
    for method, path, deps in routes(api.app):
        if (method, path) in PUBLIC:
            assert authenticate not in deps
            seen_public.add((method, path))
            continue
        assert authenticate in deps, f"{method} {path} does not authenticate"
        if method != "GET" and (method, path) not in READS_BY_POST:
            assert _writer in deps, f"{method} {path} writes but does not refuse read-only keys"
    assert seen_public == PUBLIC


async def test_protected_routes_refuse_missing_wrong_and_revoked_keys(api: Api) -> None:
    good = api.key("acme")
    key_id = good.split("_")[1]
    revoked = api.key("acme")
    api.ctx.store.keys.revoke(revoked.split("_")[1], now=api.ctx.clock.now())
    wrong_secret = f"dck_{key_id}_{'A' * 43}"
    bad_headers = [
        {},
        {"Authorization": "Bearer garbage"},
        {"Authorization": f"Bearer dck_{'0' * 16}_{'B' * 43}"},  # well-formed, unknown
        {"Authorization": f"Bearer {wrong_secret}"},  # right id, wrong secret
        {"Authorization": f"Bearer {revoked}"},
        {"X-API-Key": wrong_secret},
        {"X-API-Key": revoked},
        {"Authorization": f"Basic {good}"},
        {"Authorization": f"Bearer {good}x"},
    ]
    protected = [(m, p) for m, p, _ in routes(api.app) if (m, p) not in PUBLIC]
    assert len(protected) >= 14
    async with api.client() as c:
        for method, path in protected:
            for headers in bad_headers:
                r = await call(c, method, path, headers=headers)
                assert r.status_code == 401, (method, path, headers, r.status_code, r.text)
                assert r.headers["content-type"] == "application/problem+json"
                assert r.headers["www-authenticate"].startswith("Bearer")
            for headers in ({"Authorization": f"Bearer {good}"}, {"X-API-Key": good}):
                r = await call(c, method, path, headers=headers)
                assert r.status_code not in (401, 403, 500), (method, path, r.status_code, r.text)


async def test_read_only_keys_cannot_write(api: Api) -> None:
    ro = api.key("acme", read_only=True)
    rw = api.key("acme")
    async with api.client(rw) as c:
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I like tea."}]})
        mid = r.json()["memory_ids"][0]
    writes = {(m, p) for m, p, deps in routes(api.app) if _writer in deps}
    assert {("POST", "/v1/memories"), ("DELETE", "/v1/users/{user_id}"), ("PUT", "/memory/update")} <= writes
    async with api.client(ro) as c:
        for method, path in writes:
            r = await call(c, method, path.replace("{memory_id}", str(mid)))
            assert r.status_code == 403, (method, path, r.text)
            assert "read-only" in r.json()["detail"]
        assert (await c.get(f"/v1/memories/{mid}", params={"user_id": "ana"})).status_code == 200
        assert (await c.post("/v1/search", json={"user_id": "ana", "query": "tea"})).json()["results"]
    async with api.client(rw) as c:  # nothing was changed by the refused calls
        assert (await c.get(f"/v1/memories/{mid}", params={"user_id": "ana"})).json()["status"] == "active"


async def test_user_limited_keys(api: Api) -> None:
    both = api.key("acme", users=["ana", "bob"])
    async with api.client(both) as c:
        for u in ("ana", "bob"):
            r = await c.post("/v1/memories", json={"user_id": u, "messages": [{"role": "user", "content": f"I am {u}."}]})
            assert r.status_code == 201
        r = await c.post("/v1/memories", json={"user_id": "eve", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 403 and "may not access" in r.json()["detail"]
    async with api.client(api.key("acme")) as c:
        await c.post("/v1/memories", json={"user_id": "eve", "messages": [{"role": "user", "content": "I am eve."}]})
        assert (await c.get("/v1/users")).json()["users"] == ["ana", "bob", "eve"]
    only_ana = api.key("acme", users=["ana"])
    async with api.client(only_ana) as c:
        assert (await c.get("/v1/users")).json()["users"] == ["ana"]
        assert (await c.get("/v1/memories", params={"user_id": "ana"})).status_code == 200
        for path in ("/v1/memories", "/v1/turns", "/v1/users/bob/stats"):
            r = await c.get(path, params={"user_id": "bob"})
            assert r.status_code == 403, (path, r.text)
        assert (await c.delete("/v1/users/bob")).status_code == 403
        assert (await c.post("/memory/search", json={"user_id": "bob", "query": "bob"})).status_code == 403
    async with api.client(api.key("acme")) as c:
        assert (await c.get("/v1/users")).json()["users"] == ["ana", "bob", "eve"]


async def test_keys_are_stored_hashed_and_track_use(api: Api) -> None:
    key = api.key("acme", name="ci")
    key_id, secret = key.split("_")[1], key.split("_", 2)[2]
    t = api.ctx.store.t.api_keys  # type: ignore[attr-defined]
    with api.ctx.store.connection() as conn:  # type: ignore[attr-defined]
        row = conn.execute(select(t).where(t.c.key_id == key_id)).one()
    assert secret not in json.dumps(row._asdict(), default=str)
    assert row.key_hash.startswith("sha256$") and len(row.key_hash) == 7 + 64
    assert row.last_used_at is None
    async with api.client(key) as c:
        assert (await c.get("/v1/users")).status_code == 200
    (listed,) = [k for k in api.ctx.store.keys.all() if k.key_id == key_id]
    assert listed.last_used_at is not None and listed.name == "ci" and listed.tenant == "acme"


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["--db", str(db), "--embedder", "hash", *args], cwd=ROOT)


async def test_keys_cli_create_list_revoke(tmp_path: Path) -> None:
    db = tmp_path / "keys.db"
    p = _cli(db, "keys", "create", "--tenant", "acme", "--user", "ana", "--user", "bob", "--read-only", "--name", "dash")
    assert p.returncode == 0, p.stderr
    key = p.stdout.strip()
    assert key.startswith("dck_") and "not shown again" in p.stderr
    p = _cli(db, "keys", "create", "--tenant", "acme", "--json")
    rw = json.loads(p.stdout)
    assert rw["user_ids"] is None and rw["read_only"] is False and rw["key"].startswith(f"dck_{rw['key_id']}_")

    listed = json.loads(_cli(db, "keys", "list", "--json").stdout)
    assert [k["tenant"] for k in listed] == ["acme", "acme"]
    assert listed[0]["user_ids"] == ["ana", "bob"] and listed[0]["read_only"] is True and listed[0]["name"] == "dash"
    assert "key" not in listed[0] and key.split("_", 2)[2] not in _cli(db, "keys", "list").stdout
    assert _cli(db, "keys", "create", "--tenant", "bad/tenant").returncode != 0
    p = _cli(db, "keys", "revoke", "0123456789abcdef")
    assert p.returncode != 0 and "not found" in p.stderr

    ctx = DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(256))
    app = create_app(ctx)
    async with running(app):
        api = Api(app, ctx)
        async with api.client(key) as c:
            assert (await c.get("/v1/memories", params={"user_id": "ana"})).status_code == 200
            assert (await c.get("/v1/memories", params={"user_id": "eve"})).status_code == 403
        assert _cli(db, "keys", "revoke", listed[0]["key_id"]).returncode == 0
        async with api.client(key) as c:
            assert (await c.get("/v1/memories", params={"user_id": "ana"})).status_code == 401
    await ctx.close()
    active = json.loads(_cli(db, "keys", "list", "--json", "--active").stdout)
    assert [k["key_id"] for k in active] == [rw["key_id"]]


def test_key_validation(tmp_path: Path) -> None:
    import asyncio

    import pytest

    from deepcontext.errors import ValidationError

    async def go() -> None:
        async with DeepContext(database_url=f"sqlite:///{tmp_path}/v.db", embedder=HashEmbedder(256)) as ctx:
            now = ctx.clock.now()
            for tenant in ("", "a/b", "-x", "x" * 65, "sp ace"):
                with pytest.raises(ValidationError):
                    ctx.store.keys.create(tenant, now=now)
            for users in ([], ["a/b"], [""], "ana"):
                with pytest.raises(ValidationError):
                    ctx.store.keys.create("acme", now=now, user_ids=users)  # type: ignore[arg-type]
            assert ctx.store.keys.all() == []

    asyncio.run(go())
