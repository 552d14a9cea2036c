"""`deepcontext serve` as a real uvicorn process on a free port: two workers over one database lose
nothing, and no-auth is loopback-only (its refusal runs the command in process: nothing is served).
The docs' curl examples run in tests/docs."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import httpx
import pytest

from deepcontext import DeepContext
from tests.server.helpers import ROOT, cli_env, serve
from tests.support.cli import run_cli


def _key(url: str, tenant: str = "acme") -> str:
    async def go() -> str:
        async with DeepContext(database_url=url, embedder="hash") as ctx:
            return ctx.store.keys.create(tenant, now=ctx.clock.now())[1]

    return asyncio.run(go())


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(p.name))
    return out


@pytest.mark.slow
def test_two_workers_lose_nothing(db_url: str) -> None:
    key = _key(db_url)
    users, per_user = ["ana", "bob", "cy"], 16
    with serve(["--db", db_url, "--embedder", "hash", "serve", "--workers", "2"]) as server:
        base = server.url
        workers = [c for c in _children(server.proc.pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()]
        assert len(workers) == 2

        async def run() -> None:
            headers = {"Authorization": f"Bearer {key}"}
            limits = httpx.Limits(max_connections=12)
            async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=120) as c:

                async def add(u: str, i: int) -> None:
                    msgs = [
                        {"role": "user", "name": u, "content": f"Entry {i} of {u}: I bought {i} red apples."},
                        {"role": "assistant", "content": f"Noted entry {i} for {u}."},
                    ]
                    r = await c.post("/v1/memories", json={"user_id": u, "messages": msgs, "conversation_id": "log"})
                    assert r.status_code == 201, r.text

                await asyncio.gather(*(add(u, i) for i in range(per_user) for u in users))
                for u in users:
                    turns = (await c.get("/v1/turns", params={"user_id": u, "conversation_id": "log", "limit": 1000})).json()
                    assert len(turns) == 2 * per_user
                    assert {t["content"] for t in turns} >= {f"Noted entry {i} for {u}." for i in range(per_user)}
                    roots = [t for t in turns if not t["parent_ids"]]
                    assert len(roots) == 1  # still one chain, whichever worker wrote each turn
                    parents = [t["parent_ids"][0] for t in turns if t["parent_ids"]]
                    assert len(set(parents)) == len(parents) == len(turns) - 1
                    stats = (await c.get(f"/v1/users/{u}/stats")).json()
                    assert stats["turns"] == 2 * per_user

        asyncio.run(run())


def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    settings = {"DEEPCONTEXT_DATABASE_URL": f"sqlite:///{tmp_path}/na.db", "DEEPCONTEXT_EMBEDDER": "hash"}
    for host in ("0.0.0.0", "::"):
        p = run_cli(["serve", "--host", host, "--no-auth", "--port", "1"], env=settings, cwd=ROOT, timeout=120)
        assert p.returncode == 2 and "refusing to serve without authentication" in p.stderr, p.stderr
    env2 = {**settings, "DEEPCONTEXT_REQUIRE_AUTH": "false", "DEEPCONTEXT_SERVER_HOST": "0.0.0.0"}
    p = run_cli(["serve"], env=env2, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "refusing" in p.stderr  # settings from the environment too


@pytest.mark.slow
def test_no_auth_serves_on_loopback(tmp_path: Path) -> None:
    env = cli_env(DEEPCONTEXT_DATABASE_URL=f"sqlite:///{tmp_path}/na.db", DEEPCONTEXT_EMBEDDER="hash")
    with serve(["serve", "--no-auth"], env=env) as server:
        base = server.url
        r = httpx.post(base + "/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "hello"}]})
        assert r.status_code == 201, r.text
        r = httpx.get(base + "/v1/memories", params={"user_id": "ana"})
        assert r.json()["total"] >= 1
    assert os.path.exists(tmp_path / "na.db")
