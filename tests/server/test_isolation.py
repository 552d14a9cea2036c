"""No leak across tenants or users: a randomised walk over every endpoint with scoped and unscoped
keys of two tenants that use the same user ids."""

from __future__ import annotations

import random
import re

import httpx
import pytest

from tests.server.helpers import Api

TENANTS = ("acme", "globex")
USERS = [f"u{i}" for i in range(6)]
WORDS = ["apple", "river", "violin", "orbit", "canyon", "pepper", "harbor", "quartz", "maple", "lantern", "comet", "velvet"]


def marker(tenant: str, user: str) -> str:
    return f"mk{tenant[0]}{user}zq"  # e.g. mkau3zq: unique, never a substring of another marker


MARKER_RE = re.compile(r"mk[ag]u\dzq")


@pytest.mark.slow  # one of the longest tests
async def test_randomised_isolation(api: Api) -> None:
    rng = random.Random(20240601)
    full = {t: api.key(t) for t in TENANTS}
    keys = {
        "acme-all": (full["acme"], "acme", None, False),
        "globex-all": (full["globex"], "globex", None, False),
        "acme-u0u1": (api.key("acme", users=["u0", "u1"]), "acme", {"u0", "u1"}, False),
        "acme-ro": (api.key("acme", read_only=True), "acme", None, True),
        "globex-u2-ro": (api.key("globex", users=["u2"], read_only=True), "globex", {"u2"}, True),
    }
    owned: dict[tuple[str, str], set[int]] = {}
    for tenant in TENANTS:
        async with api.client(full[tenant]) as c:
            for u in USERS:
                ids: set[int] = set()
                for k in range(3):
                    msgs = [
                        {
                            "role": "user",
                            "name": "Sam",
                            "content": f"Sam keeps the {marker(tenant, u)} {rng.choice(WORDS)} note in Lisbon, number {k}.",
                        }
                    ]
                    r = await c.post("/v1/memories", json={"user_id": u, "messages": msgs, "conversation_id": "shared"})
                    assert r.status_code == 201, r.text
                    ids |= set(r.json()["memory_ids"])
                owned[(tenant, u)] = ids
    all_ids = {(t, u): ids for (t, u), ids in owned.items()}

    def check(r: httpx.Response, tenant: str, user: str | None) -> None:
        assert r.status_code < 500, r.text
        found = set(MARKER_RE.findall(r.text))
        allowed = {marker(tenant, user)} if user else set()
        assert found <= allowed, (tenant, user, found - allowed, r.request.url)

    async def request(c: httpx.AsyncClient, tenant: str, user: str, write: bool) -> httpx.Response:
        other_id = rng.choice(sorted(all_ids[(rng.choice(TENANTS), rng.choice(USERS))]))
        op = rng.randrange(14)
        if op == 0:
            return await c.post("/v1/search", json={"user_id": user, "query": f"Lisbon note {rng.choice(WORDS)} Sam"})
        if op == 1:
            return await c.post("/memory/search", json={"user_id": user, "query": "Sam keeps the note", "limit": 100})
        if op == 2:
            return await c.get("/v1/memories", params={"user_id": user, "limit": 1000, "include_inactive": True})
        if op == 3:
            return await c.get(f"/v1/memories/{other_id}", params={"user_id": user})
        if op == 4:
            return await c.get(f"/v1/memories/{other_id}/history", params={"user_id": user})
        if op == 5:
            return await c.get("/v1/turns", params={"user_id": user, "conversation_id": "shared", "limit": 1000})
        if op == 6:
            return await c.get("/v1/graph/neighbours", params={"user_id": user, "entity": "Sam", "depth": 3})
        if op == 7:
            return await c.post("/graph/neighbors", json={"user_id": user, "entity_name": "Lisbon", "depth": 5})
        if op == 8:
            return await c.get(f"/v1/users/{user}/stats")
        if op == 9:
            return await c.get("/v1/users")
        if op == 10:
            return await c.patch(f"/v1/memories/{other_id}", json={"user_id": user, "text": "overwritten text"})
        if op == 11:
            return await c.put("/memory/update", json={"memory_id": other_id, "user_id": user, "text": "overwritten text"})
        if op == 12:
            return await c.delete(f"/v1/memories/{other_id}", params={"user_id": user})
        return await c.request("DELETE", "/memory/delete", json={"memory_id": other_id, "user_id": user})

    clients = {name: api.client(k) for name, (k, *_rest) in keys.items()}
    try:
        for _ in range(400):
            name = rng.choice(sorted(keys))
            _, tenant, scope, read_only = keys[name]
            user = rng.choice(USERS)
            r = await request(clients[name], tenant, user, not read_only)
            path = r.request.url.path
            is_write = r.request.method in ("PATCH", "PUT", "DELETE")
            if scope is not None and user not in scope and path != "/v1/users":
                assert r.status_code == 403, (name, user, path, r.text)
            elif read_only and is_write:
                assert r.status_code == 403, (name, path, r.text)
            check(r, tenant, None if path == "/v1/users" else user)
            if path == "/v1/users":
                listed = set(r.json()["users"])
                assert listed <= (scope or set(USERS))
            if r.status_code == 200 and r.request.method == "PATCH":
                mid = int(path.rsplit("/", 1)[1])
                assert mid in all_ids[(tenant, user)]  # only ever the caller's own memory
    finally:
        for c in clients.values():
            await c.aclose()

    # every memory changed through the API belonged to the tenant and user that changed it
    for (tenant, user), ids in owned.items():
        async with api.client(full[tenant]) as c:
            page = (await c.get("/v1/memories", params={"user_id": user, "include_inactive": True, "limit": 1000})).json()
            assert {m["id"] for m in page["memories"]} == ids
            for m in page["memories"]:
                if marker(tenant, user) not in m["text"]:
                    assert m["text"] == "overwritten text"

    # deleting a user of one tenant leaves the same user id of the other tenant intact
    await api.ctx.flush()  # the activity log of the searches above is written after they return
    async with api.client(full["acme"]) as a, api.client(full["globex"]) as g:
        before = (await g.get("/v1/users/u3/stats")).json()
        r = await a.delete("/v1/users/u3")
        assert r.status_code == 200 and r.json()["deleted"]["turns"] == 3
        assert (await a.get("/v1/users/u3/stats")).json()["turns"] == 0
        assert (await g.get("/v1/users/u3/stats")).json() == before and before["turns"] == 3
        assert "u3" not in (await a.get("/v1/users")).json()["users"]
        assert "u3" in (await g.get("/v1/users")).json()["users"]
        r = await g.post("/v1/search", json={"user_id": "u3", "query": "Sam keeps the note"})
        assert marker("globex", "u3") in r.text
