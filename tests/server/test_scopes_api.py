"""Agent and run scopes and metadata filter operators over REST (both backends) and MCP."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.server.helpers import ROOT, Api, cli_env
from tests.server.test_api import assert_problem


def note(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_rest_scopes_and_filter_operators(api: Api) -> None:
    async with api.client(api.key("acme")) as c:
        for user, text, extra in [
            ("ana", "I swim on Fridays.", {"agent_id": "coach", "run_id": "r1", "metadata": {"level": 3, 'team" x': "red"}}),
            ("ana", "I cycle to work.", {"agent_id": "coach", "run_id": "r2", "metadata": {"level": 7}}),
            ("ana", "I read poetry at night.", {"metadata": {"level": 1}}),
            ("bo", "I swim in the sea.", {"agent_id": "coach", "run_id": "r1", "metadata": {"level": 3, 'team" x': "red"}}),
        ]:
            r = await c.post("/v1/memories", json={"user_id": user, "messages": note(text), "infer": False, **extra})
            assert r.status_code == 201, r.text

        async def search(**body: Any) -> list[dict[str, Any]]:
            r = await c.post("/v1/search", json={"user_id": "ana", "query": "swim cycle poetry", **body})
            assert r.status_code == 200, r.text
            return r.json()["results"]

        assert {x["agent_id"] for x in await search(agent_id="coach")} == {"coach"}
        assert {(x["agent_id"], x["run_id"]) for x in await search(agent_id="coach", run_id=["r1"])} == {("coach", "r1")}
        assert len(await search()) == 3 and await search(agent_id="nobody") == []
        # a key with a double quote (once a JSON path error answered 503) is an ordinary key
        hits = await search(metadata={'team" x': "red"})
        assert [x["text"] for x in hits] == ["User: I swim on Fridays."]
        assert len(await search(metadata={"level": {"gte": 3}})) == 2
        assert len(await search(metadata={"NOT": [{"level": {"in": [1, 7]}}]})) == 1
        body = assert_problem(
            await c.post("/v1/search", json={"user_id": "ana", "query": "x", "metadata": {"level": {"near": 2}}}), 400
        )
        assert "unknown operator" in body["detail"]
        assert_problem(await c.post("/v1/search", json={"user_id": "ana", "query": "x", "agent_id": ""}), 422)

        r = await c.post("/v1/context", json={"user_id": "ana", "query": "swim cycle poetry", "agent_id": "coach",
                                              "min_similarity": 0, "min_intent": 0})  # fmt: skip
        assert r.status_code == 200, r.text
        assert "swim" in r.json()["text"] and "poetry" not in r.json()["text"]

        page = (await c.get("/v1/memories", params=[("user_id", "ana"), ("agent_id", "coach"), ("run_id", "r2")])).json()
        assert [(m["agent_id"], m["run_id"], m["user_id"]) for m in page["memories"]] == [("coach", "r2", "ana")]
        page = (await c.get("/v1/memories", params={"user_id": "ana", "metadata": '{"level": {"gt": 2}}'})).json()
        assert sorted(m["metadata"]["level"] for m in page["memories"]) == [3, 7]
        assert_problem(await c.get("/v1/memories", params={"user_id": "ana", "metadata": "{nope"}), 400)
        page = (await c.get("/v1/memories", params={"user_id": "bo", "agent_id": "coach"})).json()
        assert page["total"] == 1 and page["memories"][0]["user_id"] == "bo"


@pytest.mark.slow  # a stdio server process
async def test_mcp_tools_take_scopes_and_filters(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "deepcontext", "--db", f"sqlite:///{tmp_path}/m.db", "--embedder", "hash", "mcp", "--user", "ana"],
        env=cli_env(),
        cwd=str(ROOT),
    )

    def data(result: Any) -> Any:
        assert not result.is_error, result.content
        return result.structured_content if result.structured_content is not None else json.loads(result.content[0].text)

    async with Client(params) as c:
        await c.call_tool(
            "add_memories", {"messages": "I swim on Fridays.", "agent_id": "coach", "run_id": "r1", "metadata": {"n": 2}}
        )
        await c.call_tool("add_memories", {"messages": "I read poetry at night.", "metadata": {"n": 9}})
        found = data(await c.call_tool("search_memories", {"query": "swim poetry", "agent_id": "coach"}))
        assert found["results"] and {(r["agent_id"], r["run_id"]) for r in found["results"]} == {("coach", "r1")}
        found = data(await c.call_tool("search_memories", {"query": "swim poetry", "metadata": {"n": {"gt": 5}}}))
        assert found["results"] and all("poetry" in r["text"] for r in found["results"])
        text = (await c.call_tool("get_context", {"query": "swim poetry", "agent_id": "coach"})).content[0].text
        assert "poetry" not in text
        page = data(await c.call_tool("list_memories", {"run_id": "r1"}))
        assert page["total"] >= 1 and {m["run_id"] for m in page["memories"]} == {"r1"}
        bad = await c.call_tool("search_memories", {"query": "x", "metadata": {"n": {"near": 1}}})
        assert bad.is_error and "unknown operator" in bad.content[0].text
