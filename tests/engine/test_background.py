"""Background work belongs to one task group: ``close`` while tasks run finishes them, leaves no
pending task and nothing to warn about."""

from __future__ import annotations

import asyncio
import gc
import warnings
from pathlib import Path

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.services.background import BackgroundTasks


def _others() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_close_while_a_task_runs_finishes_it_and_leaves_nothing_pending(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bg.db"
    clock = ManualClock()
    ctx = DeepContext(database_url=url, embedder=HashEmbedder(64), clock=clock)
    await ctx.init()
    await ctx.add([{"role": "user", "content": "I live in Lisbon and I work as a nurse."}], user_id="ana")
    started, release, done = asyncio.Event(), asyncio.Event(), []

    async def slow() -> None:
        started.set()
        await release.wait()
        done.append(True)

    ctx.background.spawn(slow())
    found = await ctx.search("where does ana live", user_id="ana")  # counts accesses in the background
    assert found.results
    await started.wait()
    assert ctx.background.pending >= 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        closing = asyncio.create_task(ctx.close())
        await asyncio.sleep(0.01)
        assert not closing.done()  # close waits for the running task
        release.set()
        await closing
        gc.collect()
    assert done == [True]
    assert ctx.background.pending == 0
    assert _others() == set()
    assert [str(w.message) for w in caught] == []

    async with DeepContext(database_url=url, embedder=HashEmbedder(64), clock=clock) as again:
        memory = await again.get(found.results[0].memory_id, "ana")
        assert memory.access_count == 1  # the background write finished before close returned


async def test_a_cancelled_close_cancels_the_tasks_it_waited_for() -> None:
    tasks = BackgroundTasks()
    forever = asyncio.Event()
    task = tasks.spawn(forever.wait())
    closing = asyncio.create_task(tasks.aclose())
    await asyncio.sleep(0.01)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert task.cancelled()
    assert tasks.pending == 0


async def test_a_failing_task_is_logged_and_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks()

    async def broken() -> None:
        raise RuntimeError("disk full")

    tasks.spawn(broken())
    tasks.spawn(broken())
    await tasks.drain()
    warned = [r for r in caplog.records if "disk full" in r.getMessage() and r.levelname == "WARNING"]
    assert len(warned) == 1  # the same kind of failure warns once
    assert tasks.pending == 0
