"""``deepcq.integrations.ternary.adapters``."""

from deepcontext.compat.deepcq.integrations.ternary.prompt_library import PromptLibrary
from deepcontext.query.integrations import LangChainMemoryAdapter, ToolContextProvider

__all__ = ["LangChainMemoryAdapter", "PromptLibrary", "ToolContextProvider"]
