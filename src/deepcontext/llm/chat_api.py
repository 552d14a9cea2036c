"""What the backends speaking OpenAI's chat-completions shape share: request parameters, the
answer read from a response, and the stream of text deltas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from deepcontext.errors import LLMBackendError, LLMResponseError, LLMStreamError
from deepcontext.llm.messages import ChatRequest, Completion, JSONFormat, Usage
from deepcontext.settings import JSONMode

__all__ = ["broken_stream", "completion_from", "response_format", "sampling_params", "stream_deltas"]


def sampling_params(request: ChatRequest) -> dict[str, Any]:
    """``temperature``, ``max_tokens`` and ``stop`` of a request, where it sets them."""
    params: dict[str, Any] = {}
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.max_tokens is not None:
        params["max_tokens"] = request.max_tokens
    if request.stop:
        params["stop"] = list(request.stop)
    return params


def response_format(mode: JSONMode, fmt: JSONFormat | None) -> dict[str, Any] | None:
    """The ``response_format`` asking for ``fmt`` in JSON mode ``mode`` (None: instructions only)."""
    if fmt is None or mode is JSONMode.PROMPT:
        return None
    if mode is JSONMode.JSON_OBJECT:
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": _schema_name(fmt.name), "schema": fmt.schema, "strict": False}}


def completion_from(response: Any, *, backend: str, model: str) -> Completion:
    """The :class:`Completion` of a chat-completions response (its first choice)."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise LLMResponseError(f"backend {backend!r} returned no choices", backend=backend)
    choice = choices[0]
    message = choice.message
    text = message.content or ""
    if not text and getattr(message, "refusal", None):
        raise LLMResponseError(f"backend {backend!r} refused: {message.refusal}", backend=backend)
    usage = getattr(response, "usage", None)
    return Completion(
        text=text,
        backend=backend,
        model=getattr(response, "model", None) or model,
        finish_reason=getattr(choice, "finish_reason", None),
        usage=Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            total_tokens=getattr(usage, "total_tokens", 0) or 0,
        ),
    )


async def stream_deltas(
    stream: Any, *, backend: str, timeout: float | None, translate: Callable[[BaseException], Exception]
) -> AsyncGenerator[str, None]:
    """The text deltas of a chat-completions stream; ``timeout`` bounds the wait for each chunk.

    A stream that breaks (``translate`` turns the exception into deepcontext's), or ends without a
    finish reason, raises :class:`LLMStreamError` once text was yielded, else the retryable error."""
    parts: list[str] = []
    finished = False
    iterator = stream.__aiter__()
    while True:
        try:
            async with asyncio.timeout(timeout):
                chunk = await iterator.__anext__()
        except StopAsyncIteration:
            break
        except Exception as exc:  # noqa: BLE001 - translated
            raise broken_stream(translate(exc), parts) from None
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
        message = f"stream from backend {backend!r} ended before the backend finished the answer"
        raise broken_stream(LLMBackendError(message, backend=backend, retryable=True), parts)


def broken_stream(err: Exception, parts: list[str]) -> Exception:
    """After text was yielded, any failure becomes a non-retryable :class:`LLMStreamError`."""
    if not parts:
        return err
    return LLMStreamError(
        f"{err} (after {sum(map(len, parts))} characters were streamed)",
        backend=getattr(err, "backend", None),
        partial_text="".join(parts),
    )


def _schema_name(name: str) -> str:
    # providers accept [A-Za-z0-9_-]{1,64} only
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return cleaned or "answer"
