"""The LLM layer: one small interface (:class:`LLM`), an OpenAI-compatible backend (official ``openai``
SDK with a base URL: OpenAI, OpenRouter, DeepSeek, Ollama, vLLM, LM Studio), an optional LiteLLM
backend, and a :class:`Router` with named backends, fallback, retries, timeouts and a concurrency limit.

Importing this package imports neither ``openai`` nor ``litellm``; they load when a backend is used.

    from deepcontext.llm import build_llm
    llm = build_llm(settings)            # None: no LLM configured, everything runs offline
    answer = await llm.chat([{"role": "user", "content": "Hello"}])
    facts = await llm.complete_json(messages, MySchema)   # validated pydantic object
    async for chunk in llm.chat_stream(messages): ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepcontext.errors import (
    LLMBackendError,
    LLMError,
    LLMRateLimitError,
    LLMResponseError,
    LLMStreamError,
    LLMTimeoutError,
    LLMValidationError,
)
from deepcontext.llm.client import LLM
from deepcontext.llm.factory import build_backend, build_llm
from deepcontext.llm.messages import ChatRequest, Completion, JSONFormat, Usage
from deepcontext.llm.openai_compat import OpenAICompatibleLLM
from deepcontext.llm.router import Router, backoff_delay

if TYPE_CHECKING:
    from deepcontext.llm.litellm_backend import LiteLLMBackend

__all__ = [
    "LLM",
    "ChatRequest",
    "Completion",
    "JSONFormat",
    "LLMBackendError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMStreamError",
    "LLMTimeoutError",
    "LLMValidationError",
    "LiteLLMBackend",
    "OpenAICompatibleLLM",
    "Router",
    "Usage",
    "backoff_delay",
    "build_backend",
    "build_llm",
]


def __getattr__(name: str) -> Any:
    if name == "LiteLLMBackend":  # its module is light, but keep litellm-related code out until asked for
        from deepcontext.llm.litellm_backend import LiteLLMBackend

        return LiteLLMBackend
    raise AttributeError(f"module 'deepcontext.llm' has no attribute {name!r}")
