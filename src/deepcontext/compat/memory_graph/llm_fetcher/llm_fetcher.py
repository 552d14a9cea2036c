"""``modules.llm_fetcher.llm_fetcher``."""

from deepcontext.dialogue import LLMBackendError, LLMContext, LLMError, LLMTimeoutError
from deepcontext.dialogue.fetcher import LLMBackendConfig, LLMFetcher

__all__ = ["LLMBackendConfig", "LLMBackendError", "LLMContext", "LLMError", "LLMFetcher", "LLMTimeoutError"]
