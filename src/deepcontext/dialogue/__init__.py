"""The conversation DAG: the Memory Graph system (branches, merges, compression, key memories, planner).

>>> from deepcontext.dialogue import LLMContext, LLMContextGraph, LLMContextPair
>>> graph = LLMContextGraph()                      # in memory; ids from 0 like the seed
>>> pair = lambda u, a: LLMContextPair(LLMContext("user", u), LLMContext("assistant", a))
>>> n0 = graph.add_node(pair("hello", "hi!"))
>>> n1 = graph.add_node(pair("and then?", "more"), parent_ids={n0})
>>> n2 = graph.add_node(pair("merge", "ok"), parent_ids={n0, n1})
>>> graph.get_ancestor_chain(n2, strategy="longest")
[0, 1, 2]

Persisted per user and conversation in the deepcontext database::

    graph = LLMContextGraph(StoreDialogueBackend(store, user_id="ana", conversation_id="c1"))

Public names are re-exported here; the store-backed backend is imported on first use.
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
from deepcontext.dialogue.types import (
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
from deepcontext.errors import CyclicGraphError

if TYPE_CHECKING:
    from deepcontext.dialogue.manager import ChatReport, ContextManager
    from deepcontext.dialogue.offline_planner import OfflinePlanner
    from deepcontext.dialogue.plan import (
        ContextPlan,
        MemoryToExtract,
        PlanCandidate,
        Planner,
        PlanRequest,
    )
    from deepcontext.dialogue.sqlstore import StoreDialogueBackend

__all__ = [
    "KEY_MEMORY_STATUSES",
    "SUMMARY_LABEL",
    "Agent",
    "ChatReport",
    "ContextManager",
    "ContextPlan",
    "CyclicGraphError",
    "DialogueBackend",
    "DialogueConflictError",
    "InMemoryBackend",
    "KeyMemory",
    "KeyMemoryNotFoundError",
    "LLMContext",
    "LLMContextGraph",
    "LLMContextGraphNode",
    "LLMContextPair",
    "MemoryStore",
    "MemoryToExtract",
    "NewKeyMemory",
    "NewNode",
    "NodeNotFoundError",
    "NodesView",
    "OfflinePlanner",
    "PlanCandidate",
    "PlanRequest",
    "Planner",
    "StoreDialogueBackend",
    "Topology",
    "ask",
    "extractive_summary",
    "response_text",
]

_LAZY = {
    "StoreDialogueBackend": "deepcontext.dialogue.sqlstore",
    "ContextManager": "deepcontext.dialogue.manager",
    "ChatReport": "deepcontext.dialogue.manager",
    "OfflinePlanner": "deepcontext.dialogue.offline_planner",
    "ContextPlan": "deepcontext.dialogue.plan",
    "MemoryToExtract": "deepcontext.dialogue.plan",
    "PlanCandidate": "deepcontext.dialogue.plan",
    "PlanRequest": "deepcontext.dialogue.plan",
    "Planner": "deepcontext.dialogue.plan",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.dialogue' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
