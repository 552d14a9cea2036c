"""Two processes at once: runs of one user never double-merge (the lock lives in the store, not in a
process), and adds made while another process runs the lifecycle are never lost."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepcontext import MemoryStatus, MemoryTier, SystemClock
from deepcontext.types import HistoryEvent
from tests.lifecycle._lifecycle_worker import TRICKS
from tests.lifecycle.helpers import say
from tests.support.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # lifecycle runs in several processes on one database

WORKER = Path(__file__).with_name("_lifecycle_worker.py")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


async def test_two_processes_never_double_merge(
    make_ctx: Callable[..., Any], db_url: str, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    ctx = await make_ctx(clock=SystemClock())
    ids = [
        await say(ctx, "u", "Maya adopted a dog named Pixel", entities=["Maya", "Pixel"]),
        await say(ctx, "u", "Pixel is a border collie", entities=["Pixel"]),
        await say(ctx, "u", "Pixel loves the beach", entities=["Pixel"]),
    ]
    merged = {"facts": [{"text": "Maya's border collie Pixel loves the beach", "sources": [0, 1, 2]}]}
    fake_openai.default_reply = Reply.slow(1.0, content=json.dumps(merged))  # a slow LLM: the runs overlap
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [spawn(db_url, "consolidate", str(barrier), name, fake_openai.url) for name in ("A", "B")]
    reports = [finish(p) for p in procs]
    # one process merged, the other waited for the lock and found nothing left to merge
    assert sorted(r["groups"] for r in reports) == [0, 1]
    assert sum(r["long_term_created"] for r in reports) == 1
    assert len(fake_openai.chat_requests) == 1
    srcs = ctx.store.get_memories("u", ids)
    assert {m.status for m in srcs} == {MemoryStatus.MERGED} and len({m.superseded_by for m in srcs}) == 1
    for mid in ids:
        assert [h.event for h in await ctx.history(mid, "u")].count(HistoryEvent.MERGE) == 1
    page = await ctx.list("u", tier="long_term", limit=10)
    assert [m.text for m in page.memories] == ["Maya's border collie Pixel loves the beach"]


async def test_adds_during_lifecycle_runs_in_another_process_are_never_lost(
    make_ctx: Callable[..., Any], db_url: str, tmp_path: Path
) -> None:
    ctx = await make_ctx(clock=SystemClock(), dedup_threshold=0.999)
    await say(ctx, "u", "Pixel is a border collie", entities=["Pixel"])
    stop = tmp_path / "stop"
    looper = spawn(db_url, "loop", str(stop))
    n = 20
    adder = spawn(db_url, "add", str(n))
    _, err = adder.communicate(timeout=300)
    assert adder.returncode == 0, err
    ran = tmp_path / "stop.ran"
    deadline = time.monotonic() + 120
    while not ran.exists() and looper.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    stop.touch()
    stats = finish(looper)
    assert stats["runs"] >= 1
    # one last run after both are done, then account for every fact
    await ctx.run_lifecycle("u", consolidate=True)
    turns = await ctx.turns("u", "c", limit=1000)
    assert len(turns) == n + 1
    page = await ctx.list("u", limit=1000, include_inactive=True)
    # a run that sees a fact alone in its group may promote it (same row, tier long_term): which
    # facts share a run depends on how the two processes interleave
    by_text: dict[str, Any] = {}
    for m in sorted(page.memories, key=lambda m: m.tier is not MemoryTier.SHORT_TERM):
        by_text.setdefault(m.text, m)
    for i in range(n):
        m = by_text[f"Pixel learned to {TRICKS[i]}"]  # every add left its memory
        assert m.status in (MemoryStatus.ACTIVE, MemoryStatus.MERGED)
        if m.status is MemoryStatus.MERGED:
            lt = await ctx.get(m.superseded_by, "u")
            assert lt.tier is MemoryTier.LONG_TERM and lt.status is MemoryStatus.ACTIVE and m.id in lt.consolidated_from
            assert TRICKS[i] in lt.text
            assert [h.event for h in await ctx.history(m.id, "u")].count(HistoryEvent.MERGE) == 1
    assert any(m.status is MemoryStatus.MERGED for m in by_text.values())
