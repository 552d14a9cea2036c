"""Prometheus metrics of the REST API at ``/metrics`` (setting ``metrics_enabled``, off by default).

Every app has its own registry (no global state: several apps in one process count apart). Routes
are labelled by their template (``/v1/memories/{memory_id}``), never by the path asked for, so ids
never reach a label; a path no route matches counts as ``unmatched``. The workers of
``serve --workers N`` share their figures through prometheus-client's multiprocess mode (a
temporary folder named by ``PROMETHEUS_MULTIPROC_DIR``), so any worker answers for all of them.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Metrics", "MetricsMiddleware", "install_metrics", "memories_added", "database_error"]

#: the operations whose latency has its own histogram, by method and route template
OPERATIONS = {
    ("POST", "/v1/search"): "search",
    ("POST", "/memory/search"): "search",
    ("POST", "/v1/memories"): "add",
    ("POST", "/memory/add"): "add",
    ("POST", "/v1/context"): "context",
}
LIFECYCLE_ROUTES = {("POST", "/v1/lifecycle/run"), ("POST", "/lifecycle/run")}

_current: ContextVar[Metrics | None] = ContextVar("deepcontext_metrics", default=None)


class Metrics:
    """The collectors of one app."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("deepcontext_http_requests", "HTTP requests answered", ["method", "route", "status"], registry=r)
        self.latency = Histogram(
            "deepcontext_http_request_duration_seconds", "Time to answer an HTTP request", ["method", "route"], registry=r
        )
        self.operations = Histogram(
            "deepcontext_operation_duration_seconds",
            "Time of search, add and context requests that succeeded",
            ["operation"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.added = Counter("deepcontext_memories_added", "Memories added through the API", registry=r)
        self.lifecycle = Counter("deepcontext_lifecycle_runs", "Lifecycle runs asked through the API", ["outcome"], registry=r)
        self.background = Gauge(
            "deepcontext_background_tasks", "Background tasks running (consolidation, summaries, the activity log's writes)",
            multiprocess_mode="livesum", registry=r,
        )  # fmt: skip
        self.background_failures = Counter(
            "deepcontext_background_task_failures", "Background tasks that failed (each is logged)", registry=r
        )
        self.embedded = Counter(
            "deepcontext_embedder_texts", "Texts the embedding model embedded (cache hits not counted)", registry=r
        )
        self.embedding_seconds = Counter(
            "deepcontext_embedder_seconds", "Time the embedding model ran, summed over threads", registry=r
        )
        self.activity_dropped = Counter(
            "deepcontext_activity_records_dropped",
            "Calls the activity log did not record: its queue was full (activity_queue_max)",
            registry=r,
        )
        #: what the engine's own counters said when last read: the counters above grow by the difference
        self._seen: tuple[int, int, float, int] = (0, 0, 0.0, 0)
        self.db_errors = Counter(
            "deepcontext_database_errors", "Requests the database failed (unavailable, read-only, disk full)", ["kind"],
            registry=r,
        )  # fmt: skip

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)
        operation = OPERATIONS.get((method, route))
        if operation is not None and status < 400:
            self.operations.labels(operation).observe(seconds)
        if (method, route) in LIFECYCLE_ROUTES:
            self.lifecycle.labels("ok" if status < 400 else "error").inc()

    def sample(self, ctx: Any) -> None:
        """Read the engine's own counters (background tasks, the embedder's work, the activity log's
        dropped records) into the metrics."""
        if ctx is None:
            return
        tasks = ctx.background
        stats = ctx.embedder.stats()
        failures, texts, seconds = tasks.failures, stats.texts_embedded, stats.model_seconds
        dropped = ctx.activity_dropped
        seen = self._seen
        self.background.set(tasks.pending)
        if failures > seen[0]:
            self.background_failures.inc(failures - seen[0])
        if texts > seen[1]:
            self.embedded.inc(texts - seen[1])
        if seconds > seen[2]:
            self.embedding_seconds.inc(seconds - seen[2])
        if dropped > seen[3]:
            self.activity_dropped.inc(dropped - seen[3])
        self._seen = (max(failures, seen[0]), max(texts, seen[1]), max(seconds, seen[2]), max(dropped, seen[3]))

    def render(self) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        registry = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            # serve --workers N: every worker writes its figures in the folder; any one sums them
            from prometheus_client.multiprocess import MultiProcessCollector

            registry = CollectorRegistry()
            MultiProcessCollector(registry)
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def memories_added(count: int) -> None:
    """Count memories an add stored (a no-op when metrics are off)."""
    metrics = _current.get()
    if metrics is not None and count > 0:
        metrics.added.inc(count)


def database_error(kind: str) -> None:
    """Count a request the database failed (a no-op when metrics are off)."""
    metrics = _current.get()
    if metrics is not None:
        metrics.db_errors.labels(kind).inc()


def route_template(scope: Scope, root_path: str) -> str:
    """The template of the route that answered, mounts included (``/ui`` + ``/users/{user_id}``)."""
    mounted = str(scope.get("root_path", ""))[len(root_path) :]
    path = getattr(scope.get("route"), "path", None)
    if path is None:
        # a mounted app without routes of its own (static files) is labelled by its mount
        return mounted or "unmatched"
    return mounted + path


class MetricsMiddleware:
    """Times every HTTP request and counts it by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics, state: Any = None) -> None:
        self.app = app
        self.metrics = metrics
        #: the app's ServerState, whose engine the work metrics are read from
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _current.set(self.metrics)
        root_path = str(scope.get("root_path", ""))
        status = 500
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            _current.reset(token)
            self.metrics.observe(scope["method"], route_template(scope, root_path), status, time.perf_counter() - started)
            self.metrics.sample(getattr(self.state, "ctx", None))


def install_metrics(app: FastAPI) -> Metrics:
    """Add the middleware and ``GET /metrics`` (behind an API key when keys are required)."""
    from deepcontext.server.auth import authenticate

    metrics = Metrics()
    state = getattr(app.state, "deepcontext", None)

    async def read_metrics() -> Any:
        metrics.sample(getattr(state, "ctx", None))  # as of now, background work included
        return metrics.render()

    app.add_api_route("/metrics", read_metrics, methods=["GET"], dependencies=[Depends(authenticate)], include_in_schema=False)
    app.add_middleware(MetricsMiddleware, metrics=metrics, state=state)
    return metrics
