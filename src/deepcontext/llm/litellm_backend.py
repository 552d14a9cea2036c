"""LiteLLM backend (optional extra: ``pip install 'deepcontext[litellm]'``).

LiteLLM speaks to a hundred providers with model names such as ``anthropic/claude-3-5-haiku-latest``,
``ollama/qwen3`` or ``openai/gpt-4o-mini``; it reads the providers' keys from their usual environment
variables unless ``api_key`` is given. litellm is imported only when this backend is built, with its
bundled model price list (``LITELLM_LOCAL_MODEL_COST_MAP``) so that importing it makes no network call.
LiteLLM's own retries are off: the :class:`~deepcontext.llm.Router` retries.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from pydantic import SecretStr

from deepcontext.errors import ConfigurationError, LLMRateLimitError
from deepcontext.llm.chat_api import completion_from, response_format, sampling_params, stream_deltas
from deepcontext.llm.client import LLM
from deepcontext.llm.errors import from_sdk_error, parse_retry_after
from deepcontext.llm.messages import ChatRequest, Completion
from deepcontext.settings import JSONMode

__all__ = ["LiteLLMBackend", "import_litellm"]

INSTALL_HINT = "pip install 'deepcontext[litellm]'  (or: pip install litellm)"


def import_litellm() -> Any:
    """Import litellm, or raise :class:`ConfigurationError` with the pip command."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        raise ConfigurationError(f"the LiteLLM backend needs the litellm package: {INSTALL_HINT}") from None
    return litellm


class LiteLLMBackend(LLM):
    """A chat model reached through ``litellm.acompletion``."""

    def __init__(
        self,
        model: str,
        *,
        name: str = "litellm",
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        timeout: float | None = 60.0,
        max_retries: int | None = None,
        json_mode: JSONMode | str = JSONMode.AUTO,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self._configure_remote(
            model=model, name=name, base_url=base_url, api_key=api_key, timeout=timeout,
            max_retries=max_retries, json_mode=json_mode,
        )  # fmt: skip
        self._litellm = import_litellm()
        self._extra = dict(extra or {})

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "num_retries": 0,
            "timeout": request.timeout or self.timeout,
        }
        if self.base_url:
            params["api_base"] = self.base_url
        if self._api_key:
            params["api_key"] = self._api_key
        params.update(sampling_params(request))
        fmt = response_format(self.json_mode, request.response_format)
        if fmt is not None:
            params["response_format"] = fmt
            params["drop_params"] = True  # providers without it get the prompt instructions only
        params.update(self._extra)
        return params

    def _error(self, exc: BaseException) -> Exception:
        err = from_sdk_error(exc, backend=self.name, secrets=[self._api_key], base_url=self.base_url)
        if isinstance(err, LLMRateLimitError) and err.retry_after is None:
            headers = getattr(exc, "litellm_response_headers", None)
            if headers is not None:
                err.retry_after = parse_retry_after(dict(headers))
        return err

    async def complete(self, request: ChatRequest) -> Completion:
        """One call through ``litellm.acompletion`` (no retries here)."""
        timeout = request.timeout or self.timeout
        try:
            async with asyncio.timeout(timeout):
                response = await self._litellm.acompletion(**self._params(request))
        except Exception as exc:  # noqa: BLE001 - translated
            raise self._error(exc) from None
        return completion_from(response, backend=self.name, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[str, None]:
        """Yield text deltas; a break after text was yielded raises :class:`LLMStreamError`."""
        timeout = request.timeout or self.timeout
        try:
            async with asyncio.timeout(timeout):
                stream = await self._litellm.acompletion(**self._params(request), stream=True)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc) from None
        async for delta in stream_deltas(stream, backend=self.name, timeout=timeout, translate=self._error):
            yield delta

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"
