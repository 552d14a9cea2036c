"""Memory Graph's ``modules`` package over :mod:`deepcontext.dialogue`: code written for Memory
Graph runs with ``modules`` replaced by ``deepcontext.compat.memory_graph`` in its imports
(``from deepcontext.compat.memory_graph import LLMFetcher, ContextManager``,
``from deepcontext.compat.memory_graph.context_graph import LLMContextGraph``). The submodules keep
the seed's names: ``context_graph``, ``memory_store``, ``context_manager``, ``llm_fetcher`` (and
``llm_fetcher.llm_fetcher``). Every name is deepcontext's own implementation.
"""

from __future__ import annotations

from deepcontext.compat.memory_graph.context_graph import (
    CyclicGraphError,
    LLMContextGraph,
    LLMContextGraphNode,
    LLMContextPair,
)
from deepcontext.compat.memory_graph.context_manager import ContextDecision, ContextManager
from deepcontext.compat.memory_graph.llm_fetcher import (
    LLMBackendConfig,
    LLMBackendError,
    LLMContext,
    LLMError,
    LLMFetcher,
    LLMTimeoutError,
)
from deepcontext.compat.memory_graph.memory_store import KeyMemory, MemoryStore

__all__ = [
    "ContextDecision",
    "ContextManager",
    "CyclicGraphError",
    "KeyMemory",
    "LLMBackendConfig",
    "LLMBackendError",
    "LLMContext",
    "LLMContextGraph",
    "LLMContextGraphNode",
    "LLMContextPair",
    "LLMError",
    "LLMFetcher",
    "LLMTimeoutError",
    "MemoryStore",
]
