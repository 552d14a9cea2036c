"""OpenAI-compatible chat backend through the official ``openai`` SDK (``AsyncOpenAI`` with a base URL).

Covers OpenAI, OpenRouter, DeepSeek, Ollama (``http://localhost:11434/v1``), vLLM, LM Studio and any
server speaking ``/v1/chat/completions``. The SDK's own retries are off: a :class:`~deepcontext.llm.Router`
retries, with backoff, and falls back to other backends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping
from functools import partial
from typing import Any

from pydantic import SecretStr

from deepcontext.errors import ConfigurationError, LLMBackendError
from deepcontext.llm.chat_api import completion_from, response_format, sampling_params, stream_deltas
from deepcontext.llm.client import LLM
from deepcontext.llm.errors import from_sdk_error
from deepcontext.llm.messages import ChatRequest, Completion
from deepcontext.settings import JSONMode

__all__ = ["OPENROUTER_BASE_URL", "OpenAICompatibleLLM"]

logger = logging.getLogger("deepcontext.llm")

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

#: JSON modes tried in order by ``auto`` when a backend rejects the previous one
_DOWNGRADE = {JSONMode.JSON_SCHEMA: JSONMode.JSON_OBJECT, JSONMode.JSON_OBJECT: JSONMode.PROMPT}


class OpenAICompatibleLLM(LLM):
    """A chat model behind an OpenAI-compatible HTTP API.

    ``api_key`` may be omitted for local servers (Ollama, vLLM); a placeholder is sent then, never the
    ``OPENAI_API_KEY`` of the environment. ``json_mode`` (see :class:`~deepcontext.settings.JSONMode`)
    decides how JSON answers are requested; ``auto`` steps down from a JSON-schema response_format to
    a JSON-object one to prompt-only instructions when the server rejects one (HTTP 400/422), and
    remembers it.
    """

    def __init__(
        self,
        model: str,
        *,
        name: str = "openai",
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        timeout: float | None = 60.0,
        max_retries: int | None = None,
        json_mode: JSONMode | str = JSONMode.AUTO,
        default_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        mode = self._configure_remote(
            model=model, name=name, base_url=base_url, api_key=api_key, timeout=timeout,
            max_retries=max_retries, json_mode=json_mode,
        )  # fmt: skip
        self._effective_mode: JSONMode = JSONMode.JSON_SCHEMA if mode is JSONMode.AUTO else mode
        self._headers = dict(default_headers or {})
        self._extra_body = dict(extra_body or {})
        self._client: Any = None

    # --- plumbing ------------------------------------------------------------------------------------
    @property
    def effective_json_mode(self) -> JSONMode:
        """The JSON mode in use now (``auto`` may have stepped down)."""
        return self._effective_mode

    def _secrets(self) -> list[str | None]:
        return [self._api_key]

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from openai import AsyncOpenAI
            except ImportError:
                raise ConfigurationError(
                    "the OpenAI-compatible LLM backend needs the openai package: pip install 'deepcontext[llm]'"
                ) from None
            self._client = AsyncOpenAI(
                api_key=self._api_key or "no-key",
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout,
                default_headers=self._headers or None,
            )
        return self._client

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in request.messages]}
        params.update(sampling_params(request))
        fmt = response_format(self._effective_mode, request.response_format)
        if fmt is not None:
            params["response_format"] = fmt
        if self._extra_body:
            params["extra_body"] = dict(self._extra_body)
        return params

    def _downgrade(self, err: LLMBackendError, request: ChatRequest) -> bool:
        """Step the JSON mode down after the server rejected a response_format. True if it did."""
        if (
            self.json_mode is JSONMode.AUTO
            and request.response_format is not None
            and err.status_code in (400, 422)
            and self._effective_mode in _DOWNGRADE
        ):
            previous, self._effective_mode = self._effective_mode, _DOWNGRADE[self._effective_mode]
            logger.info(
                "LLM backend %s rejected response_format %s (HTTP %s); using %s from now on",
                self.name,
                previous.value,
                err.status_code,
                self._effective_mode.value,
            )
            return True
        return False

    # --- the seam ------------------------------------------------------------------------------------
    async def complete(self, request: ChatRequest) -> Completion:
        """One chat call (no retries here; see :class:`~deepcontext.llm.Router`)."""
        client = self._get_client()
        timeout = request.timeout or self.timeout
        while True:
            try:
                async with asyncio.timeout(timeout):
                    response = await client.chat.completions.create(**self._params(request), timeout=timeout)
                break
            except Exception as exc:  # noqa: BLE001 - every SDK/transport error is translated
                err = from_sdk_error(exc, backend=self.name, secrets=self._secrets(), base_url=self.base_url)
                if isinstance(err, LLMBackendError) and self._downgrade(err, request):
                    continue
                raise err from None
        return completion_from(response, backend=self.name, model=self.model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[str, None]:
        """Yield text deltas as they arrive. ``timeout`` bounds the wait for each chunk.

        A stream that breaks, or ends without a finish reason, raises :class:`LLMStreamError` once
        text was yielded, else :class:`LLMBackendError` / :class:`LLMTimeoutError` (retryable).
        """
        client = self._get_client()
        timeout = request.timeout or self.timeout
        stream: Any = None
        while stream is None:
            try:
                async with asyncio.timeout(timeout):
                    stream = await client.chat.completions.create(**self._params(request), stream=True, timeout=timeout)
            except Exception as exc:  # noqa: BLE001
                err = from_sdk_error(exc, backend=self.name, secrets=self._secrets(), base_url=self.base_url)
                if isinstance(err, LLMBackendError) and self._downgrade(err, request):
                    continue
                raise err from None
        try:
            translate = partial(from_sdk_error, backend=self.name, secrets=self._secrets(), base_url=self.base_url)
            async for delta in stream_deltas(stream, backend=self.name, timeout=timeout, translate=translate):
                yield delta
        finally:
            try:
                await stream.close()
            except Exception:  # noqa: BLE001 - closing a broken stream may fail again; nothing to add
                pass

    async def aclose(self) -> None:
        """Close the HTTP client."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r}, "
            f"json_mode={self.json_mode.value!r})"
        )
