"""``modules.llm_fetcher``: the multi-backend LLM client with fallback and timeout retries."""

from deepcontext.compat.memory_graph.llm_fetcher.llm_fetcher import (
    LLMBackendConfig,
    LLMBackendError,
    LLMContext,
    LLMError,
    LLMFetcher,
    LLMTimeoutError,
)

__all__ = ["LLMBackendConfig", "LLMBackendError", "LLMContext", "LLMError", "LLMFetcher", "LLMTimeoutError"]
