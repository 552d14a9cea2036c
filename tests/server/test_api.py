"""The REST API against the ASGI app (httpx), on SQLite and PostgreSQL: the seed's endpoints and
shapes, the /v1 resources, problem details, limits, CORS."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.errors import ConfigurationError
from deepcontext.server import create_app
from tests.server.helpers import Api, flat_routes, running

ANA = [
    {"role": "user", "name": "Ana", "content": "I live in Lisbon and I work at Globex Corporation."},
    {"role": "assistant", "content": "Lisbon is a lovely city."},
]
PROBLEM = "application/problem+json"


def assert_problem(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert {"type", "title", "status", "detail", "request_id"} <= set(body)
    assert body["status"] == status and body["type"].startswith("urn:deepcontext:problem:")
    assert body["request_id"] == r.headers["x-request-id"]
    return body


async def test_seed_endpoints_keep_their_shapes(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        r = await c.get("/health")
        assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["version"]

        r = await c.post("/memory/add", json={"messages": ANA, "user_id": "ana", "conversation_id": "c1"})
        assert r.status_code == 200, r.text
        add = r.json()
        for field in (
            "semantic_facts",
            "episodic_facts",
            "entities_found",
            "relationships_found",
            "memories_added",
            "memories_updated",
            "memories_replaced",
        ):
            assert field in add
        assert add["memories_added"] >= 1 and "Globex Corporation" in add["entities_found"]

        r = await c.post("/memory/search", json={"query": "Where does Ana work?", "user_id": "ana", "limit": 5})
        assert r.status_code == 200, r.text
        res = r.json()
        assert res["user_id"] == "ana" and res["query"] == "Where does Ana work?" and res["total"] == len(res["results"])
        hit = next(x for x in res["results"] if "Globex" in x["text"])
        for field in (
            "memory_id",
            "text",
            "memory_type",
            "tier",
            "score",
            "importance",
            "confidence",
            "created_at",
            "connections",
            "entities",
            "metadata",
        ):
            assert field in hit

        mid = hit["memory_id"]
        r = await c.put("/memory/update", json={"memory_id": mid, "text": "Ana works at Initech now.", "user_id": "ana"})
        assert r.json() == {"memory_id": mid, "text": "Ana works at Initech now.", "status": "updated"}
        r = await c.post("/memory/search", json={"query": "Initech", "user_id": "ana"})
        assert any(x["memory_id"] == mid and "Initech" in x["text"] for x in r.json()["results"])

        r = await c.request("DELETE", "/memory/delete", json={"memory_id": mid, "user_id": "ana"})
        assert r.json() == {"memory_id": mid, "status": "deleted"}
        r = await c.post("/memory/search", json={"query": "Initech", "user_id": "ana"})
        assert mid not in {x["memory_id"] for x in r.json()["results"]}
        assert_problem(await c.request("DELETE", "/memory/delete", json={"memory_id": 10**9, "user_id": "ana"}), 404)

        r = await c.post("/graph/neighbors", json={"user_id": "ana", "entity_name": "Lisbon", "depth": 2})
        assert r.status_code == 200 and r.json()[0]["entity"] == "Lisbon" and r.json()[0]["depth"] == 0
        assert {"entity", "entity_type", "relation", "depth", "strength"} <= set(r.json()[0])
        r = await c.post("/graph/neighbors", json={"user_id": "ana", "entity_name": "Atlantis"})
        assert r.status_code == 200 and r.json() == []  # unknown entity: empty, as in 0.1

        for bad in ({"limit": 0}, {"limit": 101}):
            assert_problem(await c.post("/memory/search", json={"query": "x", "user_id": "ana", **bad}), 422)
        for depth in (0, 6):
            assert_problem(
                await c.post("/graph/neighbors", json={"user_id": "ana", "entity_name": "Lisbon", "depth": depth}), 422
            )


async def test_lifecycle_route_follows_the_engine(api: Api) -> None:
    paths = {path for path, _, _ in flat_routes(api.app)}
    assert "/memory/add" in paths
    has = hasattr(DeepContext, "run_lifecycle")
    assert ("/lifecycle/run" in paths) is has and ("/v1/lifecycle/run" in paths) is has
    if has:
        async with api.client(api.key("acme")) as c:
            await c.post("/memory/add", json={"messages": ANA, "user_id": "ana"})
            r = await c.post("/lifecycle/run", json={"user_id": "ana"})
            assert r.status_code == 200, r.text
            assert r.json()["user_id"] == "ana"  # the external id, never the tenant-scoped one
            r = await c.post("/v1/lifecycle/run", json={"user_id": "ana"})
            assert r.status_code == 200 and r.json()["user_id"] == "ana", r.text
            async with api.client(api.key("acme", read_only=True)) as ro:
                assert_problem(await ro.post("/v1/lifecycle/run", json={"user_id": "ana"}), 403)


async def test_v1_memories_crud_history_and_paging(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        r = await c.post(
            "/v1/memories", json={"user_id": "ana", "messages": ANA, "conversation_id": "trip", "metadata": {"source": "chat"}}
        )
        assert r.status_code == 201, r.text
        created = r.json()
        assert created["conversation_id"] == "trip" and len(created["turn_ids"]) == 2
        for i in range(6):
            r = await c.post(
                "/v1/memories",
                json={
                    "user_id": "ana",
                    "infer": False,
                    "conversation_id": f"c{i % 2}",
                    "messages": [{"role": "user", "content": f"Note number {i} about tea."}],
                },
            )
            assert r.status_code == 201, r.text

        r = await c.get("/v1/memories", params={"user_id": "ana", "limit": 1000})
        everything = r.json()
        assert everything["total"] == len(everything["memories"]) and everything["next_cursor"] is None
        assert all(m["user_id"] == "ana" for m in everything["memories"])
        ids = [m["id"] for m in everything["memories"]]
        assert ids == sorted(ids, reverse=True)

        seen: list[int] = []
        cursor = None
        while True:
            params = {"user_id": "ana", "limit": 3, **({"cursor": cursor} if cursor else {})}
            page = (await c.get("/v1/memories", params=params)).json()
            assert page["total"] == everything["total"] and len(page["memories"]) <= 3
            seen += [m["id"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        assert seen == ids

        r = await c.get("/v1/memories", params=[("user_id", "ana"), ("conversation_id", "c0"), ("tier", "working")])
        c0 = r.json()["memories"]
        assert len(c0) == 3 and all(m["conversation_id"] == "c0" and m["tier"] == "working" for m in c0)
        assert_problem(await c.get("/v1/memories", params={"user_id": "ana", "cursor": "bm90LWEtY3Vyc29y"}), 400)
        assert_problem(await c.get("/v1/memories", params={"user_id": "ana", "tier": "forever"}), 422)

        mid = created["memory_ids"][0]
        got = (await c.get(f"/v1/memories/{mid}", params={"user_id": "ana"})).json()
        assert got["id"] == mid and got["user_id"] == "ana" and got["sources"][0]["conversation_id"] == "trip"
        r = await c.patch(f"/v1/memories/{mid}", json={"user_id": "ana", "text": "Ana moved to Porto."})
        assert r.status_code == 200 and r.json()["text"] == "Ana moved to Porto." and r.json()["user_id"] == "ana"
        r = await c.delete(f"/v1/memories/{mid}", params={"user_id": "ana"})
        assert r.json() == {"memory_id": mid, "status": "deleted"}
        hist = (await c.get(f"/v1/memories/{mid}/history", params={"user_id": "ana"})).json()
        assert [h["event"] for h in hist] == ["ADD", "UPDATE", "DELETE"]
        assert hist[1]["new_text"] == "Ana moved to Porto."
        active = (await c.get("/v1/memories", params={"user_id": "ana", "limit": 1000})).json()
        assert mid not in {m["id"] for m in active["memories"]}
        with_inactive = (await c.get("/v1/memories", params={"user_id": "ana", "include_inactive": True, "limit": 1000})).json()
        assert mid in {m["id"] for m in with_inactive["memories"]}

        for path in (f"/v1/memories/{10**12}", f"/v1/memories/{10**12}/history"):
            assert_problem(await c.get(path, params={"user_id": "ana"}), 404)
        assert_problem(await c.get(f"/v1/memories/{2**70}", params={"user_id": "ana"}), 422)
        assert_problem(await c.get("/v1/memories/0", params={"user_id": "ana"}), 422)


async def test_v1_search_min_score(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        await c.post("/v1/memories", json={"user_id": "ana", "messages": ANA, "conversation_id": "trip"})
        await c.post("/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I play the cello."}]})

        async def found(**extra: object) -> list[dict]:
            # the same search twice: access counts move the ranking (a boost of 1 % per access)
            # less than the gap between these results' scores
            r = await c.post("/v1/search", json={"user_id": "ana", "query": "Globex Corporation", "limit": 20, **extra})
            assert r.status_code == 200, r.text
            return r.json()["results"]

        full = await found()
        scores = [x["score"] for x in full]
        assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
        assert all("fused" in x["legs"] for x in full)
        # the bar in the widest gap between neighbouring scores, so that the clock moving between
        # the searches (recency) cannot carry a result across it
        gap = max(range(len(scores) - 1), key=lambda i: scores[i] - scores[i + 1])
        bar = (scores[gap] + scores[gap + 1]) / 2
        cut = await found(min_score=bar)
        assert cut and {x["memory_id"] for x in cut} == {x["memory_id"] for x in full if x["score"] >= bar}
        assert await found(min_score=1) == []
        seed = await c.post("/memory/search", json={"user_id": "ana", "query": "Globex Corporation", "min_score": bar})
        assert {x["memory_id"] for x in seed.json()["results"]} == {x["memory_id"] for x in cut}
        for bad in (1.5, -0.1, "high"):
            body = assert_problem(await c.post("/v1/search", json={"user_id": "ana", "query": "x", "min_score": bad}), 422)
            assert "min_score" in body["detail"]


async def test_v1_search_graph_turns_users(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        await c.post("/v1/memories", json={"user_id": "ana", "messages": ANA, "conversation_id": "trip"})
        await c.post("/v1/memories", json={"user_id": "bob", "messages": [{"role": "user", "content": "I play the cello."}]})

        r = await c.post("/v1/search", json={"user_id": "ana", "query": "Globex", "tier": ["short_term"], "config": "keyword"})
        res = r.json()
        assert r.status_code == 200 and res["user_id"] == "ana" and res["results"]
        assert all(x["tier"] == "short_term" for x in res["results"])
        r = await c.post("/v1/search", json={"user_id": "ana", "query": "Lisbon", "conversation_id": ["elsewhere"]})
        assert r.json()["results"] == []
        body = assert_problem(
            await c.post(
                "/v1/search",
                json={"user_id": "ana", "query": "x", "after": "2025-01-02T00:00:00Z", "before": "2025-01-01T00:00:00Z"},
            ),
            400,
        )
        assert "after" in body["detail"]

        r = await c.get("/v1/graph/neighbours", params={"user_id": "ana", "entity": "globex corporation", "depth": 1})
        g = r.json()
        assert g["entity"] == "Globex Corporation" and g["neighbours"][0]["depth"] == 0
        assert max(n["depth"] for n in g["neighbours"]) <= 1
        assert_problem(await c.get("/v1/graph/neighbours", params={"user_id": "ana", "entity": "Atlantis"}), 404)

        turns = (await c.get("/v1/turns", params={"user_id": "ana", "conversation_id": "trip"})).json()
        assert [t["content"] for t in turns] == [m["content"] for m in ANA]
        assert turns[1]["parent_ids"] == [turns[0]["id"]] and turns[0]["user_id"] == "ana"
        assert (await c.get("/v1/turns", params={"user_id": "ana", "conversation_id": "nope"})).json() == []

        assert (await c.get("/v1/users")).json() == {"users": ["ana", "bob"], "next_cursor": None}
        stats = (await c.get("/v1/users/ana/stats")).json()
        assert stats["turns"] == 2 and stats["memories"] >= 2
        r = await c.delete("/v1/users/ana")
        assert r.json()["user_id"] == "ana" and r.json()["deleted"]["turns"] == 2
        assert (await c.get("/v1/users")).json() == {"users": ["bob"], "next_cursor": None}
        assert (await c.get("/v1/users/bob/stats")).json()["turns"] == 1
        assert (await c.get("/v1/memories", params={"user_id": "ana"})).json()["total"] == 0


async def test_tenant_is_part_of_the_stored_user_id(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        await c.post("/v1/memories", json={"user_id": "ana", "messages": ANA})
    assert await api.ctx.users() == ["acme/ana"]
    assert (await api.ctx.search("Globex", "acme/ana")).results


async def test_health_and_readiness(api: Api) -> None:
    async with api.client() as c:  # public: no key
        assert (await c.get("/v1/health")).json()["status"] == "ok"
        r = await c.get("/v1/ready")
        assert r.status_code == 200 and r.json()["database"] == "ok" and r.json()["schema_version"] >= 1


async def test_errors_are_problem_details_without_internals(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    @api.app.get("/boom-for-test")
    async def boom() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    async with api.client(api.key("acme")) as c:
        assert_problem(await c.get("/no/such/path"), 404)
        assert_problem(await c.put("/v1/search", json={}), 405)
        body = assert_problem(await c.post("/v1/search", json={"user_id": "ana", "query": "x" * 5000, "extra": 1}), 422)
        assert body["errors"] and all(set(e) == {"loc", "msg", "type"} for e in body["errors"])
        assert "xxxxxxxxxx" not in str(body)  # the input is not echoed
        assert_problem(await c.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"}), 422)
        for bad in (
            {"query": "nul\x00byte"},
            {"query": "lone \ud800 surrogate"},
            {"metadata": {"x": float("nan")}},
            {"metadata": {"x": 2**70}},
            {"after": "0001-01-01T00:00:00+05:00"},
        ):
            payload = {"user_id": "ana", "query": "q", **bad}
            import json as _json

            raw = _json.dumps(payload, allow_nan=True).encode()
            assert_problem(await c.post("/v1/search", content=raw, headers={"content-type": "application/json"}), 422)
        with caplog.at_level(logging.ERROR, logger="deepcontext.server"):
            r = await c.get("/boom-for-test")
        body = assert_problem(r, 500)
        assert "secret" not in r.text and "RuntimeError" not in r.text and "Traceback" not in r.text
        assert body["detail"] == "internal server error"
        assert any(body["request_id"] in rec.getMessage() and rec.exc_info for rec in caplog.records)


async def test_body_size_limit(tmp_path: Path) -> None:
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/b.db", embedder=HashEmbedder(256), max_body_bytes=4096)
    app = create_app(ctx)
    async with running(app):
        api = Api(app, ctx)
        async with api.client(api.key("acme")) as c:
            msg = [{"role": "user", "content": "y" * 5000}]
            body = assert_problem(await c.post("/v1/memories", json={"user_id": "ana", "messages": msg}), 413)
            assert "4096" in body["detail"]

            async def chunks():  # no Content-Length: streamed
                for _ in range(10):
                    yield b"z" * 1000

            assert_problem(await c.post("/v1/search", content=chunks()), 413)
            ok = [{"role": "user", "content": "small enough"}]
            assert (await c.post("/v1/memories", json={"user_id": "ana", "messages": ok})).status_code == 201
    await ctx.close()


async def test_engine_failures_are_503_without_details(tmp_path: Path) -> None:
    db = tmp_path / "gone.db"
    ctx = DeepContext(database_url=f"sqlite:///{db}", embedder=HashEmbedder(256))
    app = create_app(ctx)
    async with running(app):
        api = Api(app, ctx)
        key = api.key("acme")
        async with api.client(key) as c:
            assert (await c.post("/v1/search", json={"user_id": "ana", "query": "x"})).status_code == 200
            ctx.store.close()  # the database file disappears under the running server
            for p in tmp_path.glob("gone.db*"):
                p.unlink()
            r = await c.get("/v1/ready")
            assert_problem(r, 503)
            r = await c.post("/v1/search", json={"user_id": "ana", "query": "x"}, headers={"Authorization": f"Bearer {key}"})
            body = assert_problem(r, 503)  # the key table is gone too: a storage error, never a 500
            assert "database" in body["detail"]
            assert "no such table" not in r.text and "sqlite" not in r.text.lower()
    await ctx.close()


async def test_cors_off_by_default_and_on_when_configured(api: Api, tmp_path: Path) -> None:
    async with api.client(api.key("acme")) as c:
        r = await c.get("/v1/health", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in r.headers
        r = await c.options("/v1/search", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in r.headers

    ctx = DeepContext(
        database_url=f"sqlite:///{tmp_path}/cors.db",
        embedder=HashEmbedder(256),
        cors_origins="https://app.example, https://other.example",
    )
    app = create_app(ctx)
    async with running(app):
        async with Api(app, ctx).client() as c:
            r = await c.options(
                "/v1/search",
                headers={
                    "Origin": "https://app.example",
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization",
                },
            )
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "https://app.example"
            r = await c.get("/v1/health", headers={"Origin": "https://evil.example"})
            assert "access-control-allow-origin" not in r.headers
    await ctx.close()


async def test_without_auth_only_loopback(local_api: Api) -> None:
    async with local_api.client() as c:  # loopback client, no key
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": ANA})
        assert r.status_code == 201
    assert await local_api.ctx.users() == ["ana"]  # no tenant: the library's own ids
    for host in ("10.0.0.7", "192.168.1.2", "2001:db8::1"):
        async with local_api.client(client_host=host) as c:
            body = assert_problem(await c.get("/v1/memories", params={"user_id": "ana"}), 403)
            assert "loopback" in body["detail"]
    async with local_api.client(client_host="::1") as c:
        assert (await c.get("/v1/memories", params={"user_id": "ana"})).json()["total"] >= 1
    # a page whose name was made to resolve to 127.0.0.1 (DNS rebinding) names its own host
    async with local_api.client() as c:
        for host in ("rebind.example", "rebind.example:8000", "127.0.0.1.nip.io:8000"):
            body = assert_problem(await c.get("/v1/memories", params={"user_id": "ana"}, headers={"Host": host}), 403)
            assert "host" in body["detail"], host
        for host in ("localhost:8000", "[::1]:8000", "127.0.0.1"):
            assert (await c.get("/v1/memories", params={"user_id": "ana"}, headers={"Host": host})).status_code == 200, host


def test_no_auth_refused_on_public_addresses(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.com"):
        with pytest.raises(ConfigurationError, match="refusing to serve without authentication"):
            create_app(DeepContext(database_url=f"sqlite:///{tmp_path}/x.db", require_auth=False, server_host=host).settings)
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        create_app(DeepContext(database_url=f"sqlite:///{tmp_path}/x.db", require_auth=False, server_host=host).settings)
    create_app(DeepContext(database_url=f"sqlite:///{tmp_path}/x.db", server_host="0.0.0.0").settings)  # keys: fine


async def test_v1_search_include_superseded(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        msgs = [{"role": "user", "content": "I live in Madrid."}]
        await c.post("/v1/memories", json={"user_id": "ana", "messages": msgs, "timestamp": "2025-01-01T00:00:00Z"})
        msgs = [{"role": "user", "content": "I moved to Lisbon."}]
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": msgs, "timestamp": "2025-03-01T00:00:00Z"})
        assert r.json()["memories_replaced"] == 1
        body = {"user_id": "ana", "query": "Where does the user live?"}
        now = (await c.post("/v1/search", json=body)).json()["results"]
        assert now and all(x["superseded_by"] is None for x in now)
        everything = (await c.post("/v1/search", json={**body, "include_superseded": True})).json()["results"]
        old = [x for x in everything if x["superseded_by"] is not None]
        assert len(old) == 1 and "Madrid" in old[0]["text"]
        assert_problem(await c.post("/v1/search", json={**body, "include_superseded": "sometimes"}), 422)


async def test_users_display_name(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        assert (await c.get("/v1/users/kim")).json() == {"user_id": "kim", "name": None}
        r = await c.put("/v1/users/kim", json={"name": "Kim"})
        assert r.status_code == 200, r.text
        assert r.json() == {"user_id": "kim", "name": "Kim"}
        r = await c.post(
            "/v1/memories",
            json={"messages": [{"role": "user", "content": "I live in Oslo and work at Equinor."}], "user_id": "kim"},
        )
        assert r.status_code in (200, 201), r.text
        texts = [m["text"] for m in (await c.get("/v1/memories", params={"user_id": "kim"})).json()["memories"]]
        assert {"Kim lives in Oslo.", "Kim works at Equinor."} <= set(texts)
        assert_problem(await c.put("/v1/users/kim", json={"name": ""}), 422)
        assert_problem(await c.put("/v1/users/kim", json={"name": "Kim", "age": 3}), 422)
