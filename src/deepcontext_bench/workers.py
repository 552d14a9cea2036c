"""Throughput of ``deepcontext serve --workers N`` under a mix of searches and adds (``bench workers``).

For each database and each worker count: the server is started as a user starts it (a process of
its own, ``--no-auth`` on loopback), the benchmark waits until it answers ``/v1/ready``, then keeps
``concurrency`` clients busy for ``seconds`` with requests drawn from a seeded generator (a share
``search_share`` of searches, the rest one-message adds, each for one of ``users`` users seeded
beforehand), and reports requests per second and p50 / p95 / p99 per kind of request. The clients
run in this process, on the same machine as the server: what they spend is part of the picture.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deepcontext_bench.synthetic import SyntheticChat

__all__ = ["run_workers"]

READY_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def backend_of(url: str) -> str:
    return "postgresql" if url.startswith("postgres") else "sqlite"


def _pct(values: list[float], p: float) -> float | None:
    return round(float(np.percentile(values, p)), 2) if values else None


async def seed_users(db_url: str, users: int, turns_per_user: int, settings: dict[str, Any]) -> int:
    """Give each benchmark user ``turns_per_user`` synthetic turns (through ``add``, as users do);
    returns the memories stored."""
    from deepcontext import DeepContext

    gen = SyntheticChat(seed=11)
    turns = gen.turns(10**9)
    async with DeepContext(database_url=db_url, **settings) as ctx:
        for u in range(users):
            user = f"load-{u}"
            await ctx.delete_user(user)
            for start in range(0, turns_per_user, 50):
                msgs = []
                for _ in range(min(50, turns_per_user - start)):
                    role, name, text = next(turns)
                    msgs.append({"role": role, "content": text} | ({"name": name} if name else {}))
                await ctx.add(msgs, user)
        return sum([(await ctx.stats(f"load-{u}"))["memories"] for u in range(users)])


def start_server(db_url: str, workers: int, settings: dict[str, Any], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``deepcontext serve --workers N`` on a free loopback port, its output into ``log``."""
    port = _free_port()
    env = {**os.environ, "DEEPCONTEXT_DATABASE_URL": db_url}
    for key, value in settings.items():
        env[f"DEEPCONTEXT_{key.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    cmd = [sys.executable, "-m", "deepcontext", "serve", "--no-auth", "--port", str(port), "--workers", str(workers),
           "--log-level", "warning"]  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}"


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group (uvicorn's supervisor and its workers), then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> float:
    """Seconds until ``/v1/ready`` answers 200; a server that exits or never answers is an error."""
    import httpx

    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=5) as client:
        while time.perf_counter() - t0 < READY_TIMEOUT_S:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}; its output: {log}")
            try:
                if (await client.get(f"{base}/v1/ready")).status_code == 200:
                    return time.perf_counter() - t0
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the server did not answer /v1/ready within {READY_TIMEOUT_S:.0f} s; its output: {log}")


async def drive(base: str, *, users: int, seconds: float, concurrency: int, search_share: float, seed: int) -> dict[str, Any]:
    """Keep ``concurrency`` clients busy for ``seconds`` (after a short warm-up that is not counted)."""
    import httpx

    questions = SyntheticChat(seed=7).questions(500)
    lines = [text for _, _, text in SyntheticChat(seed=seed).turns(5000)]
    lat: dict[str, list[float]] = {"search": [], "add": []}
    errors: dict[str, int] = {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def client_loop(client: httpx.AsyncClient, rng: random.Random, until: float, counted_from: float) -> None:
        while (now := time.perf_counter()) < until:
            user = f"load-{rng.randrange(users)}"
            if rng.random() < search_share:
                kind, path = "search", "/v1/search"
                body: dict[str, Any] = {"user_id": user, "query": rng.choice(questions), "limit": 10}
            else:
                kind, path = "add", "/v1/memories"
                body = {"user_id": user, "messages": [{"role": "user", "content": rng.choice(lines)}]}
            t0 = time.perf_counter()
            try:
                r = await client.post(path, json=body)
                ok = r.status_code < 300
                status = str(r.status_code)
            except httpx.HTTPError as exc:
                ok, status = False, type(exc).__name__
            if now >= counted_from:
                if ok:
                    lat[kind].append((time.perf_counter() - t0) * 1000)
                else:
                    errors[f"{kind} {status}"] = errors.get(f"{kind} {status}", 0) + 1

    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        warm = min(3.0, seconds / 5)
        start = time.perf_counter()
        counted_from, until = start + warm, start + warm + seconds
        await asyncio.gather(
            *(client_loop(client, random.Random(seed * 1000 + i), until, counted_from) for i in range(concurrency))
        )
    done = len(lat["search"]) + len(lat["add"])
    return {
        "requests_per_s": round(done / seconds, 1),
        "search_ms": {"n": len(lat["search"]), "p50": _pct(lat["search"], 50), "p95": _pct(lat["search"], 95),
                      "p99": _pct(lat["search"], 99)},
        "add_ms": {"n": len(lat["add"]), "p50": _pct(lat["add"], 50), "p95": _pct(lat["add"], 95),
                   "p99": _pct(lat["add"], 99)},
        "errors": errors,
    }  # fmt: skip


async def run_workers(
    *,
    db_urls: list[str | None],
    worker_counts: list[int],
    users: int = 20,
    turns_per_user: int = 100,
    seconds: float = 30.0,
    concurrency: int = 8,
    search_share: float = 0.7,
    settings: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Each database in turn: seed, then one server per worker count (started fresh, measured,
    stopped). ``db_urls`` may hold None for a temporary SQLite file."""
    settings = dict(settings or {})
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="dc-workers-") as tmp:
        log = Path(tmp) / "server.log"
        for i, url in enumerate(db_urls):
            db_url = url or f"sqlite:///{Path(tmp) / f'workers-{i}.db'}"
            if progress:
                progress(f"seeding {users} users x {turns_per_user} turns in {backend_of(db_url)}")
            memories = await seed_users(db_url, users, turns_per_user, settings)
            for n in worker_counts:
                if progress:
                    progress(f"{backend_of(db_url)}: {n} worker(s), {seconds:.0f} s")
                proc, base = start_server(db_url, n, settings, log)
                try:
                    ready_s = await wait_ready(base, proc, log)
                    measured = await drive(
                        base, users=users, seconds=seconds, concurrency=concurrency, search_share=search_share, seed=n
                    )
                finally:
                    stop_server(proc)
                runs.append({"backend": backend_of(db_url), "workers": n, "memories_seeded": memories,
                             "ready_seconds": round(ready_s, 2), **measured})  # fmt: skip
    return {
        "benchmark": "workers",
        "cpus": os.cpu_count(),
        "users": users,
        "turns_per_user": turns_per_user,
        "seconds": seconds,
        "concurrency": concurrency,
        "search_share": search_share,
        "runs": runs,
    }
