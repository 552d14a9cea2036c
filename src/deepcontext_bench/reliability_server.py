"""Reliability scenarios of a real ``deepcontext serve`` over time, chosen with ``--scenario``:

``large-reads``
    clients reading the largest pages of a long conversation of large turns (``GET /v1/turns``) over
    and over: the server's resident memory (RSS) at the start, its peak and after the reads; a page
    larger than ``max_response_bytes`` counts as failed.
``tenant-users``
    ``GET /v1/users`` of a tenant with a few users, before and after another tenant gets many
    (``--other-users``): it must cost what the tenant has, not what the database holds.
``soak``
    16 clients adding and searching for ``--soak-minutes``: the server's RSS over time.

RSS is read from ``/proc`` (Linux); elsewhere the memory figures are left out.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deepcontext_bench.reliability_checks import Outcome, backend_name, open_context
from deepcontext_bench.reliability_rest import socket_port, stop_server, wait_serving

__all__ = ["SERVER_SCENARIOS", "rss_mb", "run_large_reads", "run_soak", "run_tenant_users"]

SERVER_SCENARIOS = ("large-reads", "tenant-users", "soak")

MB = 1024 * 1024


def rss_mb(pid: int) -> tuple[float, float] | None:
    """(resident, peak resident) MiB of a process, None where /proc does not tell."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):
        return None


@asynccontextmanager
async def serving(url: str) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """``deepcontext serve`` on a free loopback port with the hash embedder, once it answers."""

    with socket_port() as port:
        cmd = [sys.executable, "-m", "deepcontext", "--db", url, "--embedder", "hash", "serve", "--port", str(port)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_serving(base, proc)
        yield base, proc
    finally:
        stop_server(proc)


class RssSampler:
    """Samples a process's RSS every ``every`` seconds while entered."""

    def __init__(self, pid: int, every: float) -> None:
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []  # (seconds since start, MiB)
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        started = time.monotonic()
        while True:
            got = rss_mb(self.pid)
            if got is not None:
                self.samples.append((time.monotonic() - started, got[0]))
            await asyncio.sleep(self.every)

    async def __aenter__(self) -> RssSampler:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


def _memory_report(out: Outcome, pid: int, start: float | None, sampler: RssSampler, settle: float) -> None:
    end = rss_mb(pid)
    if start is None or end is None:
        out.notes.append("server RSS: not available on this system")
        return
    peak = max([end[1], *(mb for _, mb in sampler.samples)])
    out.metrics.update({"rss_start_mb": round(start, 1), "rss_peak_mb": round(peak, 1), "rss_end_mb": round(end[0], 1)})
    out.notes.append(f"server RSS MiB: start {start:.0f}, peak {peak:.0f}, end {end[0]:.0f} ({settle:.0f} s after the load)")


async def _key(url: str, tenant: str) -> str:

    async with open_context(url) as ctx:
        return ctx.store.keys.create(tenant, now=ctx.clock.now())[1]


# --- large-reads ------------------------------------------------------------------------------------


async def run_large_reads(url: str, seconds: float, *, turns: int = 2000, turn_chars: int = 32_000, clients: int = 4) -> Outcome:
    """``clients`` clients asking for ``turns`` turns of ``turn_chars`` characters each at once,
    for ``seconds``."""
    import httpx

    out = Outcome("large-reads", backend_name(url))
    key = await _key(url, "big")
    async with open_context(url) as ctx:
        cap = ctx.settings.max_response_bytes
        filler = ("lorem ipsum dolor sit amet " * (turn_chars // 27 + 1))[:turn_chars]
        for first in range(0, turns, 100):
            msgs = [{"role": "user", "content": f"{i} {filler}"[:turn_chars]} for i in range(first, min(turns, first + 100))]
            await ctx.add(msgs, "big/a", infer=False)
    largest = 0
    async with serving(url) as (base, proc):
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=base, timeout=120, headers=headers) as client:
            await client.get("/v1/users")  # warm: routes, database connections
            start = rss_mb(proc.pid)
            stop_at = time.monotonic() + seconds

            async def reader() -> None:
                nonlocal largest
                while time.monotonic() < stop_at:
                    began = time.perf_counter()
                    out.tried += 1
                    try:
                        r = await client.get("/v1/turns", params={"user_id": "a", "limit": turns})
                    except httpx.TimeoutException:
                        out.timeouts += 1
                        continue
                    out.latencies_ms.append((time.perf_counter() - began) * 1000)
                    largest = max(largest, len(r.content))
                    if r.status_code >= 500:
                        out.server_errors += 1
                    if r.status_code != 200 or len(r.content) > cap:
                        out.failed += 1
                        out.notes.append(f"GET /v1/turns -> {r.status_code}, {len(r.content) / MB:.1f} MiB")

            async with RssSampler(proc.pid, 0.25) as sampler:
                await asyncio.gather(*(reader() for _ in range(clients)))
                await asyncio.sleep(3.0)
            _memory_report(out, proc.pid, start[0] if start else None, sampler, 3.0)
    out.metrics["response_mb_max"] = round(largest / MB, 2)
    out.notes.append(f"{out.tried} reads by {clients} clients of up to {turns} turns: largest response {largest / MB:.2f} MiB")
    return out


# --- tenant-users -----------------------------------------------------------------------------------


def _bulk_users(ctx: Any, tenant: str, n: int) -> None:
    """``n`` rows of users of ``tenant`` written straight to the table (what many adds leave)."""
    from sqlalchemy import insert

    now = datetime.now(UTC)
    table = ctx.store.t.users
    for first in range(0, n, 10_000):
        rows = [
            {"user_id": f"{tenant}/user-{i:07d}", "version": 0, "incarnation": f"{i:032x}", "created_at": now,
             "updated_at": now, "consolidation_due": False}
            for i in range(first, min(n, first + 10_000))
        ]  # fmt: skip
        with ctx.store.engine.begin() as conn:
            conn.execute(insert(table), rows)


async def run_tenant_users(url: str, others: int, *, own: int = 5, calls: int = 50) -> Outcome:
    """The latency of listing a tenant's ``own`` users, alone and with ``others`` users in
    another tenant."""
    import httpx

    out = Outcome("tenant-users", backend_name(url))
    key = await _key(url, "small")
    async with open_context(url) as ctx:
        for i in range(own):
            await ctx.set_user(f"small/user-{i}", name=f"User {i}")
    expected = [f"user-{i}" for i in range(own)]
    async with serving(url) as (base, _proc):
        async with httpx.AsyncClient(base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"}) as client:

            async def timed() -> list[float]:
                took = []
                for _ in range(calls):
                    began = time.perf_counter()
                    r = await client.get("/v1/users")
                    took.append((time.perf_counter() - began) * 1000)
                    out.tried += 1
                    if r.status_code >= 500:
                        out.server_errors += 1
                    if r.status_code != 200:
                        out.failed += 1
                    elif r.json()["users"] != expected:
                        out.leaked += len(set(r.json()["users"]) - set(expected))
                        out.failed += 1
                return took

            await client.get("/v1/users")  # warm
            alone = await timed()
            async with open_context(url) as ctx:
                await asyncio.to_thread(_bulk_users, ctx, "large", others)
            crowded = await timed()
    out.latencies_ms = crowded
    a, c = statistics.median(alone), statistics.median(crowded)
    out.metrics.update({"alone_p50_ms": round(a, 2), "crowded_p50_ms": round(c, 2), "other_users": others})
    out.notes.append(f"GET /v1/users of {own} users: p50 {a:.1f} ms alone, {c:.1f} ms with {others} users in another tenant")
    return out


# --- soak -------------------------------------------------------------------------------------------


async def run_soak(url: str, minutes: float, rng: random.Random, *, clients: int = 16) -> Outcome:
    """``clients`` clients adding and searching for ``minutes``; the server's RSS over time."""
    import httpx

    out = Outcome("soak", backend_name(url))
    key = await _key(url, "soak")
    words = "garden kitchen market museum river station library harbour bakery tower".split()
    async with serving(url) as (base, proc):
        async with httpx.AsyncClient(base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"}) as client:
            await client.get("/v1/users")
            start = rss_mb(proc.pid)
            stop_at = time.monotonic() + minutes * 60

            async def one(c: int) -> None:
                i = 0
                while time.monotonic() < stop_at:
                    i += 1
                    w = rng.choice(words)
                    began = time.perf_counter()
                    out.tried += 1
                    try:
                        if i % 2:
                            body = {
                                "user_id": f"u{c}",
                                "messages": [{"role": "user", "content": f"I went to the {w} on day {i}"}],
                            }
                            r = await client.post("/v1/memories", json=body)
                            ok = r.status_code in (201, 409)
                        else:
                            r = await client.post("/v1/search", json={"user_id": f"u{c}", "query": f"the {w}", "limit": 10})
                            ok = r.status_code == 200
                    except httpx.TimeoutException:
                        out.timeouts += 1
                        continue
                    out.latencies_ms.append((time.perf_counter() - began) * 1000)
                    if r.status_code >= 500:
                        out.server_errors += 1
                    if not ok:
                        out.failed += 1
                        if len(out.notes) < 5:
                            out.notes.append(f"{r.request.method} {r.request.url.path} -> {r.status_code}")

            every = max(1.0, minutes * 60 / 20)
            async with RssSampler(proc.pid, every) as sampler:
                await asyncio.gather(*(one(c) for c in range(clients)))
                await asyncio.sleep(3.0)
            _memory_report(out, proc.pid, start[0] if start else None, sampler, 3.0)
            if sampler.samples:
                trail = ", ".join(f"{mb:.0f}" for _, mb in sampler.samples)
                out.notes.append(f"server RSS MiB every {every:.0f} s: {trail}")
    return out
