"""POST /v1/context over the ASGI app, on SQLite and PostgreSQL: the budgeted context, tenants,
user-limited and read-only keys, validation."""

from __future__ import annotations

from deepcontext.query import MemorySchema
from tests.server.helpers import Api

ANA = [
    {"role": "user", "name": "Ana", "content": "I fly to Lisbon on June 10 for the conference.",
     "timestamp": "2025-05-01T10:00:00Z"},
    {"role": "assistant", "content": "Noted the Lisbon flight."},
]  # fmt: skip
PROBLEM = "application/problem+json"


async def test_context_endpoint(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        r = await c.post("/v1/memories", json={"user_id": "ana", "messages": ANA, "conversation_id": "trip"})
        assert r.status_code == 201, r.text
        await c.post("/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I play the cello."}]})
    cq = await api.ctx.tiers("acme/ana", MemorySchema(sections=["travel"]))  # the tenant's stored user id
    cq.state.set("travel", "[travel]\nhotel near the Lisbon conference centre\n")

    async with api.client(api.key("acme")) as c:
        body = {"user_id": "ana", "query": "When do I fly to Lisbon?", "conversation_id": "trip", "budget_tokens": 400}
        r = await c.post("/v1/context", json=body)
        assert r.status_code == 200, r.text
        res = r.json()
        assert res["user_id"] == "ana" and res["conversation_id"] == "trip" and res["budget_tokens"] == 400
        assert res["total_tokens"] <= 400 and sum(p["tokens"] for p in res["parts"]) == res["total_tokens"]
        text = res["text"]
        assert "[said 2025-05-01, event 2025-06-10] Ana flies to Lisbon on June 10" in text
        assert "[travel]\nhotel near the Lisbon conference centre" in text
        assert "user: I fly to Lisbon on June 10 for the conference." in text and "cello" not in text
        memories = next(p for p in res["parts"] if p["name"] == "memories")
        assert memories["items"] and all(i["why"] and i["tokens"] > 0 for i in memories["items"])
        assert {lo["cause"] for lo in res["left_out"]} >= {"relevance", "duplicate"}

        small = (await c.post("/v1/context", json={**body, "budget_tokens": 20})).json()
        assert small["total_tokens"] <= 20 and any(lo["cause"] == "budget" for lo in small["left_out"])
        off = (await c.post("/v1/context", json={**body, "shares": {"tiers": 0, "conversation": 0}})).json()
        assert "## Conversation so far" not in off["text"] and "[travel]" not in off["text"]
        strict = (await c.post("/v1/context", json={**body, "min_intent": 1.0})).json()
        assert "[travel]" not in strict["text"]

    async with api.client(api.key("globex")) as c:  # another tenant, same user id: nothing
        r = await c.post("/v1/context", json={"user_id": "ana", "query": "When do I fly to Lisbon?", "conversation_id": "trip"})
        assert r.status_code == 200 and r.json()["text"] == "" and r.json()["total_tokens"] == 0
    async with api.client(api.key("acme", read_only=True)) as c:  # reading is allowed to read-only keys
        r = await c.post("/v1/context", json={"user_id": "ana", "query": "Lisbon"})
        assert r.status_code == 200 and "Lisbon" in r.json()["text"]
    async with api.client(api.key("acme", users=["bob"])) as c:
        r = await c.post("/v1/context", json={"user_id": "ana", "query": "Lisbon"})
        assert r.status_code == 403 and "may not access" in r.json()["detail"]


async def test_context_validation(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        for body in (
            {"user_id": "ana", "query": ""},
            {"user_id": "ana", "query": "x", "budget_tokens": 0},
            {"user_id": "ana", "query": "x", "budget_tokens": 10**9},
            {"user_id": "ana/x", "query": "x"},
            {"user_id": "ana", "query": "x", "shares": {"bogus": 1}},
            {"user_id": "ana", "query": "x", "shares": {"memories": -1}},
            {"user_id": "ana", "query": "x", "min_intent": 2},
            {"user_id": "ana", "query": "x", "unknown": 1},
            {"user_id": "ana", "query": "   "},  # blank: the schema's pattern says so
        ):
            r = await c.post("/v1/context", json=body)
            assert r.status_code == 422 and r.headers["content-type"] == PROBLEM, (body, r.text)
        zero = {"pinned": 0, "memories": 0, "tiers": 0, "conversation": 0}
        r = await c.post("/v1/context", json={"user_id": "ana", "query": "x", "shares": zero})
        assert r.status_code == 400 and "share" in r.json()["detail"]
