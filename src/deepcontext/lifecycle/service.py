"""On-demand lifecycle runs of a user, and auto-consolidation after adds.

Auto-consolidation (``auto_consolidate``, on by default) never slows ``add``: after the add's
transaction has committed, a background task checks whether consolidation is due for that user and,
if so, flags the user (``users.consolidation_due``, durable) and consolidates unless another run of
the user holds the store lock (then that run or the next one does). One such task per user at a
time per process: adds arriving meanwhile ask it to check once more.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError
from deepcontext.services.validation import check_id, check_number

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.embed.embedder import Embedder
    from deepcontext.lifecycle.runner import LifecycleRunner
    from deepcontext.llm.client import LLM
    from deepcontext.services.background import BackgroundTasks
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store
    from deepcontext.types import AddResponse, LifecycleRun

__all__ = ["LifecycleService"]

log = logging.getLogger("deepcontext.lifecycle")


#: the longest wait for another run a caller may ask for (PostgreSQL's lock_timeout ends at 24 days)
MAX_WAIT = 7 * 86_400.0


def _check_timeout(wait: float | None) -> float | None:
    if wait is None:
        return None
    return check_number(wait, "wait", 0.0, MAX_WAIT)


class LifecycleService:
    """Decay, consolidation and cleanup of a user's memories (see :mod:`deepcontext.lifecycle`)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: DeepContextSettings,
        clock: Clock,
        llm: LLM | None,
        tasks: BackgroundTasks,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.llm = llm
        self.tasks = tasks
        #: users whose auto-consolidation task runs; True: check once more when it is done
        self._pending: dict[str, bool] = {}

    def runner(self) -> LifecycleRunner:
        from deepcontext.lifecycle.runner import LifecycleRunner

        return LifecycleRunner(self.store, self.embedder, self.settings, self.clock, self.llm)

    async def run(self, user_id: str, *, consolidate: bool | None = None, wait: float | None = None) -> LifecycleRun:
        """Run the memory lifecycle for one user: forgetting-curve decay, consolidation of short-term
        memories into long-term ones (when due; ``consolidate=True`` forces it, ``False`` skips it),
        then cleanup (faded memories soft-deleted, old deletions and expired memories purged).

        Runs of one user are serialised by a store lock, across processes; ``wait`` (default
        ``lifecycle_lock_timeout``) is how long to wait for another run, then LockTimeoutError.
        Returns the counts of :class:`~deepcontext.lifecycle.runner.LifecycleReport`."""
        user_id = check_id(user_id, "user_id")
        if consolidate is not None and not isinstance(consolidate, bool):
            raise ValidationError("consolidate must be True, False or None", field="consolidate")
        report = await self.runner().run(user_id, consolidate=consolidate, lock_timeout=_check_timeout(wait))
        return report.as_dict()

    async def consolidate(self, user_id: str, *, wait: float | None = None) -> LifecycleRun:
        """Consolidate a user's short-term memories now, whatever the threshold (no decay, no cleanup)."""
        user_id = check_id(user_id, "user_id")
        report = await self.runner().consolidate_now(user_id, lock_timeout=_check_timeout(wait))
        return report.as_dict()

    def after_add(self, user_id: str, response: AddResponse) -> None:
        """After an add's transaction: start (or re-arm) the user's auto-consolidation."""
        if not self.settings.auto_consolidate:
            return
        if not (response.semantic_facts or response.episodic_facts or response.procedural_facts):
            return  # no short-term memory can have been added
        if user_id in self._pending:
            self._pending[user_id] = True
            return
        self._pending[user_id] = False
        self.tasks.spawn(self._auto(user_id))

    async def _auto(self, user_id: str) -> None:
        try:
            while True:
                try:
                    report = await self.runner().auto(user_id)
                    if report is not None:
                        log.info("auto-consolidation of %r: %s", user_id, report.as_dict())
                except Exception:  # a background task: log, never take the caller down
                    log.exception("auto-consolidation of %r failed", user_id)
                if not self._pending.get(user_id):
                    return
                self._pending[user_id] = False
        finally:
            self._pending.pop(user_id, None)
