"""`deepcontext backup` / `restore`: a SQLite copy taken while another writer works, restored
elsewhere, answers the same searches; the refusals; PostgreSQL's pg_dump / pg_restore round trip."""

from __future__ import annotations

import asyncio
import glob
import shutil
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from deepcontext import DeepContext
from tests.support.cli import run_cli

FACTS = [
    "I live in Lisbon and I love jazz",
    "My sister Marta works as a nurse in Porto",
    "I am allergic to peanuts",
    "I drive a red Volvo to work every day",
]
QUERIES = ["jazz", "where does my sister work", "allergies", "what car do I drive"]


async def _fill(url: str) -> None:
    async with DeepContext(database_url=url, embedder="hash") as ctx:
        for n, fact in enumerate(FACTS):
            await ctx.add([{"role": "user", "content": fact}], "ana", f"c{n}")


async def _answers(url: str, user: str = "ana") -> list[list[tuple[int, str]]]:
    async with DeepContext(database_url=url, embedder="hash") as ctx:
        out = []
        for q in QUERIES:
            found = await ctx.search(q, user, limit=5, track_access=False)
            out.append([(r.memory_id, r.text) for r in found.results])
        return out


async def _texts(url: str, user: str) -> set[str]:
    async with DeepContext(database_url=url, embedder="hash") as ctx:
        return {m.text for m in (await ctx.list(user, limit=500)).memories}


def cli(db: Path | str, *args: str):  # noqa: ANN201 - a CompletedProcess
    return run_cli(["--db", str(db), "--embedder", "hash", *args])


def test_backup_while_writing_restores_elsewhere(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    url = f"sqlite:///{db}"
    asyncio.run(_fill(url))
    stop, written = threading.Event(), []

    def writer() -> None:
        async def go() -> None:
            async with DeepContext(database_url=url, embedder="hash") as ctx:
                n = 0
                while not stop.is_set() or n < 3:
                    await ctx.add([{"role": "user", "content": f"I bought book number {n}"}], "bob", f"b{n}")
                    written.append(n)
                    n += 1

        asyncio.run(go())

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 2:
            threading.Event().wait(0.01)
        done = cli(db, "backup", str(tmp_path / "copy.db"))
    finally:
        stop.set()
        thread.join()
    assert done.returncode == 0, done.stderr
    assert "integrity check ok" in done.stdout
    # one self-contained file
    assert not list(tmp_path.glob("copy.db-*"))

    elsewhere = tmp_path / "other" / "restored.db"
    elsewhere.parent.mkdir()
    put = cli(elsewhere, "restore", str(tmp_path / "copy.db"))
    assert put.returncode == 0, put.stderr
    restored = f"sqlite:///{elsewhere}"
    assert asyncio.run(_answers(restored)) == asyncio.run(_answers(url))
    # the copy is a moment of the writer's work: some of its memories, none it did not write
    copied, everything = asyncio.run(_texts(restored, "bob")), asyncio.run(_texts(url, "bob"))
    assert copied and copied <= everything


def test_refusals(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    asyncio.run(_fill(f"sqlite:///{db}"))
    copy = tmp_path / "copy.db"
    assert cli(db, "backup", str(copy)).returncode == 0

    again = cli(db, "backup", str(copy))
    assert again.returncode == 1 and "--force" in again.stderr
    assert cli(db, "backup", str(copy), "--force").returncode == 0
    missing = cli(tmp_path / "nothing.db", "backup", str(tmp_path / "x.db"))
    assert missing.returncode == 1 and "no database" in missing.stderr

    existing = cli(db, "restore", str(copy))
    assert existing.returncode == 1 and "--force" in existing.stderr

    junk = tmp_path / "junk.db"
    sqlite3.connect(junk).execute("CREATE TABLE notes (x)").connection.commit()
    refused = cli(tmp_path / "new.db", "restore", str(junk))
    assert refused.returncode == 1 and "not a deepcontext database" in refused.stderr

    future = tmp_path / "future.db"
    shutil.copy(copy, future)
    with sqlite3.connect(future) as conn:
        conn.execute("UPDATE dc_meta SET value = '999' WHERE key = 'schema_version'")
    newer = cli(tmp_path / "new.db", "restore", str(future))
    assert newer.returncode == 1 and "newer" in newer.stderr and "999" in newer.stderr
    assert not (tmp_path / "new.db").exists()


def test_restore_replaces_and_keeps_the_old_one(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    url = f"sqlite:///{db}"
    asyncio.run(_fill(url))
    copy = tmp_path / "copy.db"
    assert cli(db, "backup", str(copy)).returncode == 0
    before = asyncio.run(_answers(url))

    async def later() -> None:
        async with DeepContext(database_url=url, embedder="hash") as ctx:
            await ctx.add([{"role": "user", "content": "I love jazz festivals in summer"}], "ana", "late")

    asyncio.run(later())
    graphs = Path(f"{db}.vectors")
    graphs.mkdir(exist_ok=True)
    (graphs / "stale.usearch").write_bytes(b"old graph")

    put = cli(db, "restore", str(copy), "--force")
    assert put.returncode == 0, put.stderr
    assert not graphs.exists()
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    assert asyncio.run(_answers(url)) == before
    kept = f"sqlite:///{tmp_path / 'memory.db.before-restore'}"
    assert "I love jazz festivals in summer" in " ".join(asyncio.run(_texts(kept, "ana")))


def test_postgres_prints_the_commands(tmp_path: Path) -> None:
    url = "postgresql://ana:secret@db.example:5432/memory"
    dump = cli(url, "backup", str(tmp_path / "m.dump"))
    assert dump.returncode == 2
    assert f"pg_dump --format=custom --file={tmp_path / 'm.dump'} postgresql://ana@db.example:5432/memory" in dump.stdout
    assert "secret" not in dump.stdout + dump.stderr
    back = cli(url, "restore", str(tmp_path / "m.dump"))
    assert back.returncode == 2 and "pg_restore --clean --if-exists --no-owner" in back.stdout


def _pg_tool(name: str) -> str | None:
    found = shutil.which(name)
    return found or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)


def test_postgres_dump_and_restore_round_trip(pg_database, tmp_path: Path) -> None:  # noqa: ANN001
    dump_bin, restore_bin = _pg_tool("pg_dump"), _pg_tool("pg_restore")
    if not (dump_bin and restore_bin):
        pytest.skip("pg_dump / pg_restore are not installed")
    source, target = pg_database(), pg_database()
    asyncio.run(_fill(source))
    printed = cli(source, "backup", str(tmp_path / "m.dump")).stdout.split()
    assert printed[0] == "pg_dump"
    subprocess.run([dump_bin, *printed[1:]], check=True, capture_output=True)
    printed = cli(target, "restore", str(tmp_path / "m.dump")).stdout.split()
    assert printed[0] == "pg_restore"
    subprocess.run([restore_bin, *printed[1:]], check=True, capture_output=True)
    assert asyncio.run(_answers(target)) == asyncio.run(_answers(source))
