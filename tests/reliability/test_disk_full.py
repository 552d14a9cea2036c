"""A full disk: writes fail with DiskFullError (REST: 507 saying "disk full"), reads still answer,
readiness answers 503 "disk full" until a write succeeds again, and delete_user frees space: with
the disk reserve (sqlite_reserve_mb) on its own, without it once some space is freed (the recovery
docs/reliability.md describes).

The first test makes the disk full with SQLite's max_page_count (the same SQLITE_FULL a full disk
gives) and always runs; the others fill a real, small tmpfs and need the right to mount one."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from deepcontext import DeepContext, DiskFullError
from deepcontext.embed import HashEmbedder
from deepcontext.server import create_app
from tests.server.helpers import running

MOVED = [{"role": "user", "content": "I moved to Braga and adopted a cat named Miso"}]
#: more than the free pages of a small file can hold
LONG = [{"role": "user", "content": " ".join(f"I met Person{n} in City{n}." for n in range(800))}]


def said(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"I visited Town{n} with Bob{n}, who works at Acme{n} in Porto. " * 3}]


class PageCap:
    """Caps the file of ``engine``'s connections at some pages (SQLite's max_page_count)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.pages: int | None = None
        event.listen(engine, "connect", self._on_connect)

    def _on_connect(self, dbapi_conn: Any, _record: Any) -> None:
        if self.pages is not None:
            dbapi_conn.execute(f"PRAGMA max_page_count = {self.pages}")

    def set(self, pages: int | None) -> None:
        self.pages = pages
        self.engine.dispose()  # the pooled connections go: the next ones have the new cap


async def test_disk_full_is_said_and_reported_until_a_write_succeeds(tmp_path: Path) -> None:
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder(64))
    app = create_app(ctx)
    try:
        async with running(app):
            await ctx.add(said(0), user_id="acme/ana")
            key = ctx.store.keys.create("acme", now=ctx.clock.now())[1]
            reader = ctx.store.keys.create("acme", now=ctx.clock.now(), read_only=True)[1]
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
            headers = {"Authorization": f"Bearer {key}"}
            ro = {"Authorization": f"Bearer {reader}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as c:
                # each key's first use records it (a write); then the reads below write nothing
                assert (await c.get("/v1/users")).status_code == 200
                assert (await c.get("/v1/users", headers=ro)).status_code == 200
                cap = PageCap(ctx.store.engine)  # type: ignore[attr-defined]
                with cap.engine.connect() as conn:
                    pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
                cap.set(pages)
                with pytest.raises(DiskFullError, match="disk full"):
                    await ctx.add(LONG, user_id="acme/ana")
                r = await c.post("/v1/memories", json={"user_id": "ana", "messages": LONG})
                assert r.status_code == 507 and r.headers["content-type"] == "application/problem+json", r.text
                assert "disk full" in r.json()["detail"] and r.json()["type"].endswith("disk-full")
                ready = await c.get("/v1/ready")
                assert ready.status_code == 503 and "disk full" in ready.json()["detail"], ready.text
                # reads still answer (a read-only key's: a read-write key's counts accesses, a
                # write that may fit in the file and end the disk-full state)
                r = await c.post("/v1/search", json={"user_id": "ana", "query": "Who works at Acme0?"}, headers=ro)
                assert r.status_code == 200 and r.json()["results"], r.text
                cap.set(None)  # space again: readiness waits for a write to succeed
                assert (await c.get("/v1/ready")).status_code == 503
                r = await c.post("/v1/memories", json={"user_id": "ana", "messages": MOVED})
                assert r.status_code == 201, r.text
                assert (await c.get("/v1/ready")).status_code == 200
    finally:
        await ctx.close()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (skips when this process may not mount one)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = shutil.which("mount") is not None and os.geteuid() == 0
    if mounted:
        mounted = (
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True).returncode == 0
        )
    if not mounted:
        pytest.skip("cannot mount a small tmpfs to fill (needs root or CAP_SYS_ADMIN); the max_page_count test covers the errors")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk`` with a file; returns it."""
    filler = disk / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


async def full_database(disk: Path, **settings: Any) -> DeepContext:
    """A database on ``disk`` with users a (ten turns) and b, then the disk full."""
    ctx = DeepContext(database_url=f"sqlite:///{disk}/m.db", embedder=HashEmbedder(64), **settings)
    await ctx.init()
    for n in range(10):
        await ctx.add(said(n), user_id="a")
    await ctx.add(MOVED, user_id="b")
    fill(disk)
    with pytest.raises(DiskFullError):
        for n in range(100):
            await ctx.add([{"role": "user", "content": f"I like dish{n} and song{n}"}], user_id="b")
    assert ctx.store.disk_full
    return ctx


async def test_delete_user_frees_space_on_a_full_disk_with_the_reserve(tiny_disk: Path) -> None:
    ctx = await full_database(tiny_disk, sqlite_reserve_mb=0.5)
    try:
        counts = await ctx.delete_user("a")
        assert counts["memories"] >= 10 and not ctx.store.disk_full
        await ctx.add(MOVED, user_id="b")  # writes go on
        assert await ctx.users() == ["b"]
        assert (tiny_disk / "m.db-reserve").stat().st_size == 512 * 1024  # made again
    finally:
        await ctx.close()


async def test_delete_user_without_the_reserve_needs_some_space_freed(tiny_disk: Path) -> None:
    ctx = await full_database(tiny_disk)
    try:
        with pytest.raises(DiskFullError, match="disk full"):
            await ctx.delete_user("a")
        assert await ctx.users() == ["a", "b"]  # nothing was deleted
        filler = tiny_disk / "filler"
        os.truncate(filler, max(0, filler.stat().st_size - 1024 * 1024))  # the recovery: free some space
        assert (await ctx.delete_user("a"))["memories"] >= 10
        await ctx.add(MOVED, user_id="b")
        assert await ctx.users() == ["b"] and not ctx.store.disk_full
    finally:
        await ctx.close()
