"""Helpers of the server tests: an app over a real database, API keys, httpx clients, a real
uvicorn process on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from deepcontext import DeepContext

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Api:
    """A running app (lifespan entered) and its engine."""

    app: FastAPI
    ctx: DeepContext
    #: the Host the client names (with authentication off only loopback names are served)
    host: str = "testserver"

    def key(self, tenant: str, users: list[str] | None = None, read_only: bool = False, name: str | None = None) -> str:
        return self.ctx.store.keys.create(tenant, now=self.ctx.clock.now(), user_ids=users, read_only=read_only, name=name)[1]

    def client(self, key: str | None = None, *, client_host: str = "127.0.0.1", **kw: Any) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        transport = httpx.ASGITransport(app=self.app, client=(client_host, 50000))
        return httpx.AsyncClient(transport=transport, base_url=f"http://{self.host}", headers=headers, **kw)


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[None]:
    """Run the app's lifespan (httpx's ASGI transport does not)."""
    async with app.router.lifespan_context(app):
        yield


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPCONTEXT_")}
    env.update(extra)
    return env


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"server exited with {proc.returncode}:\n{out}")
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer in {timeout} s")


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]


@contextmanager
def serve(args: list[str], *, health: str = "/health", env: dict[str, str] | None = None) -> Iterator[Server]:
    """``deepcontext <args> --port P`` in a subprocess, once it answers; stopped after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepcontext", *args, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env or cli_env(),
        cwd=str(ROOT),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + health, proc)
        yield Server(base, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def flat_routes(app: FastAPI) -> list[tuple[str, set[str], Any]]:
    """``(path, methods, route)`` of every route, routers included (FastAPI >= 0.13x keeps included
    routers as lazy entries of ``app.routes``); ``route`` exposes ``dependant`` for API routes."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: routes are flat already
        return [(r.path, set(getattr(r, "methods", None) or ()), r) for r in app.routes]
    return [(rc.path, set(rc.methods or ()), rc) for rc in iter_route_contexts(app.routes)]
