"""``deepcontext bench reliability``: what survives kill -9, concurrency and hostile clients.

Scenarios run on every database given, with the hash embedder: ``kill-add`` / ``kill-import`` /
``kill-consolidate`` (a writer killed with SIGKILL at random moments; every acknowledged write must
be there whole and the keyword index must match the memories), ``kill-index`` (SQLite: a writer
killed while it saves its user's vector graph and matrix; the database must open with the rows'
vectors in the matrix and a graph that finds what an exact scan of the rows finds), ``processes`` (writers and a reader
at once), ``race-delete`` (adds racing ``delete_user``), ``rest`` (a real server, two tenants,
valid and hostile requests), ``times`` (a time from the end of year 9999 refused at every entry; a
stored one breaks no read); ``read-only``, ``read-only-key``, ``disk-full`` and ``cli-embedder``
(:mod:`deepcontext_bench.reliability_probes`). Each scenario counts ``tried``, ``failed``, ``lost``, ``leaked``,
``5xx`` and the ``p99`` latency in milliseconds (:class:`~deepcontext_bench.reliability_checks.Outcome`).
Scenarios of a server over time run when named (:mod:`deepcontext_bench.reliability_server`).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepcontext_bench.reliability_checks import (
    INDEX_SETTINGS,
    Outcome,
    backend_name,
    check_graph,
    check_index,
    half_written,
    open_context,
    turn_contents,
)
from deepcontext_bench.reliability_probes import run_cli_embedder, run_disk_full, run_read_only, run_read_only_key
from deepcontext_bench.reliability_rest import run_rest
from deepcontext_bench.reliability_server import SERVER_SCENARIOS, run_large_reads, run_soak, run_tenant_users
from deepcontext_bench.reliability_times import run_times

__all__ = ["Outcome", "check_index", "run_reliability", "worker"]

#: the line a worker prints after each call that returned
ACK = "ACK"


# --- worker processes ------------------------------------------------------------------------------


def worker() -> None:
    """Entry of the worker processes: ``python -c '...worker()' <kind> <url> <tag> [arg]``. Prints
    ``ACK <payload>`` after each call that returned, ``ERR <error>`` after each that raised."""
    kind, url, tag = sys.argv[1:4]
    extra = sys.argv[4] if len(sys.argv) > 4 else ""
    asyncio.run(_work(kind, url, tag, extra))


async def _work(kind: str, url: str, tag: str, extra: str) -> None:
    async with open_context(url, **(INDEX_SETTINGS if kind == "index" else {})) as ctx:

        def say(line: str) -> None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

        i = 0
        while True:
            i += 1
            try:
                if kind == "add":  # two users, so a leak between them would show
                    user = f"{tag}-u{i % 2}"
                    token = f"tok{tag}x{i}"
                    await ctx.add(
                        [{"role": "user", "content": f"Note {token}: I bought {i} apples at the market"},
                         {"role": "assistant", "content": f"Noted {token}."}],
                        user_id=user,
                    )  # fmt: skip
                    say(f"{ACK} {user} {token}")
                elif kind == "import":
                    records = json.loads(Path(extra).read_text())
                    user = f"{tag}-imp{i}"
                    await ctx.import_records(records, user_id=user)
                    say(f"{ACK} {user} -")
                elif kind == "consolidate":
                    user = f"{tag}-c"
                    token = f"tok{tag}x{i}"
                    await ctx.add([{"role": "user", "content": f"I like {token} and visited city {i} in Spain"}], user_id=user)
                    say(f"{ACK} {user} {token}")
                    if i % 3 == 0:
                        await ctx.consolidate(user)
                elif kind == "index":  # adds, the graph follows them, saved after each
                    user = f"{extra}-v"
                    await ctx.add([{"role": "user", "content": f"Note {i}.{j}: the {j}th parcel of batch {i} went to dock {i * j % 97}"}
                                   for j in range(8)], user_id=user)  # fmt: skip
                    await ctx.search(f"parcel {i}", user_id=user)
                    await asyncio.to_thread(ctx.store.vectors.get(user).wait_for_index, 60)
                    await asyncio.to_thread(ctx.store.vectors.flush)
                    say(f"{ACK} {user} {i}")
                elif kind == "read":
                    started = time.perf_counter()
                    await ctx.search("apples market", user_id=f"{extra}-u{i % 2}")
                    say(f"{ACK} {(time.perf_counter() - started) * 1000:.2f} -")
                else:
                    raise SystemExit(f"unknown worker kind {kind!r}")
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which counts it
                say(f"ERR {type(exc).__name__}: {str(exc)[:200]}")
            if extra.isdigit() and i >= int(extra):
                return


def _spawn(kind: str, url: str, tag: str, extra: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from deepcontext_bench.reliability import worker; worker()", kind, url, tag, extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _collect(proc: subprocess.Popen[str], acks: list[tuple[str, str]], errors: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        parts = line.split(maxsplit=2)
        if parts and parts[0] == ACK and len(parts) == 3:
            acks.append((parts[1], parts[2].strip()))
        elif parts and parts[0] == "ERR":
            errors.append(line.strip())


def _kill_rounds(
    kind: str, url: str, rounds: int, rng: random.Random, extra: str, max_delay: float
) -> tuple[list[tuple[str, str]], list[str]]:
    """Start a worker, SIGKILL it a random time (up to ``max_delay`` s) after its first call
    returned, ``rounds`` times; its acks and errors."""
    import threading

    acks: list[tuple[str, str]] = []
    errors: list[str] = []
    for r in range(rounds):
        proc = _spawn(kind, url, f"{kind[:3]}{r}", extra)
        before = len(acks) + len(errors)
        reader = threading.Thread(target=_collect, args=(proc, acks, errors), daemon=True)
        reader.start()
        started = time.monotonic()  # once it works (its start-up varies with the machine's load)
        while len(acks) + len(errors) == before and proc.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, max_delay))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join(timeout=10)
    return acks, errors


# --- scenarios -------------------------------------------------------------------------------------


async def _kill_add(url: str, rounds: int, rng: random.Random, delay: float) -> Outcome:
    out = Outcome("kill-add", backend_name(url))
    acks, errors = await asyncio.to_thread(_kill_rounds, "add", url, rounds, rng, "", delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)  # one add in flight at each kill
    out.notes += errors[:3]
    async with open_context(url) as ctx:
        by_user: dict[str, set[str]] = {}
        for user, token in acks:
            by_user.setdefault(user, set()).add(token)
        for user, tokens in by_user.items():
            text = "\n".join(turn_contents(ctx, user))
            out.lost += sum(1 for t in tokens if f"Note {t}:" not in text or f"Noted {t}." not in text)
            other = user[:-1] + ("1" if user.endswith("0") else "0")
            out.leaked += sum(1 for t in by_user.get(other, set()) if f"{t}:" in text)
        out.lost += half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _kill_import(url: str, rounds: int, rng: random.Random, workdir: Path, delay: float) -> Outcome:
    out = Outcome("kill-import", backend_name(url))
    async with open_context(url) as ctx:
        for i in range(20):
            await ctx.add(
                [{"role": "user", "name": "Ana", "content": f"I visited city {i} and met friend number {i}"}], user_id="source"
            )
        records = [json.loads(json.dumps(r)) async for r in ctx.export("source")]
        expected = (await ctx.stats("source"))["memories"]
    path = workdir / f"export-{backend_name(url)}.json"
    path.write_text(json.dumps(records))
    acks, errors = await asyncio.to_thread(_kill_rounds, "import", url, rounds, rng, str(path), delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)
    out.notes += errors[:3]
    acked = {user for user, _ in acks}
    async with open_context(url) as ctx:
        for user in await ctx.users():
            if "-imp" not in user:
                continue
            n = (await ctx.stats(user))["memories"]
            if n != expected:  # an import is all or nothing
                out.lost += 1
                out.notes.append(f"{user}: {n} of {expected} memories")
        present = set(await ctx.users())
        out.lost += len(acked - present)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _kill_index(url: str, rounds: int, rng: random.Random, delay: float) -> Outcome:
    """SQLite: after each kill the database opens, its graph holds exactly the live vectors and finds
    what an exact scan finds (``lost``: each query or count that differs)."""
    out = Outcome("kill-index", backend_name(url))
    for r in range(rounds):  # checked after every kill: the next writer starts from what it left
        acks, errors = await asyncio.to_thread(_kill_rounds, "index", url, 1, rng, "ki", delay)
        out.tried += len(acks) + 1
        out.failed += len(errors)
        out.notes += errors[:3]
        started = time.perf_counter()
        try:
            async with open_context(url, **INDEX_SETTINGS) as ctx:
                problems = await asyncio.to_thread(check_graph, ctx, "ki-v", random.Random(r))
        except Exception as exc:  # noqa: BLE001 - counted
            problems = [f"reopening after kill {r}: {type(exc).__name__}: {exc}"]
        out.latencies_ms.append((time.perf_counter() - started) * 1000)
        out.lost += len(problems)
        out.notes += problems[:3]
    return out


async def _kill_consolidate(url: str, rounds: int, rng: random.Random, delay: float) -> Outcome:
    out = Outcome("kill-consolidate", backend_name(url))
    acks, errors = await asyncio.to_thread(_kill_rounds, "consolidate", url, rounds, rng, "", delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)
    out.notes += errors[:3]
    async with open_context(url) as ctx:
        for user in {u for u, _ in acks}:
            text = "\n".join(turn_contents(ctx, user))
            out.lost += sum(1 for u, t in acks if u == user and t not in text)
            started = time.perf_counter()
            try:  # the killed holder's lock must not block the next run
                await ctx.run_lifecycle(user, consolidate=True, wait=5)
            except Exception as exc:  # noqa: BLE001 - counted
                out.failed += 1
                out.notes.append(f"lifecycle after kill: {type(exc).__name__}: {exc}")
            out.latencies_ms.append((time.perf_counter() - started) * 1000)
        out.lost += half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _processes(url: str, writers: int, per_writer: int) -> Outcome:
    import threading

    out = Outcome("processes", backend_name(url))
    acks: list[tuple[str, str]] = []
    errors: list[str] = []
    reads: list[tuple[str, str]] = []
    procs = [_spawn("add", url, f"p{w}", str(per_writer)) for w in range(writers)]
    reader = _spawn("read", url, "r", "p0")
    threads = [threading.Thread(target=_collect, args=(p, acks, errors), daemon=True) for p in procs]
    threads.append(threading.Thread(target=_collect, args=(reader, reads, errors), daemon=True))
    for t in threads:
        t.start()
    for p in procs:
        await asyncio.to_thread(p.wait)
    reader.send_signal(signal.SIGKILL)
    reader.wait()
    for t in threads:
        t.join(timeout=10)
    out.tried = writers * per_writer + len(reads)
    out.failed = len(errors)
    out.notes += errors[:3]
    out.latencies_ms = [float(ms) for ms, _ in reads]
    async with open_context(url) as ctx:
        for w in range(writers):
            for u in (f"p{w}-u0", f"p{w}-u1"):
                text = "\n".join(turn_contents(ctx, u))
                out.lost += sum(1 for user, t in acks if user == u and f"Note {t}:" not in text)
        out.lost += writers * per_writer - len(acks) - len(errors)  # calls that neither returned nor raised
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _race_delete(url: str, adds: int) -> Outcome:
    from deepcontext.errors import WriteConflictError

    out = Outcome("race-delete", backend_name(url))
    async with open_context(url) as ctx:
        conflicts = 0

        async def adder(k: int) -> None:
            nonlocal conflicts
            for j in range(adds // 4):
                started = time.perf_counter()
                out.tried += 1
                try:
                    await ctx.add([{"role": "user", "content": f"I visited city number {j} in Spain, trip {k}"}], user_id="racer")
                except WriteConflictError:
                    conflicts += 1  # a clear, retryable answer: not a failure
                except Exception as exc:  # noqa: BLE001 - counted
                    out.failed += 1
                    out.notes.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                out.latencies_ms.append((time.perf_counter() - started) * 1000)

        async def deleter() -> None:
            for _ in range(adds // 8):
                await ctx.delete_user("racer")
                await asyncio.sleep(0.005)

        await asyncio.gather(*(adder(k) for k in range(4)), deleter())
        out.notes.append(f"{conflicts} WriteConflictError (retryable)")
        out.lost += half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


# --- the run -----------------------------------------------------------------------------------------

SCENARIOS = (
    "kill-add",
    "kill-import",
    "kill-consolidate",
    "kill-index",
    "processes",
    "race-delete",
    "rest",
    "times",
    "read-only",
    "read-only-key",
    "disk-full",
    "cli-embedder",
)
#: every scenario: the default ones, then those that run only when named
ALL_SCENARIOS = SCENARIOS + SERVER_SCENARIOS
#: scenarios of SQLite only (PostgreSQL keeps its vector index in the database)
SQLITE_ONLY = ("kill-index",)


async def run_reliability(
    db_urls: list[str | None],
    *,
    scenarios: tuple[str, ...] = SCENARIOS,
    kills: int = 6,
    kill_delay: float = 3.0,
    writers: int = 4,
    per_writer: int = 30,
    requests: int = 600,
    concurrency: int = 16,
    time_limit: float = 120.0,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    read_seconds: float = 120.0,
    other_users: int = 200_000,
    soak_minutes: float = 1.0,
) -> list[Outcome]:
    """Every scenario on every database (None: a fresh temporary SQLite file per scenario; a
    PostgreSQL URL is used as it is, so give an empty database)."""
    rng = random.Random(seed)
    results: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="dc-reliability-") as tmp:
        workdir = Path(tmp)
        for n, given in enumerate(db_urls):
            for s in scenarios:
                url = given or f"sqlite:///{workdir / f'{n}-{s}.db'}"
                if s in SQLITE_ONLY and backend_name(url) != "sqlite":
                    continue
                if progress:
                    progress(f"{s} on {backend_name(url)}")
                if s == "kill-add":
                    results.append(await _kill_add(url, kills, rng, kill_delay))
                elif s == "kill-import":
                    results.append(await _kill_import(url, kills, rng, workdir, kill_delay))
                elif s == "kill-consolidate":
                    results.append(await _kill_consolidate(url, kills, rng, kill_delay))
                elif s == "kill-index":
                    results.append(await _kill_index(url, kills, rng, kill_delay))
                elif s == "processes":
                    results.append(await _processes(url, writers, per_writer))
                elif s == "race-delete":
                    results.append(await _race_delete(url, per_writer * writers))
                elif s == "rest":
                    results.append(await run_rest(url, requests, concurrency, rng, time_limit))
                elif s == "times":
                    results.append(await run_times(url))
                elif s == "read-only":
                    results.append(await run_read_only(url, requests // 10))
                elif s == "read-only-key":
                    results.append(await run_read_only_key(url, requests // 10))
                elif s == "disk-full":
                    results.append(await run_disk_full(url, requests // 10))
                elif s == "cli-embedder":
                    results.append(await asyncio.to_thread(run_cli_embedder, url))
                elif s == "large-reads":
                    results.append(await run_large_reads(url, read_seconds))
                elif s == "tenant-users":
                    results.append(await run_tenant_users(url, other_users))
                elif s == "soak":
                    results.append(await run_soak(url, soak_minutes, rng))
                else:
                    raise ValueError(f"unknown scenario {s!r}; known: {', '.join(ALL_SCENARIOS)}")
    return results


def environment() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "embedder": "hash"}
