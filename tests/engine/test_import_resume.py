"""`deepcontext import` of a large export in parts: killed with SIGKILL between parts, run again, it
continues after the last committed part and ends with exactly what one import in one transaction
writes (nothing twice, references between parts resolved, superseded facts pointing at their
replacement); a third run imports nothing."""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from deepcontext import DeepContext, ValidationError
from deepcontext_bench.synthetic import SyntheticChat


async def _export(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A user whose residence changes late in the chat, after many ordinary turns (the superseded
    memory and its replacement land in different parts)."""
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path / 'src.db'}", embedder="hash")
    await ctx.init()
    try:
        await ctx.add([{"role": "user", "content": "I live in Porto."}], "ana")
        turns = SyntheticChat(seed=5).turns(240)
        for _ in range(6):
            msgs = [{"role": r, "content": t} for r, _, t in (next(turns) for _ in range(40))]
            await ctx.add(msgs, "ana", conversation_id="chat")
        await ctx.add([{"role": "user", "content": "I moved to Lisbon last month."}], "ana")
        records = [r async for r in ctx.export("ana")]
    finally:
        await ctx.close()
    path = tmp_path / "ana.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, records


def _import(tmp_path: Path, path: Path, *args: str, db: Path | None = None) -> subprocess.Popen[str]:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "DEEPCONTEXT_EMBEDDER": "hash"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    cmd = [
        sys.executable,
        "-m",
        "deepcontext",
        "--db",
        str(db or tmp_path / "dst.db"),
        "import",
        str(path),
        "--user",
        "bob",
        *args,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _parts_committed(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=0.05) as conn:
            return int(conn.execute("SELECT count(*) FROM kv WHERE namespace = 'deepcontext.imports'").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet, or a writer holds the file
        return 0


async def _shape(db: Path, user: str) -> list[tuple[Any, ...]]:
    ctx = DeepContext(database_url=f"sqlite:///{db}", embedder="hash")
    await ctx.init()
    try:
        mems = (await ctx.list(user, include_inactive=True, limit=1000)).memories
        text_of = {m.id: m.text for m in mems}
        stats = await ctx.stats(user)
        rows = {k: v for k, v in stats.items() if k not in ("kv", "users")}
        return [
            rows,
            *sorted((m.text, m.status.value, text_of.get(m.superseded_by or 0), tuple(s.role for s in m.sources)) for m in mems),
        ]
    finally:
        await ctx.close()


@pytest.mark.slow  # SIGKILL of a real process
async def test_killed_import_resumes_without_duplicates(tmp_path: Path) -> None:
    path, records = await _export(tmp_path)
    assert len(records) > 400
    ref_db = tmp_path / "ref.db"
    ref = DeepContext(database_url=f"sqlite:///{ref_db}", embedder="hash")
    await ref.init()
    await ref.import_records(records, "bob")  # one transaction: what the parts must add up to
    await ref.close()
    expected = await _shape(ref_db, "bob")
    assert any(row[1] == "superseded" and row[2] for row in expected[1:])  # a reference across parts

    fresh = _import(tmp_path, path, "--batch", "15", db=tmp_path / "fresh.db")
    out, err = fresh.communicate(timeout=300)
    assert fresh.returncode == 0, err
    assert "resuming" not in err and "earlier run" not in out  # a first run resumes nothing
    assert await _shape(tmp_path / "fresh.db", "bob") == expected

    dst = tmp_path / "dst.db"
    # small parts: between the poll seeing two and the lock below, the importer cannot reach the end
    batch = 4
    proc = _import(tmp_path, path, "--batch", str(batch))
    deadline = time.monotonic() + 120
    while _parts_committed(dst) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    # hold the write lock so the importer waits inside its next part, then kill it there
    lock = sqlite3.connect(dst, timeout=30, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    committed = _parts_committed(dst)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    lock.execute("ROLLBACK")
    lock.close()
    assert 2 <= committed < (len(records) - 1) // batch  # stopped between parts, not at the end

    again = _import(tmp_path, path, "--batch", str(batch))
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"resuming: {committed * batch} of {len(records) - 1} records" in err
    assert "turns/s" in out and "imported by an earlier run" in out
    assert await _shape(dst, "bob") == expected

    third = _import(tmp_path, path, "--batch", str(batch))
    out, err = third.communicate(timeout=300)
    assert third.returncode == 0, err
    assert out.startswith("already imported")
    assert await _shape(dst, "bob") == expected


@pytest.mark.slow  # one of the longest tests
async def test_parts_add_up_to_one_import_on_both_backends(tmp_path: Path, db_url: str) -> None:
    _, records = await _export(tmp_path)
    ctx = DeepContext(database_url=db_url, embedder="hash")
    await ctx.init()
    try:
        seen: list[tuple[int, int]] = []
        whole = await ctx.import_records(records, "one")
        parts = await ctx.import_records(records, "parts", part_size=60, progress=lambda d, t: seen.append((d, t)))
        assert parts == whole
        assert seen[-1] == (len(records) - 1, len(records) - 1) and len(seen) == -(-(len(records) - 1) // 60) + 1
        assert (await ctx.import_records(records, "parts", part_size=60))["already_imported"] == 1

        def shape(mems: list[Any]) -> list[tuple[Any, ...]]:
            text_of = {m.id: m.text for m in mems}
            return sorted((m.text, m.status.value, text_of.get(m.superseded_by or 0), len(m.sources)) for m in mems)

        one = (await ctx.list("one", include_inactive=True, limit=1000)).memories
        many = (await ctx.list("parts", include_inactive=True, limit=1000)).memories
        assert shape(one) == shape(many)
        turns = await ctx.turns("parts", "chat", limit=500)
        assert [t.content for t in turns] == [t.content for t in await ctx.turns("one", "chat", limit=500)]
        assert len(turns) == 240 and all(t.parent_ids == [p.id] for p, t in itertools.pairwise(turns))
    finally:
        await ctx.close()


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100"])
async def test_part_size_must_be_a_positive_integer(tmp_path: Path, bad: Any) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path / 'm.db'}", embedder="hash") as ctx:
        records = [{"record": "memories", "id": 1, "text": "Ana likes tea"}]
        with pytest.raises(ValidationError, match="part_size"):
            await ctx.import_records(records, "u", part_size=bad)
        assert "u" not in await ctx.users()  # nothing written
