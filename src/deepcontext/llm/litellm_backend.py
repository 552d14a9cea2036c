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

from deepcontext.errors import ConfigurationError, LLMBackendError, LLMRateLimitError, LLMResponseError, LLMStreamError
from deepcontext.llm.client import LLM
from deepcontext.llm.errors import from_sdk_error, parse_retry_after
from deepcontext.llm.messages import ChatRequest, Completion, JSONFormat, Usage
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
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        if request.stop:
            params["stop"] = list(request.stop)
        response_format = self._response_format(request.response_format)
        if response_format is not None:
            params["response_format"] = response_format
            params["drop_params"] = True  # providers without it get the prompt instructions only
        params.update(self._extra)
        return params

    def _response_format(self, fmt: JSONFormat | None) -> dict[str, Any] | None:
        if fmt is None or self.json_mode is JSONMode.PROMPT:
            return None
        if self.json_mode is JSONMode.JSON_OBJECT:
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": fmt.name[:64], "schema": fmt.schema, "strict": False}}

    def _error(self, exc: BaseException) -> Exception:
        err = from_sdk_error(exc, backend=self.name, secrets=[self._api_key])
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
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMResponseError(f"backend {self.name!r} returned no choices", backend=self.name)
        choice = choices[0]
        usage = getattr(response, "usage", None)
        return Completion(
            text=choice.message.content or "",
            backend=self.name,
            model=getattr(response, "model", None) or self.model,
            finish_reason=getattr(choice, "finish_reason", None),
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                total_tokens=getattr(usage, "total_tokens", 0) or 0,
            ),
        )

    async def stream(self, request: ChatRequest) -> AsyncGenerator[str, None]:
        """Yield text deltas; a break after text was yielded raises :class:`LLMStreamError`."""
        timeout = request.timeout or self.timeout
        try:
            async with asyncio.timeout(timeout):
                stream = await self._litellm.acompletion(**self._params(request), stream=True)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc) from None
        parts: list[str] = []
        finished = False
        iterator = stream.__aiter__()
        while True:
            try:
                async with asyncio.timeout(timeout):
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except Exception as exc:  # noqa: BLE001
                err = self._error(exc)
                if parts:
                    raise LLMStreamError(f"{err}", backend=self.name, partial_text="".join(parts)) from None
                raise err from None
            delta = ""
            for choice in getattr(chunk, "choices", None) or []:
                if getattr(choice, "finish_reason", None):
                    finished = True
                content = getattr(getattr(choice, "delta", None), "content", None)
                if content:
                    delta += content
            if delta:
                parts.append(delta)
                yield delta
        if not finished:
            message = f"stream from backend {self.name!r} ended before the backend finished the answer"
            if parts:
                raise LLMStreamError(message, backend=self.name, partial_text="".join(parts))
            raise LLMBackendError(message, backend=self.name, retryable=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"
