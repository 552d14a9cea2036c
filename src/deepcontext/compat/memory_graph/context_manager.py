"""``modules.context_manager``: the planner-driven chat over the DAG.

As in Memory Graph, a manager given the seed's :class:`LLMFetcher` asks that model for each round's
plan (``auto_plan=True``): deepcontext's :class:`~deepcontext.dialogue.LLMPlanner`, which validates
the answer, sends a rejected one back once, then plans the round offline. Any other agent, or
``planner=...``, keeps the planner given (offline by default, as in :mod:`deepcontext.dialogue`).
"""

from __future__ import annotations

from typing import Any

from deepcontext.dialogue.fetcher import LLMFetcher
from deepcontext.dialogue.llm_planner import LLMPlanner
from deepcontext.dialogue.manager import ContextManager as _ContextManager
from deepcontext.dialogue.plan import ContextDecision, Planner

__all__ = ["ContextDecision", "ContextManager"]


class ContextManager(_ContextManager):
    """:class:`deepcontext.dialogue.ContextManager` planning with the fetcher's model, as Memory
    Graph's did, when the fetcher is an :class:`LLMFetcher` and no planner is given."""

    def __init__(
        self,
        fetcher: Any,
        max_context_nodes: int = 6,
        pack_keep_recent: int = 1,
        *,
        planner: Planner | None = None,
        **options: Any,
    ) -> None:
        if planner is None and isinstance(fetcher, LLMFetcher):
            planner = LLMPlanner(fetcher)
        super().__init__(fetcher, max_context_nodes, pack_keep_recent, planner=planner, **options)
