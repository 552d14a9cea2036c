"""The ``rest`` reliability scenario: a real ``deepcontext serve`` on loopback, two tenants, valid
requests mixed with hostile ones (malformed, oversized, wrong types, other tenants' ids, bad keys)."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from typing import Any

from deepcontext_bench.reliability_checks import Outcome, backend_name, check_index, open_context


def _hostile(rng: random.Random, other_ids: list[int]) -> tuple[str, str, Any, dict[str, str], bool]:
    """(method, path, body or raw bytes, extra headers, must be refused) of one hostile request.
    Not refused may be right for some (a NUL cleaned from a query, a quote in a metadata key, one's
    own memory id); none may fail with a 5xx, none may show another tenant's data."""
    deep = (
        '{"user_id": "a", "messages": [{"role": "user", "content": "hi"}], "metadata": {"d": ' + "[" * 3000 + "]" * 3000 + "}}"
    ).encode()
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
        (
            "POST",
            "/v1/memories",
            b'{"user_id": "a", "messages": [{"role": "user", "content": "hi"}], "timestamp": 1e300}',
            {},
            True,
        ),
        ("POST", "/v1/memories", deep, {}, True),
        # year 10000 in epoch seconds (not milliseconds), and the last microseconds of year 9999
        ("POST", "/v1/memories", {"user_id": "a", "messages": one, "timestamp": 253402300800}, {}, True),
        ("POST", "/v1/search", {"user_id": "a", "query": "q", "before": "9999-12-31T23:59:59.99999Z"}, {}, True),
        ("GET", "/v1/memories?user_id=a&after=253402300800", None, {}, True),
        ("POST", "/v1/search", {"user_id": "a", "query": "q", "limit": 10**9}, {}, True),
        ("POST", "/v1/search", {"user_id": "a", "query": "code\x00word"}, {}, False),
        ("POST", "/v1/search", {"user_id": "a", "query": "code word", "metadata": {'team" x': "red"}}, {}, False),
        ("GET", "/v1/memories/99999999999999999999999?user_id=a", None, {}, True),
        ("GET", "/v1/users/a/stats", None, {"Authorization": "Bearer dck_nope_nope"}, True),
        ("GET", "/v1/memories?user_id=a&limit=-5", None, {}, True),
        ("GET", "/v1/turns?user_id=a&conversation_id=%00", None, {}, True),
    ]
    if foreign is not None:  # another tenant's memory id
        choices += [
            ("GET", f"/v1/memories/{foreign}?user_id=a", None, {}, True),
            ("DELETE", f"/v1/memories/{foreign}?user_id=a", None, {}, True),
        ]
    return rng.choice(choices)


async def run_rest(url: str, requests: int, concurrency: int, rng: random.Random, time_limit: float) -> Outcome:
    import httpx

    out = Outcome("rest", backend_name(url))
    async with open_context(url) as ctx:
        keys = {t: ctx.store.keys.create(t, now=ctx.clock.now())[1] for t in ("red", "blue")}
    with socket_port() as port:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "deepcontext",
                "--db",
                url,
                "--embedder",
                "hash",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_serving(base, proc)
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
                            body: Any = {
                                "user_id": "a",
                                "messages": [{"role": "user", "content": f"My code word is {token} today"}],
                            }
                            r = await client.post("/v1/memories", json=body, headers=headers)
                            if r.status_code == 201:
                                acked[tenant].append(token)
                                if tenant == "red":
                                    red_ids.extend(r.json()["memory_ids"])
                            elif r.status_code != 409:
                                out.failed += 1
                                out.notes.append(f"add -> {r.status_code} {r.text[:120]}")
                        elif kind < 0.7:
                            r = await client.post(
                                "/v1/search", json={"user_id": "a", "query": "code word", "limit": 20}, headers=headers
                            )
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
                                r = await client.request(
                                    method, path, content=payload, headers={**h, "Content-Type": "application/json"}
                                )
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
        stop_server(proc)
    async with open_context(url) as ctx:
        problems = check_index(ctx)
        out.lost += len(problems)
        out.notes += problems
    out.notes = out.notes[:10]
    return out


async def wait_serving(base: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Return once the server at ``base`` answers its health check; raise if it exits or times out."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(base + "/v1/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError("the server did not start")
        await asyncio.sleep(0.2)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a server process, killing it if it has not exited within 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class socket_port:
    """A free loopback port (closed again before the server binds it)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None
