"""Budgeted context for the next prompt, and the deepcq tiers of each user in the database.

``await ctx.context(query, user_id, conversation_id=None, budget_tokens=2000)`` assembles, within a
token budget, what the next LLM call needs: pinned memories, memories retrieved for the query (with
the dates they were said and are about), the sections of the user's deepcq tiers selected by the
query's intent, and the conversation's active path. It returns a :class:`ContextResult`: the text,
and a breakdown of what was included and why, tokens per part, and what was left out and why.

``await ctx.tiers(user_id, schema)`` is a :class:`~deepcontext.query.DeepCQ` whose five tiers are
stored per user in the database (:class:`StoreTierBackend`), where the context builder reads them.

:class:`DeepContextMemory` is a LangChain-style chat memory over a DeepContext (no LangChain import).

Modules: :mod:`~deepcontext.context.assembly` (the service), :mod:`~deepcontext.context.build`
(assembly and rendering), :mod:`~deepcontext.context.gather` (candidates of each part),
:mod:`~deepcontext.context.packing` (the budget), :mod:`~deepcontext.context.tokens` (counting),
:mod:`~deepcontext.context.tierstore` (tier persistence), :mod:`~deepcontext.context.types`.
Names are imported lazily.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "TIER_PREFIX",
    "ContextService",
    "ContextItem",
    "ContextPart",
    "ContextResult",
    "ContextShares",
    "DeepContextMemory",
    "LeftOutItem",
    "StoreTierBackend",
    "TokenCounter",
]

_EXPORTS: dict[str, str] = {
    "DEFAULT_BUDGET_TOKENS": "types",
    "ContextItem": "types",
    "ContextPart": "types",
    "ContextResult": "types",
    "ContextShares": "types",
    "LeftOutItem": "types",
    "ContextService": "assembly",
    "DeepContextMemory": "langchain",
    "StoreTierBackend": "tierstore",
    "TIER_PREFIX": "tierstore",
    "TokenCounter": "tokens",
}

if TYPE_CHECKING:
    from deepcontext.context.assembly import ContextService
    from deepcontext.context.langchain import DeepContextMemory
    from deepcontext.context.tierstore import TIER_PREFIX, StoreTierBackend
    from deepcontext.context.tokens import TokenCounter
    from deepcontext.context.types import (
        DEFAULT_BUDGET_TOKENS,
        ContextItem,
        ContextPart,
        ContextResult,
        ContextShares,
        LeftOutItem,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.context' has no attribute {name!r}")
    value = getattr(import_module(f"deepcontext.context.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
