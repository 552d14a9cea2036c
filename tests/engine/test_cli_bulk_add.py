"""A long chat history through `deepcontext add FILE`, as a user runs it: batches of 100 in one
transaction each, killed mid-way (SIGKILL) and run again, it continues after the last stored batch:
nothing stored twice, nothing lost."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
N = 3000


def _cmd(tmp_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "deepcontext", "--db", str(tmp_path / "bulk.db"), *args]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "DEEPCONTEXT_EMBEDDER": "hash",
        "PYTHONPATH": str(ROOT / "src"),
        "COLUMNS": "200",
    }


def _history(tmp_path: Path) -> Path:
    lines = []
    for i in range(N):
        msg = {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"Entry {i}: the parcel for order {i * 7} left depot {i % 13}.",
        }
        if i % 500 == 0:  # a message of its own metadata keeps it beside the import mark
            msg["metadata"] = {"tag": f"t{i}"}
        lines.append(json.dumps(msg))
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _turns(tmp_path: Path) -> list[tuple[str, str]]:
    db = tmp_path / "bulk.db"
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return conn.execute("SELECT content, metadata FROM turns WHERE user_id = 'ana' ORDER BY id").fetchall()
        except sqlite3.OperationalError:  # the schema is still being created
            return []


@pytest.mark.slow  # SIGKILL of a real process
def test_a_killed_add_resumes_without_duplicates_or_gaps(tmp_path: Path) -> None:
    path = _history(tmp_path)
    args = ("add", str(path), "--user", "ana", "--conversation", "archive")
    proc = subprocess.Popen(_cmd(tmp_path, *args), env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        stored = len(_turns(tmp_path))
        if stored >= 300:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the add finished before it could be interrupted"
    at_kill = len(_turns(tmp_path))
    assert 300 <= at_kill < N
    assert at_kill % 100 == 0  # whole batches only: each one is a transaction

    again = subprocess.run(_cmd(tmp_path, *args), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {at_kill} of {N} messages" in again.stderr
    assert f"stored {N - at_kill} turn(s) ({at_kill} stored earlier)" in again.stdout
    assert "turns/s" in again.stdout

    rows = _turns(tmp_path)
    contents = [c for c, _ in rows]
    expected = [json.loads(line)["content"] for line in path.read_text().splitlines()]
    assert contents == expected  # every message once, in order
    meta = [json.loads(m) for _, m in rows]
    assert [m["import"]["position"] for m in meta] == list(range(N))
    assert meta[500]["tag"] == "t500"

    # a third run finds everything stored and writes nothing
    third = subprocess.run(_cmd(tmp_path, *args), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert third.returncode == 0, third.stderr
    assert "stored 0 turn(s)" in third.stdout and len(_turns(tmp_path)) == N

    # --restart stores the input again from its start, as asked
    fourth = subprocess.run(_cmd(tmp_path, *args, "--restart"), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert fourth.returncode == 0, fourth.stderr
    assert f"stored {N} turn(s)" in fourth.stdout and len(_turns(tmp_path)) == 2 * N


@pytest.mark.slow  # SIGKILL of a real process
def test_a_killed_import_stores_nothing_and_a_rerun_stores_everything_once(tmp_path: Path) -> None:
    path = _history(tmp_path)
    assert (
        subprocess.run(
            _cmd(tmp_path, "add", str(path), "--user", "bo"), env=_env(tmp_path), capture_output=True, timeout=600
        ).returncode
        == 0
    )
    export = tmp_path / "bo.jsonl"
    p = subprocess.run(
        _cmd(tmp_path, "export", "--user", "bo", "--output", str(export)),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    args = ("import", str(export), "--user", "ana")
    proc = subprocess.Popen(_cmd(tmp_path, *args), env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert len(_turns(tmp_path)) in (0, N)  # one transaction: all or nothing
    if proc.returncode == -signal.SIGKILL and not _turns(tmp_path):
        again = subprocess.run(_cmd(tmp_path, *args), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        assert f"{N} turns" in again.stdout and "turns/s" in again.stdout
    assert [c for c, _ in _turns(tmp_path)] == [json.loads(line)["content"] for line in path.read_text().splitlines()]


@pytest.mark.slow  # the real model embeds every message twice
async def test_pipelined_vectors_are_each_texts_own(tmp_path: Path) -> None:
    """The bulk add embeds the next batch while it writes this one: every stored vector is still
    what the model gives for its text alone."""
    from deepcontext import DeepContext
    from deepcontext.embed.minilm import MiniLMEmbedder

    n = 230  # three batches, the last one short
    lines = [
        json.dumps({"role": "user" if i % 2 == 0 else "assistant", "name": None if i % 3 else "Ana",
                    "content": f"Message {i}: " + "the train to Porto leaves from platform four. " * (1 + i % 5)})
        for i in range(n)
    ]  # fmt: skip
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n")
    # the real model (no DEEPCONTEXT_EMBEDDER); the command in process
    p = run_cli(
        ["--db", str(tmp_path / "bulk.db"), "add", str(path), "--user", "ana"], env={"HOME": str(tmp_path), "COLUMNS": "200"}
    )
    assert p.returncode == 0, p.stderr
    ctx = DeepContext(database_url=f"sqlite:///{tmp_path / 'bulk.db'}")
    await ctx.init()
    try:
        memories = [m for m in ctx.store.iter_memories("ana") if m.is_active]
        stored = ctx.store.embeddings("ana", [m.id for m in memories])  # type: ignore[attr-defined]
    finally:
        await ctx.close()
    assert len(memories) >= n
    alone = MiniLMEmbedder(cache_size=0)
    for m in memories:
        own = alone.embed([m.text])[0]
        assert float(np.max(np.abs(stored[m.id] - own))) < 1e-5, m.text[:60]
