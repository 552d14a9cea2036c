"""The user's deepcq tiers in the database and the budgeted context for the next prompt: what
``DeepContext.tiers`` and ``DeepContext.context`` delegate to.

    async with DeepContext() as ctx:
        cq = await ctx.tiers("ana", MemorySchema(sections=["status", "errors"]))  # a DeepCQ in the database
        cq.state.set("errors", "[errors]\\n- OOM at 02:15\\n")
        res = await ctx.context("why did the job fail?", "ana", "ops", budget_tokens=1500)
        prompt = res.text                    # pinned, memories (with dates), tier sections, conversation
        res.part("memories").tokens          # the breakdown: items and why, tokens, what was left out

See :mod:`deepcontext.context` for the parts, :mod:`deepcontext.context.packing` for the budget.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError
from deepcontext.services.validation import check_id

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.context.results import ContextResult
    from deepcontext.dialogue.conversations import DialogueService
    from deepcontext.embed.embedder import Embedder
    from deepcontext.query.core import DeepCQ
    from deepcontext.query.schema import MemorySchema
    from deepcontext.services.background import BackgroundTasks
    from deepcontext.services.requests import ContextRequest
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store

__all__ = ["ContextService"]


class ContextService:
    """The user's deepcq tiers in the database, and the budgeted context for the next prompt."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: DeepContextSettings,
        clock: Clock,
        *,
        dialogue: DialogueService,
        tasks: BackgroundTasks,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.dialogue = dialogue
        self.tasks = tasks

    async def tiers(self, user_id: str, schema: MemorySchema, *, cache_size: int = 30, history_turns: int = 6) -> DeepCQ:
        """A :class:`~deepcontext.query.DeepCQ` whose five tiers (state, cache, history, notes,
        reference) persist in the database, for ``user_id`` only: each change is written at once, one
        transaction per write. It reads the tiers when built: build one per request when several
        processes share the database. Its methods are synchronous. ``delete_user`` removes the tiers."""
        from deepcontext.context.tierstore import TIER_PREFIX, StoreTierBackend
        from deepcontext.query.core import DeepCQ
        from deepcontext.query.schema import MemorySchema

        user_id = check_id(user_id, "user_id")
        if not isinstance(schema, MemorySchema):
            raise ValidationError("schema must be a MemorySchema", field="schema")
        for value, field in ((cache_size, "cache_size"), (history_turns, "history_turns")):  # named as the caller knows them
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"{field} must be a positive integer, got {value!r}", field=field)
        backend = StoreTierBackend(self.store, user_id, clock=self.clock)
        return await asyncio.to_thread(
            DeepCQ,
            schema,
            backend=backend,
            namespace_prefix=TIER_PREFIX,
            cache_size=cache_size,
            history_turns=history_turns,
            clock=self.clock,
        )

    async def context(self, req: ContextRequest) -> ContextResult:
        """What the next prompt needs about ``query``, within ``budget_tokens``.

        Four parts, in this order: pinned memories; memories retrieved by hybrid search (relevant
        ones only, with their dates); the sections of the user's deepcq tiers the query's intent
        selects; the conversation's active path when ``conversation_id`` is given. ``shares`` split
        the budget (unused budget goes to the other parts); ``schema`` and ``min_intent`` set the
        intent score a memory or section needs, ``min_similarity`` the cosine that also makes a
        memory relevant; ``memory_limit`` the search results considered (1-100; default one per
        ``TOKENS_PER_RESULT`` (40) tokens of budget, at least 20). Returns a
        :class:`ContextResult`: the text, each part's items (why, score, tokens) and what was left
        out and why. Included memories count as accessed (unless ``track_access`` is False; None:
        the setting)."""
        from deepcontext.context.build import build_context

        started = time.perf_counter()
        result = await build_context(
            self,
            req.query,
            req.user_id,
            req.conversation_id,
            budget=req.budget_tokens,
            shares=req.context_shares,
            schema=req.schema_,
            min_intent=req.min_intent,
            memory_limit=req.search_limit,
            min_similarity=req.min_similarity,
            max_nodes=req.max_conversation_nodes,
            track_access=self.settings.track_access if req.track_access is None else req.track_access,
            filters=req.filters,
        )
        result.took_ms = round((time.perf_counter() - started) * 1000, 3)
        return result
