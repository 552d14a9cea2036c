"""``DeepContext``'s context methods, as a mixin (:class:`ContextAPI` is one of its bases).

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
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from deepcontext.context.types import (
    DEFAULT_BUDGET_TOKENS,
    MAX_BUDGET_TOKENS,
    ContextShares,
)
from deepcontext.errors import ValidationError
from deepcontext.services.validation import check_id, check_limit, check_text, parse_filters

if TYPE_CHECKING:
    from deepcontext.context.types import ContextResult
    from deepcontext.query.core import DeepCQ
    from deepcontext.query.schema import MemorySchema

__all__ = ["ContextAPI"]

#: defaults of :meth:`ContextAPI.context`
DEFAULT_MEMORY_LIMIT = 20
DEFAULT_MIN_SIMILARITY = 0.3
DEFAULT_CONVERSATION_NODES = 12


def _check_int(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValidationError(f"{field} must be an integer between {lo} and {hi}, got {value!r}", field=field)
    return value


def _check_fraction(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{field} must be a number between 0 and 1, got {value!r}", field=field)
    return float(value)


class ContextAPI:
    """The user's deepcq tiers in the database, and the budgeted context for the next prompt."""

    async def tiers(
        self,
        user_id: str,
        schema: MemorySchema,
        *,
        cache_size: int = 30,
        history_turns: int = 6,
    ) -> DeepCQ:
        """A :class:`~deepcontext.query.DeepCQ` whose five tiers (state, cache, history, notes,
        reference) persist in the database, for ``user_id`` only.

        Each change (``cq.state.set``, ``cq.cache.put``, ``cq.history.add``, ``cq.notes.append``,
        ``cq.reference.set``...) is written at once, one transaction per write. The DeepCQ reads the
        tiers when it is built: build one per request when several processes share the database.
        Its methods are deepcq's, synchronous: in async code, call writes with ``asyncio.to_thread``
        if a few milliseconds of blocking matter. ``delete_user`` removes the tiers.
        ``DeepCQ(schema)`` alone stays in memory.
        """
        from deepcontext.context.tierstore import TIER_PREFIX, StoreTierBackend
        from deepcontext.query.core import DeepCQ
        from deepcontext.query.schema import MemorySchema

        ctx: Any = self
        ctx._check()
        user_id = check_id(user_id, "user_id")
        if not isinstance(schema, MemorySchema):
            raise ValidationError("schema must be a MemorySchema", field="schema")
        backend = StoreTierBackend(ctx.store, user_id, clock=ctx.clock)
        return await asyncio.to_thread(
            DeepCQ,
            schema,
            backend=backend,
            namespace_prefix=TIER_PREFIX,
            cache_size=cache_size,
            history_turns=history_turns,
            clock=ctx.clock,
        )

    async def context(
        self,
        query: str,
        user_id: str,
        conversation_id: str | None = None,
        *,
        budget_tokens: int = DEFAULT_BUDGET_TOKENS,
        shares: ContextShares | Mapping[str, float] | None = None,
        schema: MemorySchema | None = None,
        min_intent: float | None = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        max_conversation_nodes: int = DEFAULT_CONVERSATION_NODES,
        track_access: bool | None = None,
        agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
    ) -> ContextResult:
        """What the next prompt needs about ``query``, within ``budget_tokens``.

        Four parts, in this order in the text: pinned memories; memories retrieved by hybrid search
        (relevant ones only) with the dates they were said and are about; the sections of the
        user's deepcq tiers that the query's intent selects; the conversation's active path when
        ``conversation_id`` is given (summaries, then the latest rounds, oldest first).

        ``shares`` (a :class:`ContextShares` or ``{part: share}``; defaults pinned 0.15, memories
        0.35, tiers 0.20, conversation 0.30) split the budget; what a part leaves unused goes to the
        others. Relevance uses the query package's intent score (the share of the query's terms a
        text contains): ``schema`` gives its settings (section keywords, vocabulary, thresholds,
        semantic blending) and ``min_intent`` the score memories and tier sections need (default
        the schema's ``confidence_threshold``, 0.3; ``free_text_threshold`` for cache and history
        entries). A memory below it is still relevant when its cosine with the query reaches
        ``min_similarity``. ``memory_limit``: search results considered (1-100);
        ``max_conversation_nodes``: newest path nodes considered. ``agent_id`` / ``run_id`` limit
        the pinned and retrieved memories to those scopes.

        Tokens are counted with the embedder's tokenizer, or estimated (see
        :mod:`deepcontext.context.tokens`). Returns a :class:`ContextResult`: ``text``, the parts
        with their items (why each is there, its score and tokens), what was left out and why
        (``budget``, ``relevance``, ``duplicate``). Included memories count as accessed (unless
        ``track_access`` is False; None: the setting), which slows their forgetting.
        """
        from deepcontext.context.build import build_context

        ctx: Any = self
        ctx._check()
        started = time.perf_counter()
        user_id = check_id(user_id, "user_id")
        query = check_text(query, "query", ctx.settings.max_query_chars)
        if conversation_id is not None:
            conversation_id = check_id(conversation_id, "conversation_id")
        budget = _check_int(budget_tokens, "budget_tokens", 1, MAX_BUDGET_TOKENS)
        chosen_shares = ContextShares.coerce(shares)
        if schema is not None:
            from deepcontext.query.schema import MemorySchema

            if not isinstance(schema, MemorySchema):
                raise ValidationError("schema must be a MemorySchema", field="schema")
        intent_bar = None if min_intent is None else _check_fraction(min_intent, "min_intent")
        limit = check_limit(memory_limit, "memory_limit")
        min_sim = _check_fraction(min_similarity, "min_similarity")
        nodes = _check_int(max_conversation_nodes, "max_conversation_nodes", 1, 1000)
        filters = parse_filters(agent_id=agent_id, run_id=run_id)
        result = await build_context(
            ctx,
            query,
            user_id,
            conversation_id,
            budget=budget,
            shares=chosen_shares,
            schema=schema,
            min_intent=intent_bar,
            memory_limit=limit,
            min_similarity=min_sim,
            max_nodes=nodes,
            track_access=ctx.settings.track_access if track_access is None else bool(track_access),
            filters=filters,
        )
        result.took_ms = round((time.perf_counter() - started) * 1000, 3)
        return result
