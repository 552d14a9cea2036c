"""An up-to-date SQLite database in a directory this process may not write opens read-only:
searches answer, writes fail with StorageError, nothing fails in the background."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from deepcontext import DeepContext, StorageError
from deepcontext.embed import HashEmbedder


@contextmanager
def read_only_view(src: Path, tmp_path: Path) -> Iterator[Path]:
    """``src`` as a directory this process cannot write: a read-only bind mount when running as root
    (root ignores file modes), else the modes taken away."""
    if os.geteuid() != 0:
        for p in src.iterdir():
            p.chmod(0o444)
        src.chmod(0o555)
        try:
            yield src
        finally:
            src.chmod(0o755)
        return
    view = tmp_path / "view"
    view.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "--bind", str(src), str(view)], capture_output=True).returncode:
        pytest.skip("running as root without the right to bind-mount: cannot make a read-only directory")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], check=True, capture_output=True)
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=True)


async def test_read_only_database_opens_and_answers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    src = tmp_path / "data"
    src.mkdir()
    async with DeepContext(database_url=f"sqlite:///{src}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{"role": "user", "content": "I live in Porto and work at Globex"}], user_id="u")
    with read_only_view(src, tmp_path) as view:
        caplog.set_level(logging.WARNING)
        async with DeepContext(database_url=f"sqlite:///{view}/m.db", embedder=HashEmbedder(64)) as ctx:
            assert ctx.store.read_only
            for _ in range(3):
                assert (await ctx.search("Where do I live?", user_id="u")).results
            assert await ctx.users() == ["u"]
            with pytest.raises(StorageError):
                await ctx.add([{"role": "user", "content": "I moved to Braga"}], user_id="u")
        assert not [r for r in caplog.records if "never retrieved" in r.getMessage() or r.name == "asyncio"]
        assert sorted(p.name for p in view.iterdir()) == ["m.db"]


async def test_background_failures_are_logged_once(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A PostgreSQL role that may only read: searches answer, and the access-count updates they start
    in the background fail; that is one warning, not an error per search."""
    import secrets

    import psycopg

    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{"role": "user", "content": "I live in Porto and work at Globex"}], user_id="u")
    role = f"dc_reader_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        reader_url = pg_url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
        caplog.set_level(logging.DEBUG, logger="deepcontext")
        async with DeepContext(database_url=reader_url, embedder=HashEmbedder(64)) as ctx:
            for _ in range(4):
                assert (await ctx.search("Where do I live?", user_id="u")).results
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "background" in r.getMessage()]
        assert len(warnings) == 1 and "StorageError" in warnings[0].getMessage()
        assert len([r for r in caplog.records if "background" in r.getMessage()]) == 4  # the others at debug level
        assert not [r for r in caplog.records if r.name == "asyncio"]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:  # roles belong to the server: drop it
            conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
            conn.execute(f"DROP ROLE {role}")


async def test_context_on_a_read_only_database_writes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """context() counts the accesses of what it includes, except on a read-only database (as search)."""
    src = tmp_path / "data"
    src.mkdir()
    async with DeepContext(database_url=f"sqlite:///{src}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{"role": "user", "content": "I live in Porto and work at Globex"}], user_id="u")
    with read_only_view(src, tmp_path) as view:
        caplog.set_level(logging.DEBUG, logger="deepcontext")
        async with DeepContext(database_url=f"sqlite:///{view}/m.db", embedder=HashEmbedder(64)) as ctx:
            assert "Porto" in (await ctx.context("Where do I live?", user_id="u")).text
            await ctx.flush()
        assert not [r for r in caplog.records if "background" in r.getMessage()]


async def test_rest_over_a_read_only_database(tmp_path: Path) -> None:
    """Keys are checked without writing, reads answer, writes get a 503 saying the database is
    read-only, and readiness says so (200, read_only true)."""
    import httpx

    from deepcontext.server import create_app
    from tests.server.helpers import running

    src = tmp_path / "data"
    src.mkdir()
    async with DeepContext(database_url=f"sqlite:///{src}/m.db", embedder=HashEmbedder(64)) as ctx:
        await ctx.add([{"role": "user", "content": "I live in Porto and work at Globex"}], user_id="acme/ana")
        key = ctx.store.keys.create("acme", now=ctx.clock.now())[1]
    with read_only_view(src, tmp_path) as view:
        ctx = DeepContext(database_url=f"sqlite:///{view}/m.db", embedder=HashEmbedder(64), metrics_enabled=True)
        app = create_app(ctx)
        try:
            async with running(app):
                transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
                headers = {"Authorization": f"Bearer {key}"}
                async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers) as c:
                    ready = await c.get("/v1/ready")
                    assert ready.status_code == 200 and ready.json()["read_only"] is True, ready.text
                    for _ in range(2):  # the second request checks the key again: still no write
                        r = await c.post("/v1/search", json={"user_id": "ana", "query": "Where do I live?"})
                        assert r.status_code == 200 and "Porto" in r.text, r.text
                    assert (await c.get("/v1/memories", params={"user_id": "ana"})).json()["memories"]
                    r = await c.post("/v1/context", json={"user_id": "ana", "query": "Where do I live?"})
                    assert r.status_code == 200, r.text
                    r = await c.post(
                        "/v1/memories", json={"user_id": "ana", "messages": [{"role": "user", "content": "I moved"}]}
                    )
                    assert r.status_code == 503 and r.headers["content-type"] == "application/problem+json", r.text
                    assert "read-only" in r.json()["detail"] and r.json()["type"].endswith("read-only-database")
                    metrics = (await c.get("/metrics")).text
                    assert 'deepcontext_database_errors_total{kind="read-only-database"} 1.0' in metrics
        finally:
            await ctx.close()
        assert sorted(p.name for p in view.iterdir()) == ["m.db"]
