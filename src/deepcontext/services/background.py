"""The background work of one DeepContext (access counts, auto-consolidation, conversation
summaries): started after a call has returned, awaited by ``flush`` and ``close``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["BackgroundTasks"]

log = logging.getLogger("deepcontext")


class BackgroundTasks:
    """The tasks a DeepContext started and still owns. A failure is logged, never raised: one
    warning the first time a kind of task fails with a kind of error, then at debug level (a broken
    database would otherwise log it on every request)."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._failed_kinds: set[tuple[str, str]] = set()
        #: tasks that ended with an exception, since this group was made
        self.failures = 0

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` on the running loop, owned by this group."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(self._report)
        return task

    @property
    def pending(self) -> int:
        """Tasks started and not finished."""
        return len(self._tasks)

    async def drain(self) -> None:
        """Wait until every task has finished, including tasks started meanwhile."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Finish the running tasks; if the wait itself is cancelled, cancel them and wait for that."""
        try:
            await self.drain()
        except asyncio.CancelledError:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            raise

    def _report(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        self.failures += 1
        coro = task.get_coro()
        kind = (getattr(coro, "__qualname__", "task"), type(exc).__name__)
        level = logging.DEBUG if kind in self._failed_kinds else logging.WARNING
        self._failed_kinds.add(kind)
        log.log(level, "background %s failed: %s: %s", kind[0], kind[1], exc)
