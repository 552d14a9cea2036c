"""Reliability scenarios of the database's limits, each through the REST app in process (the
ASGI app ``deepcontext serve`` runs) or the CLI:

``read-only``
    A SQLite database in a folder this process may not write (file modes; a read-only bind mount
    when running as root): readiness answers 200 with ``read_only``, every read answers, every write
    gets a 503 saying the database is read-only, and no file appears next to the database.
``read-only-key``
    Searches and contexts of a read-only key change nothing in the data (access counts included).
``disk-full``
    A SQLite file capped at its size (``PRAGMA max_page_count``: SQLite's SQLITE_FULL, as on a full
    disk): writes get a 507 saying "disk full", readiness a 503 "disk full", reads answer; once there
    is room a write succeeds and readiness answers 200 again.
``cli-embedder``
    A database made with one embedder, the CLI configured with another that cannot even be built:
    the commands that embed nothing (keys, users, stats, list, export, delete-user...) work.

``failed`` counts the answers that were not the promised ones; ``lost`` the rows a read-only key's
reads changed. SQLite-only scenarios report nothing tried on PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from deepcontext_bench.reliability_checks import Outcome, backend_name, open_context

__all__ = ["run_cli_embedder", "run_disk_full", "run_read_only", "run_read_only_key"]

QUERY = "Where does Ana live?"
SAID = [{"role": "user", "name": "Ana", "content": "I live in Lisbon and work at Globex; my sister Eva lives in Porto."}]
#: more than the free pages of a small file can hold
LONG = [{"role": "user", "content": " ".join(f"I met Person{n} in City{n}." for n in range(800))}]


@asynccontextmanager
async def _client(ctx: Any, key: str | None) -> AsyncIterator[Any]:
    """An HTTP client of the REST app over ``ctx`` (lifespan entered)."""
    import httpx

    from deepcontext.server import create_app

    app = create_app(ctx)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers, timeout=60) as c:
            yield c


def _expect(out: Outcome, what: str, ok: bool, started: float | None = None) -> None:
    """Count one check (timed from ``started`` when given)."""
    out.tried += 1
    if started is not None:
        out.latencies_ms.append((time.perf_counter() - started) * 1000)
    if not ok:
        out.failed += 1
        out.notes.append(what)


async def _call(out: Outcome, c: Any, what: str, method: str, path: str, want: int, json: Any = None, **kw: Any) -> Any:
    started = time.perf_counter()
    r = await c.request(method, path, json=json, **kw)
    if r.status_code >= 500 and want < 500:
        out.server_errors += 1
    _expect(out, f"{what}: {r.status_code} {r.text[:160]}", r.status_code == want, started)
    return r


# --- read-only -----------------------------------------------------------------------------------


@contextmanager
def _read_only_folder(src: Path, workdir: Path) -> Iterator[Path | None]:
    """``src`` as a folder this process cannot write, or None when that cannot be made."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in src.iterdir()}
        for p in modes:
            p.chmod(0o444)
        src.chmod(0o555)
        try:
            yield src
        finally:
            src.chmod(0o755)
            for p, mode in modes.items():
                p.chmod(mode)
        return
    view = workdir / "read-only-view"
    view.mkdir(exist_ok=True)
    if shutil.which("mount") is None or subprocess.run(["mount", "--bind", str(src), str(view)], capture_output=True).returncode:
        yield None
        return
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True, capture_output=True)
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=False, capture_output=True)


async def run_read_only(url: str, requests: int) -> Outcome:

    out = Outcome("read-only", backend_name(url))
    if backend_name(url) != "sqlite":
        out.notes.append("SQLite only")
        return out
    with tempfile.TemporaryDirectory(prefix="dc-read-only-") as tmp:
        src = Path(tmp) / "data"
        src.mkdir()
        async with open_context(f"sqlite:///{src}/m.db") as ctx:
            await ctx.add(SAID, user_id="acme/ana")
            key = ctx.store.keys.create("acme", now=ctx.clock.now())[1]
        with _read_only_folder(src, Path(tmp)) as view:
            if view is None:
                out.notes.append("skipped: running as root without the right to bind-mount a read-only folder")
                return out
            async with open_context(f"sqlite:///{view}/m.db") as ctx, _client(ctx, key) as c:
                r = await _call(out, c, "readiness", "GET", "/v1/ready", 200)
                _expect(out, "readiness without read_only", r.status_code == 200 and r.json().get("read_only") is True)
                for i in range(max(1, requests // 4)):
                    r = await _call(out, c, "search", "POST", "/v1/search", 200, {"user_id": "ana", "query": QUERY})
                    await _call(out, c, "context", "POST", "/v1/context", 200, {"user_id": "ana", "query": QUERY})
                    await _call(out, c, "list", "GET", "/v1/memories", 200, params={"user_id": "ana"})
                    body = {"user_id": "ana", "messages": [{"role": "user", "content": f"I moved to Braga {i}"}]}
                    r = await _call(out, c, "write", "POST", "/v1/memories", 503, body)
                    _expect(out, "a write's 503 does not say read-only", "read-only" in r.text)
                await ctx.flush()
            extra = sorted(p.name for p in view.iterdir() if p.name != "m.db")
            _expect(out, f"files made next to the database: {extra}", not extra)
    return out


# --- read-only-key -------------------------------------------------------------------------------


def _snapshot(ctx: Any) -> dict[str, list[str]]:
    from sqlalchemy import select

    with ctx.store.connection() as conn:
        return {
            t.name: sorted(repr(tuple(r)) for r in conn.execute(select(t)))
            for t in ctx.store.metadata.sorted_tables
            # the keys' own bookkeeping and the activity log (a record of the calls, kept under the key) are not user data
            if t.name not in NOT_USER_DATA
        }


NOT_USER_DATA = frozenset({"api_keys", "ui_sessions", "activity", "activity_hits"})


async def run_read_only_key(url: str, requests: int) -> Outcome:

    out = Outcome("read-only-key", backend_name(url))
    async with open_context(url) as ctx:
        user = f"acme/ro-{os.getpid()}-{time.monotonic_ns()}"  # its own user: a PostgreSQL database may hold others
        await ctx.add(SAID, user_id=user)
        await ctx.flush()
        reader = ctx.store.keys.create("acme", now=ctx.clock.now(), read_only=True)[1]
        before = _snapshot(ctx)
        async with _client(ctx, reader) as c:
            external = user.split("/", 1)[1]
            for _ in range(max(1, requests // 2)):
                await _call(out, c, "search", "POST", "/v1/search", 200, {"user_id": external, "query": QUERY})
                await _call(out, c, "context", "POST", "/v1/context", 200, {"user_id": external, "query": QUERY})
            await ctx.flush()
        after = _snapshot(ctx)
        changed = [t for t in before if before[t] != after.get(t)]
        out.lost += sum(len(set(before[t]) ^ set(after[t])) for t in changed)
        if changed:
            out.notes.append(f"a read-only key's reads changed {', '.join(changed)}")
    return out


# --- disk-full -----------------------------------------------------------------------------------


class _PageCap:
    """Caps the file of ``engine``'s connections at some pages (SQLite's max_page_count)."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self.engine = engine
        self.pages: int | None = None
        event.listen(engine, "connect", self._on_connect)

    def _on_connect(self, dbapi_conn: Any, _record: Any) -> None:
        if self.pages is not None:
            dbapi_conn.execute(f"PRAGMA max_page_count = {self.pages}")

    def set(self, pages: int | None) -> None:
        self.pages = pages
        self.engine.dispose()


async def run_disk_full(url: str, requests: int) -> Outcome:

    out = Outcome("disk-full", backend_name(url))
    if backend_name(url) != "sqlite":
        out.notes.append("SQLite only")
        return out
    async with open_context(url) as ctx:
        await ctx.add(SAID, user_id="acme/ana")
        key = ctx.store.keys.create("acme", now=ctx.clock.now())[1]
        reader = ctx.store.keys.create("acme", now=ctx.clock.now(), read_only=True)[1]
        ro = {"Authorization": f"Bearer {reader}"}
        async with _client(ctx, key) as c:
            await _call(out, c, "a key's first use", "GET", "/v1/users", 200)
            await _call(out, c, "a key's first use", "GET", "/v1/users", 200, headers=ro)
            cap = _PageCap(ctx.store.engine)
            with cap.engine.connect() as conn:
                pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
            cap.set(pages)
            for _ in range(max(1, requests // 3)):
                r = await _call(out, c, "write on a full disk", "POST", "/v1/memories", 507, {"user_id": "ana", "messages": LONG})
                _expect(out, "the 507 does not say disk full", "disk full" in r.text)
                r = await _call(out, c, "readiness on a full disk", "GET", "/v1/ready", 503)
                _expect(out, "readiness does not say disk full", "disk full" in r.text)
                await _call(
                    out, c, "read on a full disk", "POST", "/v1/search", 200, {"user_id": "ana", "query": QUERY}, headers=ro
                )
            cap.set(None)
            await _call(out, c, "write once there is room", "POST", "/v1/memories", 201, {"user_id": "ana", "messages": SAID})
            await _call(out, c, "readiness after a write succeeded", "GET", "/v1/ready", 200)
    return out


# --- cli-embedder --------------------------------------------------------------------------------


def run_cli_embedder(url: str) -> Outcome:
    """The CLI in process (typer's runner; call it outside an event loop), its settings from the
    environment it is given."""
    import json

    from typer.testing import CliRunner

    from deepcontext.cli.main import app

    out = Outcome("cli-embedder", backend_name(url))
    # the other scenarios' embedder (a PostgreSQL database is shared by them), and one that cannot
    # even be built (no API key)
    made_with: dict[str, str | None] = {"DEEPCONTEXT_EMBEDDER": "hash", "DEEPCONTEXT_EMBEDDING_DIMENSIONS": None}
    other: dict[str, str | None] = {
        "DEEPCONTEXT_EMBEDDER": "openai",
        "DEEPCONTEXT_EMBEDDING_API_KEY": None,
        "OPENAI_API_KEY": None,
    }
    tag = f"cli{os.getpid()}x{time.monotonic_ns()}"

    def cli(env: dict[str, str | None], *args: str, stdin: str | None = None) -> Any:
        return CliRunner().invoke(app, ["--db", url, *args], input=stdin, env=env)

    for user in (f"{tag}a", f"{tag}b"):
        r = cli(made_with, "add", "-", "--user", user, "--conversation", "c1", stdin=json.dumps(SAID))
        if r.exit_code:  # another embedder's database: nothing to probe
            out.notes.append(f"setup failed: {r.output.strip()[:160]}")
            return out
    key_id = json.loads(cli(made_with, "keys", "create", "--tenant", tag, "--json").stdout)["key_id"]
    for args in (
        ("keys", "list", "--json"),
        ("keys", "revoke", key_id),
        ("users",),
        ("stats", "--user", f"{tag}a"),
        ("list", "--user", f"{tag}a", "--json"),
        ("export", "--user", f"{tag}a"),
        ("lifecycle", "--user", f"{tag}a", "--no-consolidate", "--json"),
        ("delete-user", f"{tag}b", "--yes"),
    ):
        started = time.perf_counter()
        r = cli(other, *args)
        _expect(out, f"{' '.join(args[:2])}: {r.output.strip()[:160]}", r.exit_code == 0, started)
    cli(made_with, "delete-user", f"{tag}a", "--yes")
    return out
