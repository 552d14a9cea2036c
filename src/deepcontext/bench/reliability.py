"""``deepcontext bench reliability``: what survives kill -9, concurrency and hostile clients.

Scenarios run on every database given, with the hash embedder: ``kill-add`` / ``kill-import`` /
``kill-consolidate`` (a writer killed with SIGKILL at random moments; every acknowledged write must
be there whole and the keyword index must match the memories), ``processes`` (writers and a reader
at once), ``race-delete`` (adds racing ``delete_user``) and ``rest`` (a real server, two tenants,
valid and hostile requests). Each scenario counts ``tried``, ``failed``, ``lost``, ``leaked``,
``5xx`` and the ``p99`` latency in milliseconds (:class:`~deepcontext.bench.reliability_types.Outcome`).
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Outcome", "check_index", "run_reliability", "worker"]

#: the line a worker prints after each call that returned
ACK = "ACK"


@dataclass
class Outcome:
    scenario: str
    backend: str
    tried: int = 0
    failed: int = 0
    lost: int = 0
    leaked: int = 0
    server_errors: int = 0
    timeouts: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def p99_ms(self) -> float | None:
        return float(np.percentile(self.latencies_ms, 99)) if self.latencies_ms else None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["latencies_ms"]
        out["p99_ms"] = self.p99_ms
        out["timed_calls"] = len(self.latencies_ms)
        return out


def _context(url: str) -> Any:
    from deepcontext import DeepContext

    return DeepContext(database_url=url, embedder="hash")


def _backend(url: str) -> str:
    return "postgresql" if url.startswith("postgres") else "sqlite"


# --- checks ----------------------------------------------------------------------------------------


def _rows(ctx: Any, sql: str, **params: Any) -> list[Any]:
    from sqlalchemy import text

    with ctx.store.engine.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def check_index(ctx: Any) -> list[str]:
    """Problems of the database as a whole: keyword index rows without a memory or memories without
    one; SQLite's integrity_check and FTS5's integrity-check. Empty when all is well."""
    problems: list[str] = []
    if ctx.store.engine.dialect.name == "sqlite":
        unindexed = _rows(ctx, "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.rowid = m.id)")
        orphans = _rows(ctx, "SELECT count(*) FROM memory_fts f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid)")
        ok = _rows(ctx, "PRAGMA integrity_check")[0][0]
        if ok != "ok":
            problems.append(f"integrity_check: {ok}")
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with ctx.store.engine.begin() as conn:
                conn.execute(text("INSERT INTO memory_fts(memory_fts) VALUES ('integrity-check')"))
        except SQLAlchemyError as exc:
            problems.append(f"fts integrity-check: {exc}")
    else:
        unindexed = _rows(ctx, "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.memory_id = m.id)")
        orphans = _rows(ctx, "SELECT count(*) FROM memory_fts f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.memory_id)")
    if unindexed[0][0]:
        problems.append(f"{unindexed[0][0]} memories missing from the keyword index")
    if orphans[0][0]:
        problems.append(f"{orphans[0][0]} keyword index rows without a memory")
    return problems


def _turn_contents(ctx: Any, user_id: str) -> list[str]:
    return [r[0] for r in _rows(ctx, "SELECT content FROM turns WHERE user_id = :u", u=user_id)]


def _half_written(ctx: Any) -> int:
    """Turns of user messages without the turn memory an add writes in the same transaction."""
    rows = _rows(
        ctx,
        "SELECT count(*) FROM turns t WHERE t.role = 'user' AND t.kind = 'message' AND NOT EXISTS "
        "(SELECT 1 FROM memory_sources s WHERE s.turn_id = t.id)",
    )
    return int(rows[0][0])


# --- worker processes ------------------------------------------------------------------------------


def worker() -> None:
    """Entry of the worker processes: ``python -c '...worker()' <kind> <url> <tag> [arg]``. Prints
    ``ACK <payload>`` after each call that returned, ``ERR <error>`` after each that raised."""
    kind, url, tag = sys.argv[1:4]
    extra = sys.argv[4] if len(sys.argv) > 4 else ""
    asyncio.run(_work(kind, url, tag, extra))


async def _work(kind: str, url: str, tag: str, extra: str) -> None:
    async with _context(url) as ctx:

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
        [sys.executable, "-c", "from deepcontext.bench.reliability import worker; worker()", kind, url, tag, extra],
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


def _kill_rounds(kind: str, url: str, rounds: int, rng: random.Random, extra: str, max_delay: float) -> tuple[list[tuple[str, str]], list[str]]:
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
    out = Outcome("kill-add", _backend(url))
    acks, errors = await asyncio.to_thread(_kill_rounds, "add", url, rounds, rng, "", delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)  # one add in flight at each kill
    out.notes += errors[:3]
    async with _context(url) as ctx:
        by_user: dict[str, set[str]] = {}
        for user, token in acks:
            by_user.setdefault(user, set()).add(token)
        for user, tokens in by_user.items():
            text = "\n".join(_turn_contents(ctx, user))
            out.lost += sum(1 for t in tokens if f"Note {t}:" not in text or f"Noted {t}." not in text)
            other = user[:-1] + ("1" if user.endswith("0") else "0")
            out.leaked += sum(1 for t in by_user.get(other, set()) if f"{t}:" in text)
        out.lost += _half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _kill_import(url: str, rounds: int, rng: random.Random, workdir: Path, delay: float) -> Outcome:
    out = Outcome("kill-import", _backend(url))
    async with _context(url) as ctx:
        for i in range(20):
            await ctx.add([{"role": "user", "name": "Ana", "content": f"I visited city {i} and met friend number {i}"}], user_id="source")
        records = [json.loads(json.dumps(r)) async for r in ctx.export("source")]
        expected = (await ctx.stats("source"))["memories"]
    path = workdir / f"export-{_backend(url)}.json"
    path.write_text(json.dumps(records))
    acks, errors = await asyncio.to_thread(_kill_rounds, "import", url, rounds, rng, str(path), delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)
    out.notes += errors[:3]
    acked = {user for user, _ in acks}
    async with _context(url) as ctx:
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


async def _kill_consolidate(url: str, rounds: int, rng: random.Random, delay: float) -> Outcome:
    out = Outcome("kill-consolidate", _backend(url))
    acks, errors = await asyncio.to_thread(_kill_rounds, "consolidate", url, rounds, rng, "", delay)
    out.tried, out.failed = len(acks) + rounds, len(errors)
    out.notes += errors[:3]
    async with _context(url) as ctx:
        for user in {u for u, _ in acks}:
            text = "\n".join(_turn_contents(ctx, user))
            out.lost += sum(1 for u, t in acks if u == user and t not in text)
            started = time.perf_counter()
            try:  # the killed holder's lock must not block the next run
                await ctx.run_lifecycle(user, consolidate=True, wait=5)
            except Exception as exc:  # noqa: BLE001 - counted
                out.failed += 1
                out.notes.append(f"lifecycle after kill: {type(exc).__name__}: {exc}")
            out.latencies_ms.append((time.perf_counter() - started) * 1000)
        out.lost += _half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _processes(url: str, writers: int, per_writer: int) -> Outcome:
    import threading

    out = Outcome("processes", _backend(url))
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
    async with _context(url) as ctx:
        for w in range(writers):
            for u in (f"p{w}-u0", f"p{w}-u1"):
                text = "\n".join(_turn_contents(ctx, u))
                out.lost += sum(1 for user, t in acks if user == u and f"Note {t}:" not in text)
        out.lost += writers * per_writer - len(acks) - len(errors)  # calls that neither returned nor raised
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


async def _race_delete(url: str, adds: int) -> Outcome:
    from deepcontext.errors import WriteConflictError

    out = Outcome("race-delete", _backend(url))
    async with _context(url) as ctx:
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
        out.lost += _half_written(ctx)
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    return out


# --- REST --------------------------------------------------------------------------------------------


def _hostile(rng: random.Random, other_ids: list[int]) -> tuple[str, str, Any, dict[str, str], bool]:
    """(method, path, body or raw bytes, extra headers, must be refused) of one hostile request.
    Not refused may be right for some (a NUL cleaned from a query, a quote in a metadata key, one's
    own memory id); none may fail with a 5xx, none may show another tenant's data."""
    deep = ('{"user_id": "a", "messages": [{"role": "user", "content": "hi"}], "metadata": {"d": ' + "[" * 3000 + "]" * 3000 + "}}").encode()
    one = [{"role": "user", "content": "hi"}]
    foreign = rng.choice(other_ids) if other_ids else None
    choices: list[tuple[str, str, Any, dict[str, str], bool]] = [
        ("POST", "/v1/memories", b'{"user_id": "a", "messages": [', {}, True),
        ("POST", "/v1/memories", b"\xff\xfe not json", {}, True),
        ("POST", "/v1/memories", {"user_id": "a", "messages": [{"role": "user", "content": "x" * 1_100_000}]}, {}, True),
        ("POST", "/v1/memories", {"user_id": "a", "messages": "hello"}, {}, True),
        ("POST", "/v1/memories", {"user_id": "../b", "messages": one}, {}, True),
        ("POST", "/v1/memories", {"user_id": " a", "messages": one}, {}, True),
        ("POST", "/v1/memories", b'{"user_id": "a", "messages": [{"role": "user", "content": "hi"}], "ttl": NaN}', {}, True),
        ("POST", "/v1/memories", b'{"user_id": "a", "messages": [{"role": "user", "content": "hi"}], "timestamp": 1e300}', {}, True),
        ("POST", "/v1/memories", deep, {}, True),
        ("POST", "/v1/search", {"user_id": "a", "query": "q", "limit": 10**9}, {}, True),
        ("POST", "/v1/search", {"user_id": "a", "query": "code\x00word"}, {}, False),
        ("POST", "/v1/search", {"user_id": "a", "query": "code word", "metadata": {'team" x': "red"}}, {}, False),
        ("GET", "/v1/memories/99999999999999999999999?user_id=a", None, {}, True),
        ("GET", "/v1/users/a/stats", None, {"Authorization": "Bearer dck_nope_nope"}, True),
        ("GET", "/v1/memories?user_id=a&limit=-5", None, {}, True),
        ("GET", "/v1/turns?user_id=a&conversation_id=%00", None, {}, True),
    ]
    if foreign is not None:  # another tenant's memory id
        choices += [("GET", f"/v1/memories/{foreign}?user_id=a", None, {}, True), ("DELETE", f"/v1/memories/{foreign}?user_id=a", None, {}, True)]
    return rng.choice(choices)


async def _rest(url: str, requests: int, concurrency: int, rng: random.Random, time_limit: float) -> Outcome:
    import httpx

    from deepcontext.store.apikeys import create_key

    out = Outcome("rest", _backend(url))
    async with _context(url) as ctx:
        keys = {t: create_key(ctx.store, t, now=ctx.clock.now())[1] for t in ("red", "blue")}
    with socket_port() as port:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deepcontext", "--db", url, "--embedder", "hash", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the server did not start")
            await asyncio.sleep(0.2)
        acked: dict[str, list[str]] = {"red": [], "blue": []}
        red_ids: list[int] = []
        sem = asyncio.Semaphore(concurrency)
        stop_at = time.monotonic() + time_limit

        async with httpx.AsyncClient(base_url=base, timeout=30) as client:

            async def one(i: int) -> None:
                if time.monotonic() > stop_at:
                    return
                tenant = "red" if i % 2 else "blue"
                headers = {"Authorization": f"Bearer {keys[tenant]}"}
                kind = rng.random()
                token = f"sec{tenant}{i}"
                async with sem:
                    started = time.perf_counter()
                    out.tried += 1
                    try:
                        if kind < 0.35:
                            body: Any = {"user_id": "a", "messages": [{"role": "user", "content": f"My code word is {token} today"}]}
                            r = await client.post("/v1/memories", json=body, headers=headers)
                            if r.status_code == 201:
                                acked[tenant].append(token)
                                if tenant == "red":
                                    red_ids.extend(r.json()["memory_ids"])
                            elif r.status_code != 409:
                                out.failed += 1
                                out.notes.append(f"add -> {r.status_code} {r.text[:120]}")
                        elif kind < 0.7:
                            r = await client.post("/v1/search", json={"user_id": "a", "query": "code word", "limit": 20}, headers=headers)
                            if r.status_code != 200:
                                out.failed += 1
                                out.notes.append(f"search -> {r.status_code} {r.text[:120]}")
                            else:
                                other = "blue" if tenant == "red" else "red"
                                text = r.text
                                out.leaked += sum(1 for t in acked[other] if t in text)
                        else:
                            method, path, payload, extra, refuse = _hostile(rng, red_ids if tenant == "blue" else [])
                            h = {**headers, **extra}
                            if isinstance(payload, bytes):
                                r = await client.request(method, path, content=payload, headers={**h, "Content-Type": "application/json"})
                            elif payload is None:
                                r = await client.request(method, path, headers=h)
                            else:
                                r = await client.request(method, path, json=payload, headers=h)
                            if r.status_code < 400 and refuse:
                                out.failed += 1
                                out.notes.append(f"accepted: {method} {path[:60]} -> {r.status_code}")
                            if tenant == "blue" and r.status_code == 200 and "sec" + "red" in r.text:
                                out.leaked += 1
                        if r.status_code >= 500:
                            out.server_errors += 1
                            out.notes.append(f"{r.status_code} {r.request.method} {r.request.url.path}")
                    except httpx.TimeoutException:
                        out.timeouts += 1
                    out.latencies_ms.append((time.perf_counter() - started) * 1000)

            await asyncio.gather(*(one(i) for i in range(requests)))
            for tenant, tokens in acked.items():  # every acknowledged add is there
                r = await client.get("/v1/turns", params={"user_id": "a", "conversation_id": "default", "limit": 1000},
                                     headers={"Authorization": f"Bearer {keys[tenant]}"})  # fmt: skip
                text = r.text if r.status_code == 200 else ""
                out.lost += sum(1 for t in tokens if t not in text)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    async with _context(url) as ctx:
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    out.notes = out.notes[:10]
    return out


class socket_port:
    """A free loopback port (closed again before the server binds it)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


# --- the run -----------------------------------------------------------------------------------------

SCENARIOS = ("kill-add", "kill-import", "kill-consolidate", "processes", "race-delete", "rest")


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
                if progress:
                    progress(f"{s} on {_backend(url)}")
                if s == "kill-add":
                    results.append(await _kill_add(url, kills, rng, kill_delay))
                elif s == "kill-import":
                    results.append(await _kill_import(url, kills, rng, workdir, kill_delay))
                elif s == "kill-consolidate":
                    results.append(await _kill_consolidate(url, kills, rng, kill_delay))
                elif s == "processes":
                    results.append(await _processes(url, writers, per_writer))
                elif s == "race-delete":
                    results.append(await _race_delete(url, per_writer * writers))
                elif s == "rest":
                    results.append(await _rest(url, requests, concurrency, rng, time_limit))
                else:
                    raise ValueError(f"unknown scenario {s!r}; known: {', '.join(SCENARIOS)}")
    return results


def environment() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "embedder": "hash"}
