"""The activity log through the server: REST and MCP calls are recorded by default, listed on
/v1/activity (tenant-scoped, paged) and /ui/activity (a call in full, "run it again now" with what
changed), the inspector's own previews are not, and a memory's page says which calls returned it."""

from __future__ import annotations

import re

import pytest

from tests.server.helpers import Api
from tests.server.test_inspector import browser

SAID = [
    {"role": "user", "content": "I live in Leeds and I teach maths at Parkside School."},
    {"role": "user", "content": "I play the cello on weekends."},
]


async def test_rest_calls_are_recorded_and_listed(api: Api) -> None:
    key = api.key("acme")
    async with api.client(key) as c:
        assert (await c.post("/v1/memories", json={"user_id": "maya", "messages": SAID})).status_code == 201
        found = (await c.post("/v1/search", json={"user_id": "maya", "query": "cello", "agent_id": "coach"})).json()
        got = await c.post("/v1/context", json={"user_id": "maya", "query": "where do I live", "budget_tokens": 300})
        assert got.status_code == 200
        await api.ctx.flush()
        page = (await c.get("/v1/activity", params={"user_id": "maya"})).json()
        assert [(x["kind"], x["via"], x["user_id"]) for x in page["calls"]] == [
            ("context", "rest", "maya"), ("search", "rest", "maya")
        ]  # fmt: skip
        search = page["calls"][1]
        assert search["key_id"] == key.split("_")[1] and search["agent_id"] == "coach"
        assert [h["memory_id"] for h in search["results"]] == [r["memory_id"] for r in found["results"]]
        one = (await c.get(f"/v1/activity/{search['id']}", params={"user_id": "maya"})).json()
        assert one["query"] == "cello" and one["results"] == search["results"]
        only = (await c.get("/v1/activity", params={"user_id": "maya", "kind": "context"})).json()["calls"]
        assert [x["kind"] for x in only] == ["context"] and only[0]["included"]
        first = (await c.get("/v1/activity", params={"user_id": "maya", "limit": 1})).json()
        rest = (await c.get("/v1/activity", params={"user_id": "maya", "cursor": first["next_cursor"]})).json()
        assert [x["id"] for x in first["calls"] + rest["calls"]] == [x["id"] for x in page["calls"]]
        assert rest["next_cursor"] is None
        for bad in ({"kind": "add"}, {"limit": 0}, {"cursor": "!!"}, {"after": "soon"}):
            r = await c.get("/v1/activity", params={"user_id": "maya", **bad})
            assert r.status_code == 422, (bad, r.text)
        assert (await c.get("/v1/activity/99999", params={"user_id": "maya"})).status_code == 404


async def test_another_tenant_sees_nothing(api: Api) -> None:
    mine, theirs = api.key("acme"), api.key("other")
    async with api.client(mine) as c:
        await c.post("/v1/memories", json={"user_id": "maya", "messages": SAID})
        await c.post("/v1/search", json={"user_id": "maya", "query": "cello"})
        await api.ctx.flush()
        [call] = (await c.get("/v1/activity", params={"user_id": "maya"})).json()["calls"]
    async with api.client(theirs) as c:
        assert (await c.get("/v1/activity", params={"user_id": "maya"})).json()["calls"] == []
        assert (await c.get(f"/v1/activity/{call['id']}", params={"user_id": "maya"})).status_code == 404
    limited = api.key("acme", users=["someone-else"])
    async with api.client(limited) as c:
        assert (await c.get("/v1/activity", params={"user_id": "maya"})).status_code == 403


async def test_the_inspector_lists_calls_and_runs_one_again(api: Api) -> None:
    key = api.key("acme")
    async with api.client(key) as c:
        await c.post("/v1/memories", json={"user_id": "maya", "messages": SAID})
        found = (await c.post("/v1/search", json={"user_id": "maya", "query": "cello weekends"})).json()["results"]
    async with browser(api, key) as (b, _):
        # the inspector's own search and context previews are not recorded
        assert (await b.get("/ui/memories", params={"user": "maya", "q": "cello"})).status_code == 200
        assert (await b.get("/ui/context", params={"user": "maya", "q": "cello"})).status_code == 200
        await api.ctx.flush()
        listing = await b.get("/ui/activity", params={"user": "maya"})
        assert listing.status_code == 200
        ids = re.findall(r'class="call-link">(\d+)<', listing.text)
        assert len(ids) == 1 and "cello weekends" in listing.text
        call = await b.get(f"/ui/activity/{ids[0]}", params={"user": "maya"})
        assert found[0]["text"] in call.text and 'id="run-again"' in call.text
        # forget the first result: running the call again shows it lost
        await api.ctx.delete(found[0]["memory_id"], "acme/maya")
        again = await b.get(f"/ui/activity/{ids[0]}", params={"user": "maya", "again": "1"})
        summary = re.search(r'id="change-summary">([^<]+)<', again.text).group(1)
        assert "1 lost" in summary and 'class="change-lost"' in again.text
        # the memory's page names the call that returned it
        page = await b.get(f"/ui/memory/{found[1]['memory_id']}", params={"user": "maya"})
        assert f"/activity/{ids[0]}" in page.text and "cello weekends" in page.text
        await api.ctx.flush()
        assert len((await api.ctx.activity("acme/maya")).calls) == 1  # running it again recorded nothing


@pytest.mark.parametrize("path", ["/ui/activity", "/ui/activity/1"])
async def test_activity_pages_need_a_key(api: Api, path: str) -> None:
    async with api.client() as c:
        r = await c.get(path, params={"user": "maya"})
        assert r.status_code in (303, 401)


def test_the_cli_lists_calls_and_shows_one(tmp_path) -> None:  # noqa: ANN001
    import asyncio
    import json
    import subprocess
    import sys

    from deepcontext import DeepContext
    from deepcontext.embed import HashEmbedder
    from tests.server.helpers import ROOT, cli_env

    url = f"sqlite:///{tmp_path}/cli.db"

    async def record() -> None:
        async with DeepContext(database_url=url, embedder=HashEmbedder(256), activity_log=True) as ctx:
            await ctx.add(SAID, user_id="maya")
            await ctx.search("cello", "maya")
            await ctx.context("where do I live", "maya", agent_id="coach")

    asyncio.run(record())

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "deepcontext", "--db", url, "--embedder", "hash", "activity", "--user", "maya", *args],
            capture_output=True, text=True, env=cli_env(), cwd=str(ROOT), timeout=120, check=False,
        )  # fmt: skip

    listed = cli("--json")
    assert listed.returncode == 0, listed.stderr
    calls = json.loads(listed.stdout)["calls"]
    assert [(c["kind"], c["query"]) for c in calls] == [("context", "where do I live"), ("search", "cello")]
    shown = cli("--id", str(calls[1]["id"]))
    assert shown.returncode == 0 and "query: cello" in shown.stdout and "1. [" in shown.stdout
    table = cli("--agent", "coach")
    assert table.returncode == 0 and "where do I" in table.stdout and "cello" not in table.stdout
    bad = cli("--kind", "add")
    assert bad.returncode != 0 and "kind" in (bad.stderr + bad.stdout)
    gone = cli("--id", "999")
    assert gone.returncode != 0 and "999" in (gone.stderr + gone.stdout)
