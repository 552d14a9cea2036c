"""The MCP server through the official SDK's own client: `deepcontext mcp` as a stdio subprocess and
`deepcontext mcp --http` (streamable HTTP, API keys) as a real server; its refusal to serve without
keys off loopback runs the command in process."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from deepcontext import DeepContext
from tests.server.helpers import ROOT, cli_env, serve
from tests.support.cli import run_cli

TOOLS = {"add_memories", "search_memories", "get_context", "list_memories", "delete_memory", "graph_neighbours"}


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error
    return result.content[0].text


@pytest.mark.slow
async def test_stdio(db_url: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "deepcontext", "--db", db_url, "--embedder", "hash", "mcp", "--user", "ana"],
        env=cli_env(),
        cwd=str(ROOT),
    )
    async with Client(params) as c:
        listed = await c.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        search_tool = next(t for t in listed.tools if t.name == "search_memories")
        assert "query" in search_tool.input_schema["properties"] and "user_id" in search_tool.input_schema["properties"]

        added = data(await c.call_tool("add_memories", {"messages": "I live in Lisbon and I work at Globex Corporation."}))
        assert added["memory_ids"] and "Lisbon" in added["entities"]
        msgs = [
            {"role": "user", "name": "Bo", "content": "I play the cello on Sundays."},
            {"role": "assistant", "content": "Lovely."},
        ]
        data(await c.call_tool("add_memories", {"messages": msgs, "user_id": "bo", "conversation_id": "music"}))

        found = data(await c.call_tool("search_memories", {"query": "Where does the user work?"}))
        assert any("Globex" in r["text"] for r in found["results"])
        assert not any("cello" in r["text"] for r in found["results"])  # the default user only
        found = data(await c.call_tool("search_memories", {"query": "cello", "user_id": "bo", "tier": "working"}))
        assert found["results"] and all(r["tier"] == "working" for r in found["results"])
        # scores are calibrated relevance in [0, 1]; min_score leaves out those below it
        scores = [r["score"] for r in data(await c.call_tool("search_memories", {"query": "Globex Corporation"}))["results"]]
        assert scores and all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
        bar = (scores[0] + scores[-1]) / 2
        kept = data(await c.call_tool("search_memories", {"query": "Globex Corporation", "min_score": bar}))
        assert all(r["score"] >= bar for r in kept["results"])
        assert data(await c.call_tool("search_memories", {"query": "Globex Corporation", "min_score": 1}))["results"] == []
        assert (await c.call_tool("search_memories", {"query": "x", "min_score": 1.5})).is_error

        data(await c.call_tool("add_memories", {"messages": "I moved to Porto.", "user_id": "bo"}))
        data(await c.call_tool("add_memories", {"messages": "I moved to Faro.", "user_id": "bo"}))
        found = data(await c.call_tool("search_memories", {"query": "Where does the user live?", "user_id": "bo"}))
        assert all(r["superseded_by"] is None for r in found["results"])
        found = data(await c.call_tool("search_memories", {"query": "Where does the user live?", "user_id": "bo",
                                                           "include_superseded": True}))  # fmt: skip
        assert any(r["superseded_by"] is not None and "Porto" in r["text"] for r in found["results"])

        text = (await c.call_tool("get_context", {"query": "Lisbon Globex"})).content[0].text
        assert text.startswith("## Relevant memories\n") and "Lisbon" in text and "Globex" in text
        assert "cello" not in text  # another user's
        text = (await c.call_tool("get_context", {"query": "cello", "user_id": "bo", "conversation_id": "music",
                                                  "budget_tokens": 60})).content[0].text  # fmt: skip
        assert "## Conversation so far" in text and "user: I play the cello on Sundays." in text
        text = (await c.call_tool("get_context", {"query": "volcanoes of Iceland", "user_id": "nobody"})).content[0].text
        assert text == "Nothing remembered about nobody bears on: volcanoes of Iceland"
        assert (await c.call_tool("get_context", {"query": "x", "budget_tokens": 0})).is_error

        page = data(await c.call_tool("list_memories", {"limit": 1}))
        assert page["total"] >= 2 and len(page["memories"]) == 1 and page["next_cursor"]
        page2 = data(await c.call_tool("list_memories", {"limit": 50, "cursor": page["next_cursor"]}))
        assert page["memories"][0]["memory_id"] not in {m["memory_id"] for m in page2["memories"]}

        hood = data(await c.call_tool("graph_neighbours", {"entity": "lisbon"}))
        assert hood["neighbours"][0]["entity"] == "Lisbon"
        assert "not found" in error_text(await c.call_tool("graph_neighbours", {"entity": "Atlantis"}))

        mid = added["memory_ids"][0]
        assert "not found" in error_text(await c.call_tool("delete_memory", {"memory_id": mid, "user_id": "bo"}))
        assert data(await c.call_tool("delete_memory", {"memory_id": mid})) == {"memory_id": mid, "status": "deleted"}
        assert "'/'" in error_text(await c.call_tool("search_memories", {"query": "x", "user_id": "acme/ana"}))
        assert (await c.call_tool("delete_memory", {"memory_id": 0})).is_error  # schema: memory_id >= 1

    # stdio uses the library's own user ids
    async with DeepContext(database_url=db_url, embedder="hash") as ctx:
        assert await ctx.users() == ["ana", "bo"]
        assert (await ctx.get(mid, "ana")).status.value == "deleted"
        # MCP calls are recorded by default, the library's reads above are not
        calls = (await ctx.activity("bo")).calls
        assert {c.via for c in calls} == {"mcp"} and {c.kind for c in calls} == {"search", "context"}
        assert calls[0].query == "cello" and calls[0].kind == "context"


@pytest.mark.slow
async def test_stdio_without_default_user(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "deepcontext", "--db", f"sqlite:///{tmp_path}/n.db", "--embedder", "hash", "mcp", "--tenant", "home"],
        env=cli_env(),
        cwd=str(ROOT),
    )
    async with Client(params) as c:
        assert "user_id is required" in error_text(await c.call_tool("search_memories", {"query": "x"}))
        data(await c.call_tool("add_memories", {"messages": "I like tea.", "user_id": "me"}))
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/n.db", embedder="hash") as ctx:
        assert await ctx.users() == ["home/me"]  # --tenant: the local tenant


async def _keys(url: str) -> dict[str, str]:
    async with DeepContext(database_url=url, embedder="hash") as ctx:
        now = ctx.clock.now()
        return {
            "acme": ctx.store.keys.create("acme", now=now)[1],
            "globex": ctx.store.keys.create("globex", now=now)[1],
            "acme-ro": ctx.store.keys.create("acme", now=now, read_only=True)[1],
            "acme-bob": ctx.store.keys.create("acme", now=now, user_ids=["bob"])[1],
        }


def _client(url: str, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http))


@pytest.mark.slow
async def test_streamable_http_with_keys(db_url: str) -> None:
    keys = await _keys(db_url)
    with serve(["--db", db_url, "--embedder", "hash", "mcp", "--http", "--user", "ana"], health="/mcp") as server:
        url = server.url + "/mcp"
        r = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
        r = httpx.post(url, json={}, headers={"Authorization": f"Bearer {keys['acme']}x"})
        assert r.status_code == 401

        async with _client(url, keys["acme"]) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            added = data(await c.call_tool("add_memories", {"messages": "I keep bees in Porto."}))
            found = data(await c.call_tool("search_memories", {"query": "bees"}))
            assert {r["memory_id"] for r in found["results"]} & set(added["memory_ids"])
        async with _client(url, keys["globex"]) as c:  # same user id, other tenant: nothing
            assert data(await c.call_tool("search_memories", {"query": "bees Porto"}))["results"] == []
            assert data(await c.call_tool("list_memories", {}))["total"] == 0
            mid = added["memory_ids"][0]
            assert "not found" in error_text(await c.call_tool("delete_memory", {"memory_id": mid}))
        async with _client(url, keys["acme-ro"]) as c:  # reads that count no access (checked below)
            read = {r["memory_id"] for r in data(await c.call_tool("search_memories", {"query": "bees"}))["results"]}
            assert read and "bees" in str(await c.call_tool("get_context", {"query": "bees"}))
            assert "read-only" in error_text(await c.call_tool("add_memories", {"messages": "hi"}))
            assert "read-only" in error_text(await c.call_tool("delete_memory", {"memory_id": mid}))
        async with _client(url, keys["acme-bob"]) as c:
            assert "may not access" in error_text(await c.call_tool("search_memories", {"query": "bees"}))
            data(await c.call_tool("add_memories", {"messages": "I am Bob.", "user_id": "bob"}))

    async with DeepContext(database_url=db_url, embedder="hash") as ctx:
        assert await ctx.users() == ["acme/ana", "acme/bob"]
        assert (await ctx.get(mid, "acme/ana")).status.value == "active"
        counted = {r["memory_id"] for r in found["results"]}  # the read-write key's search only
        assert {m: (await ctx.get(m, "acme/ana")).access_count for m in read} == {m: int(m in counted) for m in read}


def test_http_without_keys_is_refused_off_loopback(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/na.db"
    p = run_cli(
        ["--db", url, "--embedder", "hash", "mcp", "--http", "--host", "0.0.0.0", "--no-auth", "--port", "1"],
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 2 and "refusing to serve without authentication" in p.stderr


@pytest.mark.slow
async def test_http_without_keys_on_loopback(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/na.db"
    with serve(["--db", url, "--embedder", "hash", "mcp", "--http", "--no-auth"], health="/absent") as server:
        async with Client(server.url + "/mcp") as c:
            data(await c.call_tool("add_memories", {"messages": "I like tea.", "user_id": "me"}))
            assert data(await c.call_tool("search_memories", {"query": "tea", "user_id": "me"}))["results"]
    async with DeepContext(database_url=url, embedder="hash") as ctx:
        assert await ctx.users() == ["me"]
