"""A read-only key leaves no trace in the data: whatever it reads over REST or in the web inspector
(searches, contexts, lists, pages), every table but the keys' own and the activity log is unchanged
afterwards, access counts included; the activity log records its calls, under its key. The same searches with a read-write key do count accesses (so the comparison
would see them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from tests.server.helpers import Api
from tests.server.test_auth import READS_BY_POST, routes
from tests.server.test_inspector import browser, ui_routes

QUERY = "Where does Ana live?"
BODIES: dict[str, dict[str, Any]] = {
    "/v1/search": {"user_id": "ana", "query": QUERY},
    "/memory/search": {"user_id": "ana", "query": QUERY},
    "/v1/context": {"user_id": "ana", "query": QUERY},
    "/graph/neighbors": {"user_id": "ana", "entity_name": "Lisbon"},
}


def snapshot(api: Api) -> dict[str, list[tuple[Any, ...]]]:
    store: Any = api.ctx.store
    with store.connection() as conn:
        return {
            t.name: sorted((tuple(map(repr, r)) for r in conn.execute(select(t))), key=str)
            for t in store.metadata.sorted_tables
            # sign-in bookkeeping and the record of calls, not user data
            if t.name not in ("api_keys", "ui_sessions", "activity", "activity_hits")
        }


async def read_everything(api: Api, key: str, mid: int) -> None:
    async with api.client(key) as c:
        for method, path, _ in routes(api.app):
            if method == "GET" and "health" not in path and "ready" not in path:
                url = path.replace("{memory_id}", str(mid)).replace("{user_id}", "ana")
                r = await c.get(url, params={"user_id": "ana", "conversation_id": "c1"})
                assert r.status_code < 500, (path, r.text)
        for _, path in sorted(READS_BY_POST):
            r = await c.post(path, json=BODIES[path])
            assert r.status_code == 200, (path, r.text)
        assert "Lisbon" in (await c.post("/v1/search", json=BODIES["/v1/search"])).text
    await api.ctx.flush()
    call = (await api.ctx.activity("acme/ana", limit=1)).calls[0].id
    async with browser(api, key) as (c, _):
        for method, path in ui_routes(api.app):
            if method == "GET" and path not in ("/login", "/static/{name}"):
                url = "/ui" + path.replace("{memory_id}", str(mid)).replace("{call_id}", str(call))
                r = await c.get(url, params={"user": "ana", "q": QUERY})
                assert r.status_code == 200, (path, r.status_code)
    await api.ctx.flush()


async def test_a_read_only_key_leaves_no_trace(api: Api) -> None:
    r = await api.ctx.add([{"role": "user", "name": "Ana", "content": "I live in Lisbon and work at Globex."}], "acme/ana", "c1")
    mid = r.memory_ids[0]
    await api.ctx.flush()
    before = snapshot(api)
    key = api.key("acme", read_only=True)
    await read_everything(api, key, mid)
    assert snapshot(api) == before
    calls = (await api.ctx.activity("acme/ana", via="rest", limit=200)).calls
    assert calls and {c.key_id for c in calls} == {key.split("_")[1]}
    async with api.client(api.key("acme")) as c:  # a read-write key's search counts its accesses
        assert (await c.post("/v1/search", json=BODIES["/v1/search"])).status_code == 200
    await api.ctx.flush()
    assert snapshot(api)["memories"] != before["memories"]
