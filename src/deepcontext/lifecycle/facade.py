"""``DeepContext``'s lifecycle methods, as a mixin (:class:`LifecycleAPI` is one of its bases).

Auto-consolidation (``auto_consolidate``, on by default) never slows ``add``: after an add's
transaction has committed and ``add`` has returned, a background task (``DeepContext._spawn``;
``close()`` waits for it) checks whether consolidation is due for that user and, if so, flags the
user (``users.consolidation_due``, durable) and consolidates right away unless another lifecycle
run of the user holds the store lock; then the flag stays and that run or the next one consolidates.
One such task per user at a time per process: adds arriving meanwhile ask it to check once more.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from deepcontext.errors import ValidationError
from deepcontext.services.validation import check_id

if TYPE_CHECKING:
    from deepcontext.lifecycle.runner import LifecycleRunner
    from deepcontext.types import AddResponse

__all__ = ["LifecycleAPI"]

log = logging.getLogger("deepcontext.lifecycle")


def _check_timeout(wait: float | None) -> float | None:
    if wait is None:
        return None
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise ValidationError("wait must be a number of seconds >= 0", field="wait")
    return float(wait)


class LifecycleAPI:
    """Decay, consolidation and cleanup of a user's memories (see :mod:`deepcontext.lifecycle`)."""

    def _lifecycle_runner(self) -> LifecycleRunner:
        from deepcontext.lifecycle.runner import LifecycleRunner

        ctx: Any = self
        ctx._check()
        return LifecycleRunner(ctx.store, ctx.embedder, ctx.settings, ctx.clock, getattr(ctx, "_llm", None))

    async def run_lifecycle(
        self, user_id: str, *, consolidate: bool | None = None, wait: float | None = None
    ) -> dict[str, Any]:
        """Run the memory lifecycle for one user: forgetting-curve decay, consolidation of short-term
        memories into long-term ones (when due; ``consolidate=True`` forces it, ``False`` skips it),
        then cleanup (faded memories soft-deleted, old deletions and expired memories purged).

        Safe to call at any time from any number of processes: runs of one user are serialised by a
        store lock; ``wait`` (default ``lifecycle_lock_timeout``) is how long to wait for another
        run, then LockTimeoutError. Returns the seed's counts (``memories_decayed``,
        ``memories_consolidated``, ``memories_cleaned``) and more (see :class:`LifecycleReport`).
        """
        user_id = check_id(user_id, "user_id")
        if consolidate is not None and not isinstance(consolidate, bool):
            raise ValidationError("consolidate must be True, False or None", field="consolidate")
        report = await self._lifecycle_runner().run(user_id, consolidate=consolidate, lock_timeout=_check_timeout(wait))
        return report.as_dict()

    async def consolidate(self, user_id: str, *, wait: float | None = None) -> dict[str, Any]:
        """Consolidate a user's short-term memories now, whatever the threshold (no decay, no cleanup)."""
        user_id = check_id(user_id, "user_id")
        report = await self._lifecycle_runner().consolidate_now(user_id, lock_timeout=_check_timeout(wait))
        return report.as_dict()

    # --- auto-consolidation ------------------------------------------------------------------------
    def _lifecycle_after_add(self, user_id: str, response: AddResponse) -> None:
        """Called by ``add`` after its transaction: start (or re-arm) the user's auto-consolidation."""
        ctx: Any = self
        if not ctx.settings.auto_consolidate:
            return
        if not (response.semantic_facts or response.episodic_facts or response.procedural_facts):
            return  # no short-term memory can have been added
        pending: dict[str, bool] = ctx.__dict__.setdefault("_lifecycle_pending", {})
        if user_id in pending:
            pending[user_id] = True  # the running task checks once more when it is done
            return
        pending[user_id] = False
        ctx._spawn(self._lifecycle_auto(user_id))

    async def _lifecycle_auto(self, user_id: str) -> None:
        pending: dict[str, bool] = self.__dict__["_lifecycle_pending"]
        try:
            while True:
                try:
                    report = await self._lifecycle_runner().auto(user_id)
                    if report is not None:
                        log.info("auto-consolidation of %r: %s", user_id, report.as_dict())
                except Exception:  # a background task: log, never take the caller down
                    log.exception("auto-consolidation of %r failed", user_id)
                if not pending.get(user_id):
                    return
                pending[user_id] = False
        finally:
            pending.pop(user_id, None)
