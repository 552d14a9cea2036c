"""The methods of :class:`~deepcontext.core.DeepContext` over the memory lifecycle, the conversation
graphs and the activity log. Each one hands its call to the service that holds it; they make up a
mixin of their own so ``core.py`` holds the engine's construction, its wiring and the calls with
logic of their own (add, search, summary, context).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from deepcontext.types import ActivityCall, ActivityPage

if TYPE_CHECKING:
    from deepcontext.core import _Services
    from deepcontext.dialogue.context import ConversationPath
    from deepcontext.dialogue.conversations import DialogueService
    from deepcontext.dialogue.plan import Planner
    from deepcontext.dialogue.session import DialogueSession
    from deepcontext.lifecycle.service import LifecycleService
    from deepcontext.types import LifecycleRun

__all__ = ["FeatureMethods"]


class FeatureMethods:
    """DeepContext's calls of :class:`~deepcontext.lifecycle.service.LifecycleService`,
    :class:`~deepcontext.dialogue.conversations.DialogueService` and the activity log."""

    if TYPE_CHECKING:

        @property
        def lifecycle(self) -> LifecycleService: ...

        @property
        def conversations(self) -> DialogueService: ...

        def _wired(self) -> _Services: ...

    # --- the memory lifecycle (LifecycleService) ----------------------------------------------------
    async def run_lifecycle(self, user_id: str, *, consolidate: bool | None = None, wait: float | None = None) -> LifecycleRun:
        """Decay, consolidation (when due) and cleanup for one user: see :meth:`LifecycleService.run`."""
        return await self.lifecycle.run(user_id, consolidate=consolidate, wait=wait)

    async def consolidate(self, user_id: str, *, wait: float | None = None) -> LifecycleRun:
        """Consolidate a user's short-term memories now, whatever the threshold (no decay, no cleanup)."""
        return await self.lifecycle.consolidate(user_id, wait=wait)

    # --- conversation graphs (DialogueService) ------------------------------------------------------
    async def dialogue(
        self, user_id: str, conversation_id: str = "default", *, fetcher: Any = None,
        planner: Planner | str | None = None, max_context_nodes: int = 6, pack_keep_recent: int = 1,
        system_prompt: str | None = None, extract: bool = True,
    ) -> DialogueSession:  # fmt: skip
        """A :class:`DialogueSession` over the conversation's turns: see :meth:`DialogueService.session`."""
        return await self.conversations.session(
            user_id, conversation_id, fetcher=fetcher, planner=planner, max_context_nodes=max_context_nodes,
            pack_keep_recent=pack_keep_recent, system_prompt=system_prompt, extract=extract,
        )  # fmt: skip

    async def conversation_path(
        self, user_id: str, conversation_id: str = "default", *, node_id: int | None = None,
        max_nodes: int | None = 8, strategy: str = "longest",
    ) -> ConversationPath:  # fmt: skip
        """The conversation's active chain ending at ``node_id`` or the tip (its last ``max_nodes``)."""
        return await self.conversations.path(user_id, conversation_id, node_id=node_id, max_nodes=max_nodes, strategy=strategy)

    async def export_conversation(self, user_id: str, conversation_id: str = "default", format: str = "json") -> str:
        """The conversation graph as ``json``, Graphviz ``dot`` or ``mermaid`` text."""
        return await self.conversations.export(user_id, conversation_id, format)

    async def compress_conversation(
        self, user_id: str, conversation_id: str = "default", *, node_id: int | None = None, keep_recent: int = 2,
        max_nodes: int | None = 20,
    ) -> int | None:  # fmt: skip
        """Compress the older part of the chain into a summary node; returns its id or None."""
        return await self.conversations.compress(
            user_id, conversation_id, node_id=node_id, keep_recent=keep_recent, max_nodes=max_nodes
        )

    # --- the activity log (ActivityLog) ------------------------------------------------------------
    async def activity(
        self, user_id: str, *, kind: str | None = None, via: str | None = None, agent_id: str | None = None,
        run_id: str | None = None, conversation_id: str | None = None, after: datetime | str | None = None,
        before: datetime | str | None = None, limit: int = 50, cursor: str | None = None,
    ) -> ActivityPage:  # fmt: skip
        """The user's recorded ``search`` and ``context`` calls, newest first (see the
        ``activity_log`` setting): ``kind`` "search" or "context", ``via`` "python", "rest", "mcp"
        or "cli", the call's agent, run or conversation, a time range; pass ``next_cursor`` back as
        ``cursor`` for the next page."""
        return await self._wired().activity.page(
            user_id, kind=kind, via=via, agent_id=agent_id, run_id=run_id, conversation_id=conversation_id,
            after=after, before=before, limit=limit, cursor=cursor,
        )  # fmt: skip

    async def activity_call(self, user_id: str, call_id: int) -> ActivityCall:
        """One recorded call of the user with everything it returned (NotFoundError if gone)."""
        return await self._wired().activity.call(user_id, call_id)
