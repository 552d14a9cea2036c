"""``/metrics``: off by default, behind an API key, counting requests by route template."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from tests.server.helpers import Api, cli_env, running, serve


@pytest.fixture
async def metered(tmp_path) -> AsyncIterator[Api]:  # noqa: ANN001
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(256), metrics_enabled=True)
    app = create_app(ctx)
    try:
        async with running(app):
            yield Api(app, ctx)
    finally:
        await ctx.close()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(text) for s in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float:  # noqa: ANN001
    return found.get((name, frozenset(labels.items())), 0.0)


async def test_off_by_default(api: Api) -> None:
    async with api.client(api.key("t")) as c:
        assert (await c.get("/metrics")).status_code == 404


async def test_counts_by_route_template(metered: Api) -> None:
    key = metered.key("t")
    async with metered.client() as anonymous:
        assert (await anonymous.get("/metrics")).status_code == 401
    async with metered.client(key) as c:
        before = samples((await c.get("/metrics")).text)
        said = [{"role": "user", "content": "I live in Lisbon and I love jazz"}]
        added = await c.post("/v1/memories", json={"user_id": "ana", "messages": said})
        assert added.status_code == 201, added.text
        for _ in range(2):
            assert (await c.post("/v1/search", json={"user_id": "ana", "query": "jazz"})).status_code == 200
        listed = (await c.get("/v1/memories", params={"user_id": "ana"})).json()["memories"]
        mid = listed[0]["id"]
        assert (await c.get(f"/v1/memories/{mid}", params={"user_id": "ana"})).status_code == 200
        assert (await c.get("/v1/memories/999999", params={"user_id": "ana"})).status_code == 404
        assert (await c.get("/no/such/path/12345")).status_code == 404
        assert (await c.post("/v1/context", json={"user_id": "ana", "query": "music"})).status_code == 200
        assert (await c.post("/v1/lifecycle/run", json={"user_id": "ana"})).status_code == 200
        reply = await c.get("/metrics")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    after = samples(reply.text)
    total = "deepcontext_http_requests_total"
    assert (
        value(after, total, method="POST", route="/v1/search", status="200")
        - value(before, total, method="POST", route="/v1/search", status="200")
        == 2
    )
    assert value(after, total, method="GET", route="/v1/memories/{memory_id}", status="200") == 1
    assert value(after, total, method="GET", route="/v1/memories/{memory_id}", status="404") == 1
    assert value(after, total, method="GET", route="unmatched", status="404") == 1
    # no id and no raw path in any label
    routes = {dict(labels).get("route") for _, labels in after} - {None}
    assert routes == {
        "/metrics", "/v1/memories", "/v1/memories/{memory_id}", "/v1/search", "/v1/context", "/v1/lifecycle/run", "unmatched"
    }  # fmt: skip
    labels = {v for (_, pairs) in after for _, v in pairs}  # ids never reach a label (a float's digits may hold anything)
    assert not any("/no/such" in v or "999999" in v or "12345" in v for v in labels)
    assert value(after, "deepcontext_memories_added_total") == added.json()["memories_added"] > 0
    assert value(after, "deepcontext_operation_duration_seconds_count", operation="search") == 2
    assert value(after, "deepcontext_operation_duration_seconds_count", operation="add") == 1
    assert value(after, "deepcontext_http_request_duration_seconds_count", method="POST", route="/v1/search") == 2
    assert value(after, "deepcontext_operation_duration_seconds_count", operation="context") == 1
    assert value(after, "deepcontext_lifecycle_runs_total", outcome="ok") == 1


def test_workers_share_their_figures(tmp_path) -> None:  # noqa: ANN001
    args = ["--db", str(tmp_path / "w.db"), "--embedder", "hash", "serve", "--no-auth", "--workers", "2"]
    with serve(args, env=cli_env(DEEPCONTEXT_METRICS_ENABLED="true")) as server, httpx.Client() as c:
        for _ in range(8):
            # a new connection each time, so the requests spread over the workers
            assert c.get(f"{server.url}/v1/users", headers={"Connection": "close"}).status_code == 200
        counts = {
            value(samples(c.get(f"{server.url}/metrics", headers={"Connection": "close"}).text),
                  "deepcontext_http_requests_total", method="GET", route="/v1/users", status="200")
            for _ in range(4)
        }  # fmt: skip
    # whichever worker answers the scrape counts every worker's requests
    assert counts == {8.0}


async def test_the_engines_work_is_counted(metered: Api) -> None:
    """The embedding model's texts and seconds and the background tasks, read from the engine."""
    async with metered.client(metered.key("t")) as c:
        before = samples((await c.get("/metrics")).text)
        said = [{"role": "user", "content": f"I keep bees number {i} near Porto"} for i in range(5)]
        assert (await c.post("/v1/memories", json={"user_id": "ana", "messages": said})).status_code == 201
        assert (await c.post("/v1/search", json={"user_id": "ana", "query": "a question never asked"})).status_code == 200
        await metered.ctx.flush()  # the background work the add started
        after = samples((await c.get("/metrics")).text)
    stats = metered.ctx.embedder.stats()
    embedded = value(after, "deepcontext_embedder_texts_total") - value(before, "deepcontext_embedder_texts_total")
    assert embedded >= 6  # five turns and the query at least
    assert value(after, "deepcontext_embedder_texts_total") == stats.texts_embedded
    assert value(after, "deepcontext_embedder_seconds_total") > value(before, "deepcontext_embedder_seconds_total")
    assert ("deepcontext_background_tasks", frozenset()) in after
    assert value(after, "deepcontext_background_task_failures_total") == metered.ctx.background.failures == 0


async def test_calls_the_activity_log_drops_are_counted(tmp_path) -> None:  # noqa: ANN001
    """With its queue full (two records wait to be written together), further calls are dropped
    and counted; every call is either recorded or counted."""
    ctx = DeepContext(
        database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(256), metrics_enabled=True, activity_queue_max=2
    )
    app = create_app(ctx)
    try:
        async with running(app):
            api = Api(app, ctx)
            async with api.client(api.key("t")) as c:
                assert (
                    await c.post(
                        "/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I keep bees."}]}
                    )
                ).status_code == 201
                calls = 8
                for i in range(calls):  # quicker than the writer's wait for company (2 s)
                    assert (await c.post("/v1/search", json={"user_id": "ana", "query": f"bees {i}"})).status_code == 200
                await ctx.flush()
                found = samples((await c.get("/metrics")).text)
                page = (await c.get("/v1/activity", params={"user_id": "ana", "limit": 200})).json()
            recorded = sum(1 for call in page["calls"] if call["kind"] == "search")
            counted = ctx.activity_dropped
    finally:
        await ctx.close()
    dropped = value(found, "deepcontext_activity_records_dropped_total")
    assert dropped == counted > 0
    assert recorded + dropped == calls
