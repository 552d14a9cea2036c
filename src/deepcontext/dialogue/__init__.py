"""The conversation DAG: the Memory Graph system (branches, merges, compression, key memories, planner).

>>> from deepcontext.dialogue import LLMContext, LLMContextGraph, LLMContextPair
>>> graph = LLMContextGraph()                      # in memory; ids from 0 like the seed
>>> pair = lambda u, a: LLMContextPair(LLMContext("user", u), LLMContext("assistant", a))
>>> n0 = graph.add_node(pair("hello", "hi!"))
>>> n1 = graph.add_node(pair("and then?", "more"), parent_ids={n0})
>>> graph.get_ancestor_chain(graph.add_node(pair("merge", "ok"), parent_ids={n0, n1}), strategy="longest")
[0, 1, 2]

Persisted with :class:`StoreDialogueBackend`; bound to a DeepContext (rounds feed memory extraction)
by ``await ctx.dialogue(user_id, conversation_id)``. The heavier names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepcontext.dialogue.agent import Agent, ask, response_text
from deepcontext.dialogue.backend import DialogueBackend, NewKeyMemory, NewNode
from deepcontext.dialogue.graph import LLMContextGraph, NodesView
from deepcontext.dialogue.memory_backend import InMemoryBackend
from deepcontext.dialogue.memory_store import MemoryStore
from deepcontext.dialogue.summarize import extractive_summary
from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.vocabulary import (
    KEY_MEMORY_STATUSES,
    SUMMARY_LABEL,
    DialogueConflictError,
    KeyMemory,
    KeyMemoryNotFoundError,
    LLMContext,
    LLMContextGraphNode,
    LLMContextPair,
    NodeNotFoundError,
)
from deepcontext.errors import (
    CyclicGraphError,
    LLMBackendError,
    LLMError,
    LLMTimeoutError,
)

if TYPE_CHECKING:
    from deepcontext.dialogue.context import (
        ConversationPath,
        PathNode,
        conversation_path,
    )
    from deepcontext.dialogue.export import (
        export_graph,
        graph_to_dot,
        graph_to_json,
        graph_to_mermaid,
    )
    from deepcontext.dialogue.fetcher import FetchResponse, LLMBackendConfig, LLMFetcher
    from deepcontext.dialogue.llm_planner import LLMPlanner, PlanOutcome
    from deepcontext.dialogue.manager import ChatReport, ContextManager
    from deepcontext.dialogue.offline_planner import OfflinePlanner
    from deepcontext.dialogue.plan import (
        ContextDecision,
        ContextPlan,
        MemoryToExtract,
        PlanCandidate,
        Planner,
        PlanRequest,
    )
    from deepcontext.dialogue.session import DialogueSession
    from deepcontext.dialogue.sqlstore import StoreDialogueBackend

__all__ = [
    "KEY_MEMORY_STATUSES",
    "SUMMARY_LABEL",
    "Agent",
    "ChatReport",
    "ContextDecision",
    "ContextManager",
    "ContextPlan",
    "ConversationPath",
    "CyclicGraphError",
    "DialogueBackend",
    "DialogueConflictError",
    "DialogueSession",
    "FetchResponse",
    "InMemoryBackend",
    "KeyMemory",
    "KeyMemoryNotFoundError",
    "LLMBackendConfig",
    "LLMBackendError",
    "LLMContext",
    "LLMContextGraph",
    "LLMContextGraphNode",
    "LLMContextPair",
    "LLMError",
    "LLMFetcher",
    "LLMPlanner",
    "LLMTimeoutError",
    "MemoryStore",
    "MemoryToExtract",
    "NewKeyMemory",
    "NewNode",
    "NodeNotFoundError",
    "NodesView",
    "OfflinePlanner",
    "PathNode",
    "PlanCandidate",
    "PlanOutcome",
    "PlanRequest",
    "Planner",
    "StoreDialogueBackend",
    "Topology",
    "ask",
    "conversation_path",
    "export_graph",
    "extractive_summary",
    "graph_to_dot",
    "graph_to_json",
    "graph_to_mermaid",
    "response_text",
]

_LAZY = {
    "StoreDialogueBackend": "deepcontext.dialogue.sqlstore",
    "ContextManager": "deepcontext.dialogue.manager",
    "ChatReport": "deepcontext.dialogue.manager",
    "OfflinePlanner": "deepcontext.dialogue.offline_planner",
    "ContextPlan": "deepcontext.dialogue.plan",
    "ContextDecision": "deepcontext.dialogue.plan",
    "MemoryToExtract": "deepcontext.dialogue.plan",
    "PlanCandidate": "deepcontext.dialogue.plan",
    "PlanRequest": "deepcontext.dialogue.plan",
    "Planner": "deepcontext.dialogue.plan",
    "LLMFetcher": "deepcontext.dialogue.fetcher",
    "LLMBackendConfig": "deepcontext.dialogue.fetcher",
    "FetchResponse": "deepcontext.dialogue.fetcher",
    "LLMPlanner": "deepcontext.dialogue.llm_planner",
    "PlanOutcome": "deepcontext.dialogue.llm_planner",
    "ConversationPath": "deepcontext.dialogue.context",
    "PathNode": "deepcontext.dialogue.context",
    "conversation_path": "deepcontext.dialogue.context",
    "DialogueSession": "deepcontext.dialogue.session",
    "export_graph": "deepcontext.dialogue.export",
    "graph_to_dot": "deepcontext.dialogue.export",
    "graph_to_json": "deepcontext.dialogue.export",
    "graph_to_mermaid": "deepcontext.dialogue.export",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.dialogue' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
