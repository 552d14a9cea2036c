"""``deepcq.integrations.ternary``: framework adapters that import no framework."""

from deepcontext.compat.deepcq.integrations.ternary.adapters import LangChainMemoryAdapter, ToolContextProvider
from deepcontext.compat.deepcq.integrations.ternary.prompt_library import PromptLibrary

__all__ = ["LangChainMemoryAdapter", "PromptLibrary", "ToolContextProvider"]
