"""How fast the web inspector's pages answer as one user's memory grows.

One user is filled with synthetic chat through ``DeepContext.add`` (offline extraction, as in the
speed benchmark) until it holds ``memories`` memories; then every page is requested ``rounds`` times
in-process (httpx over ASGI, the real app with its middleware, signed in with an API key: the key is
verified on every request, as in production) and the server time per page is recorded: first page
of the list (50 memories), a page deep in the cursor chain, a filtered page, a search, one memory,
the users, the graph, the lifecycle preview and a context preview; beside them the same first page
as JSON from ``GET /v1/memories`` (what the inspector adds to the engine's read).
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepcontext_bench.speed import _pct
from deepcontext_bench.synthetic import SyntheticChat

__all__ = ["PAGES", "run_ui_bench"]

USER = "bench-ui"
#: the API key's tenant; the engine stores the user as "<tenant>/<user>"
TENANT = "bench"
STORED = f"{TENANT}/{USER}"
#: the pages measured: name -> (path, query parameters); {mid} and {cursor} are filled in
PAGES: dict[str, tuple[str, dict[str, Any]]] = {
    "list (first 50)": ("/ui/memories", {"user": USER}),
    "same page, REST API": ("/v1/memories", {"user_id": USER, "limit": 50}),
    "list (deep page)": ("/ui/memories", {"user": USER, "cursor": "{cursor}"}),
    "list (filtered)": ("/ui/memories", {"user": USER, "tier": "short_term", "type": "semantic"}),
    "search (50 results)": ("/ui/memories", {"user": USER, "q": "Who is Priya and where does she work?"}),
    "one memory": ("/ui/memory/{mid}", {"user": USER}),
    "users": ("/ui/", {}),
    "graph (the user's neighbourhood)": ("/ui/graph", {"user": USER}),
    "graph (whole, 150 entities)": ("/ui/graph", {"user": USER, "whole": "1"}),
    "lifecycle preview": ("/ui/lifecycle", {"user": USER}),
    "context preview": ("/ui/context", {"user": USER, "q": "What trips are planned?", "budget": 2000}),
    "one user (agents and runs)": ("/ui/user", {"user": USER}),
    "activity (newest 50 calls)": ("/ui/activity", {"user": USER}),
    "one recorded call": ("/ui/activity/{call}", {"user": USER}),
    "one call, run again now": ("/ui/activity/{call}", {"user": USER, "again": "1"}),
}
#: recorded calls made before the pages are timed: a full log at the default retention
LOGGED_CALLS = 1000


async def _fill_activity_log(ctx: Any) -> int:
    """Record searches and contexts of the user as the server does (the activity log at its default
    size); the id of the newest recorded search."""
    from deepcontext.services.activity import calls_from

    questions = SyntheticChat(seed=7).questions(50)
    with calls_from("rest"):
        for i in range(LOGGED_CALLS):
            if i % 10 == 9:
                await ctx.context(questions[i % len(questions)], STORED)
            else:
                await ctx.search(questions[i % len(questions)], STORED)
    await ctx.flush()
    return (await ctx.activity(STORED, kind="search", limit=1)).calls[0].id


async def run_ui_bench(
    *,
    memories: int = 100_000,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    rounds: int = 20,
    batch: int = 50,
    reuse: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """Fill (or, with ``reuse``, top up) the benchmark user to ``memories`` and time each page."""
    import httpx

    from deepcontext import DeepContext
    from deepcontext.server import create_app

    tmp = None
    if db_url is None:
        tmp = tempfile.TemporaryDirectory(prefix="dc-ui-")
        db_url = f"sqlite:///{Path(tmp.name) / 'ui.db'}"
    ctx = DeepContext(database_url=db_url, track_access=False, **{"auto_consolidate": False, **(settings or {})})
    await ctx.init()
    try:
        held = (await ctx.stats(STORED)) if reuse else {"memories": 0, "turns": 0}
        if not reuse:
            await ctx.delete_user(STORED)
        turns = SyntheticChat(seed=42).turns(10**9)
        for _ in range(held["turns"]):
            next(turns)
        count, total_turns = held["memories"], held["turns"]
        if progress:
            progress("total", memories)
        t0 = time.perf_counter()
        while count < memories:
            msgs = []
            for _ in range(batch):
                role, name, text = next(turns)
                msgs.append({"role": role, "content": text} | ({"name": name} if name else {}))
            r = await ctx.add(msgs, STORED, conversation_id=f"c{total_turns // 1000}")
            total_turns += len(r.turn_ids)
            count += r.memories_added
            if progress:
                progress("set", min(count, memories))
        ingest_s = time.perf_counter() - t0
        stats = await ctx.stats(STORED)
        key = ctx.store.keys.create(TENANT, now=ctx.clock.now(), name="ui bench")[1]
        call = await _fill_activity_log(ctx)
        app = create_app(ctx)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        timings: dict[str, list[float]] = {name: [] for name in PAGES}
        async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            login = await c.get("/ui/login")
            token = re.search(r'name="csrf" value="([^"]+)"', login.text)
            assert token is not None
            signed = await c.post("/ui/login", data={"key": key, "csrf": token.group(1)})
            if signed.status_code != 303:
                raise RuntimeError(f"sign-in failed: {signed.status_code}")
            first = (await c.get("/ui/memories", params={"user": USER})).text
            mid = re.search(r"/ui/memory/(\d+)\?", first)
            cursor = None
            page = first
            for _ in range(200):  # 200 pages down the cursor chain: 10,000 memories in
                nxt = re.search(r'id="next" href="[^"]*cursor=([^"&]+)', page)
                if nxt is None:
                    break
                cursor = nxt.group(1)
                page = (await c.get("/ui/memories", params={"user": USER, "cursor": cursor})).text
            fill = {"{mid}": mid.group(1) if mid else "1", "{cursor}": cursor or "", "{call}": str(call)}
            last: dict[str, Any] = {}
            for _ in range(rounds):
                for name, (path, params) in PAGES.items():
                    for k, v in fill.items():
                        path = path.replace(k, v)
                    q = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in params.items()}
                    headers = {"Authorization": f"Bearer {key}"} if path.startswith("/v1/") else None
                    t1 = time.perf_counter()
                    resp = await c.get(path, params=q, headers=headers)
                    timings[name].append((time.perf_counter() - t1) * 1000)
                    if resp.status_code != 200:
                        raise RuntimeError(f"{name}: HTTP {resp.status_code}")
                    last[name] = resp
            sizes = {name: len(resp.content) for name, resp in last.items()}
        backend = ctx.store.backend
    finally:
        await ctx.close()
        if tmp is not None:
            tmp.cleanup()
    return {
        "benchmark": "ui",
        "backend": backend,
        "memories": stats["memories"],
        "turns": stats["turns"],
        "entities": stats.get("entities"),
        "ingest_seconds": round(ingest_s, 1),
        "rounds": rounds,
        "pages": {
            name: {"p50_ms": _pct(v, 50), "p95_ms": _pct(v, 95), "mean_ms": statistics.fmean(v), "bytes": sizes[name]}
            for name, v in timings.items()
        },
    }
