"""`deepcontext serve` as a real uvicorn process on a free port: two workers over one database lose
nothing, the README's curl examples work as written, no-auth is loopback-only (its refusal runs the
command in process: nothing is served)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from deepcontext import DeepContext
from deepcontext.store.apikeys import create_key
from tests.server.helpers import ROOT, cli_env, serve
from tests.support.cli import run_cli


def _key(url: str, tenant: str = "acme") -> str:
    async def go() -> str:
        async with DeepContext(database_url=url, embedder="hash") as ctx:
            return create_key(ctx.store, tenant, now=ctx.clock.now())[1]

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
                    msgs = [{"role": "user", "name": u, "content": f"Entry {i} of {u}: I bought {i} red apples."},
                            {"role": "assistant", "content": f"Noted entry {i} for {u}."}]
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


def _readme_curls() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## REST API", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    commands = []
    for block in blocks:
        joined = block.replace("\\\n", " ")
        commands += [line.strip() for line in joined.splitlines() if line.strip().startswith("curl ")]
    return commands


@pytest.mark.slow
def test_readme_curl_examples_work_as_written(tmp_path: Path) -> None:
    db = tmp_path / "readme.db"
    settings = {"DEEPCONTEXT_DATABASE_URL": f"sqlite:///{db}", "DEEPCONTEXT_EMBEDDER": "hash"}
    env = cli_env(**settings)
    p = run_cli(["keys", "create", "--tenant", "acme", "--name", "laptop"], env=settings, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    env["DEEPCONTEXT_KEY"] = p.stdout.strip()
    curls = _readme_curls()
    assert [c.split()[3] for c in curls] == ["POST", "POST", "DELETE", "DELETE"], curls
    with serve(["serve"], env=env) as server:
        base = server.url
        outputs = []
        for cmd in curls:
            assert "http://127.0.0.1:8000/" in cmd
            r = subprocess.run(["bash", "-c", cmd.replace("http://127.0.0.1:8000", base)], capture_output=True,
                               text=True, env=env, timeout=60)
            assert r.returncode == 0, r.stderr
            outputs.append(json.loads(r.stdout))
    added, found, deleted, erased = outputs
    assert 1 in added["memory_ids"] and "Lisbon" in added["entities_found"]
    assert found["user_id"] == "ana" and any("Lisbon" in x["text"] for x in found["results"])
    assert deleted == {"memory_id": 1, "status": "deleted"}
    assert erased["user_id"] == "ana" and erased["deleted"]["turns"] == 1


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
