"""``modules.context_graph``: the conversation DAG."""

from deepcontext.dialogue import CyclicGraphError, LLMContextGraph, LLMContextGraphNode, LLMContextPair

__all__ = ["CyclicGraphError", "LLMContextGraph", "LLMContextGraphNode", "LLMContextPair"]
