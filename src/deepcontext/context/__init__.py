"""Budgeted context for the next prompt, and the deepcq tiers of each user in the database.

``await ctx.context(query, user_id, conversation_id=None, budget_tokens=2000)`` assembles pinned
memories, memories retrieved for the query (with their dates), the tier sections the query's
intent selects and the conversation's active path, within the budget; the :class:`ContextResult`
says what was included and why and what was left out. ``await ctx.tiers(user_id, schema)`` is a
:class:`~deepcontext.query.DeepCQ` whose tiers persist per user (:class:`StoreTierBackend`).
:class:`DeepContextMemory` is a LangChain-style chat memory over a DeepContext.

Modules: ``assembly`` (the service), ``build`` (assembly and rendering), ``gather`` (candidates),
``packing`` (the budget), ``tokens``, ``tierstore``, ``results``. Names are imported lazily.
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
    "DEFAULT_BUDGET_TOKENS": "results",
    "ContextItem": "results",
    "ContextPart": "results",
    "ContextResult": "results",
    "ContextShares": "results",
    "LeftOutItem": "results",
    "ContextService": "assembly",
    "DeepContextMemory": "langchain",
    "StoreTierBackend": "tierstore",
    "TIER_PREFIX": "tierstore",
    "TokenCounter": "tokens",
}

if TYPE_CHECKING:
    from deepcontext.context.assembly import ContextService
    from deepcontext.context.langchain import DeepContextMemory
    from deepcontext.context.results import (
        DEFAULT_BUDGET_TOKENS,
        ContextItem,
        ContextPart,
        ContextResult,
        ContextShares,
        LeftOutItem,
    )
    from deepcontext.context.tierstore import TIER_PREFIX, StoreTierBackend
    from deepcontext.context.tokens import TokenCounter


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.context' has no attribute {name!r}")
    value = getattr(import_module(f"deepcontext.context.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
