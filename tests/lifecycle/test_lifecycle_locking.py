"""The per-user lifecycle lock: a second run waits, then times out; a cancelled run never leaves the
lock behind (neither while it works nor while it is still waiting for the lock)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from deepcontext import LockTimeoutError, ManualClock, ValidationError
from deepcontext.store.locks import user_lock
from tests.lifecycle.helpers import say
from tests.lifecycle.test_lifecycle_consolidation import _llm_waiting, llm_settings, pixel_story
from tests.support.fake_openai import FakeOpenAI, Reply


async def test_a_second_run_waits_then_times_out(make_ctx: Callable[..., Any]) -> None:
    holder, ctx = await make_ctx(), await make_ctx(lifecycle_lock_timeout=0.3)
    await say(ctx, "u", "Maya speaks Portuguese")
    lock = user_lock(holder.store, "u", "lifecycle", timeout=5)  # type: ignore[arg-type]
    await asyncio.to_thread(lock.__enter__)
    try:
        with pytest.raises(LockTimeoutError):
            await ctx.run_lifecycle("u")  # the setting: 0.3 s
        with pytest.raises(LockTimeoutError):
            await ctx.consolidate("u", wait=0)
        assert (await ctx.run_lifecycle("other-user", wait=0))["user_id"] == "other-user"  # per user
    finally:
        await asyncio.to_thread(lock.__exit__, None, None, None)
    assert (await ctx.run_lifecycle("u", wait=0))["consolidation_ran"] is False
    with pytest.raises(ValidationError):
        await ctx.run_lifecycle("u", wait=-1)
    with pytest.raises(ValidationError):
        await ctx.run_lifecycle("u", consolidate="yes")  # type: ignore[arg-type]


async def test_cancelled_runs_release_the_lock(make_ctx: Callable[..., Any], clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    writer = await make_ctx()
    await pixel_story(writer, clock)
    ctx = await make_ctx(**llm_settings(fake_openai, llm_timeout=30))
    reply = {"facts": [{"text": "Pixel is Maya's border collie", "sources": [0, 1, 2]}]}
    fake_openai.script(Reply.slow(2.0, content=json.dumps(reply)))
    # cancelled while it holds the lock (waiting for the LLM)
    run = asyncio.create_task(ctx.run_lifecycle("u", consolidate=True))
    await _llm_waiting(fake_openai)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    # released by the cancelled run's thread (far sooner than the lease would expire); nothing was merged
    r = await writer.run_lifecycle("u", wait=5)
    assert r["groups"] == 0 or r["consolidation_ran"] is False
    # cancelled while it still waits for the lock: the lock is released once its thread gets it
    lock = user_lock(writer.store, "u", "lifecycle", timeout=5)  # type: ignore[arg-type]
    await asyncio.to_thread(lock.__enter__)
    waiting = asyncio.create_task(writer.run_lifecycle("u", wait=3))
    await asyncio.sleep(0.3)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.to_thread(lock.__exit__, None, None, None)
    assert (await writer.run_lifecycle("u", wait=10))["user_id"] == "u"
    assert (await writer.run_lifecycle("u", wait=0))["user_id"] == "u"
