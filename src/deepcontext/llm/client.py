"""The LLM seam: one abstract method, :meth:`LLM.complete`. Streaming, conveniences and structured
(JSON) output live here once, for every backend and for the router."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel, SecretStr

from deepcontext.errors import ConfigurationError, LLMResponseError, LLMValidationError, ValidationError
from deepcontext.llm import prompts
from deepcontext.llm.messages import ChatRequest, Completion, JSONFormat, normalize_messages
from deepcontext.llm.structured import parse_answer, schema_for, shorten, strip_reasoning
from deepcontext.settings import JSONMode

__all__ = ["LLM"]

logger = logging.getLogger("deepcontext.llm")

T = TypeVar("T", bound=BaseModel)


class LLM(ABC):
    """A chat model. Subclasses implement :meth:`complete`; they may override :meth:`stream`.

    Instances never expose API keys: not in ``repr``, not in error messages, not in logs.
    """

    #: name of the backend, reported in completions and errors
    name: str = "llm"
    #: model name sent to the backend
    model: str = ""
    #: default seconds per call (per chunk when streaming); None: the backend's own default
    timeout: float | None = None
    #: retries a router makes on this backend; None: the router's default
    max_retries: int | None = None

    @abstractmethod
    async def complete(self, request: ChatRequest) -> Completion:
        """Run one chat call and return the whole answer.

        Raises :class:`~deepcontext.errors.LLMTimeoutError`, :class:`~deepcontext.errors.LLMBackendError`
        (or its subclasses) or :class:`~deepcontext.errors.LLMResponseError`.
        """

    def _configure_remote(
        self,
        *,
        model: str,
        name: str,
        base_url: str | None,
        api_key: str | SecretStr | None,
        timeout: float | None,
        max_retries: int | None,
        json_mode: JSONMode | str,
    ) -> JSONMode:
        """Validate and set what every HTTP backend takes (model, base_url, key, timeout, retries,
        JSON mode); raises ConfigurationError naming the backend. Returns the JSON mode."""
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"LLM backend {name!r}: a model name is required")
        if base_url is not None and (not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))):
            raise ConfigurationError(f"LLM backend {name!r}: base_url must start with http:// or https://")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise ConfigurationError(f"LLM backend {name!r}: timeout must be a positive number of seconds")
        if max_retries is not None and (isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0):
            raise ConfigurationError(f"LLM backend {name!r}: max_retries must be an int >= 0")
        try:
            mode = JSONMode(json_mode)
        except ValueError:
            raise ConfigurationError(f"LLM backend {name!r}: json_mode must be one of {[m.value for m in JSONMode]}") from None
        self.name = name
        self.model = model.strip()
        self.base_url: str | None = base_url.rstrip("/") if base_url else None
        self.timeout = timeout
        self.max_retries = max_retries
        self.json_mode = mode
        self._api_key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        return mode

    async def stream(self, request: ChatRequest) -> AsyncGenerator[str, None]:
        """Yield the answer's text as it arrives. The default yields the whole answer once.

        Backends that stream must raise :class:`~deepcontext.errors.LLMBackendError` (or
        :class:`~deepcontext.errors.LLMTimeoutError`) when the stream breaks, including when it ends
        without the backend saying it finished.
        """
        completion = await self.complete(request)
        if completion.text:
            yield completion.text

    # --- conveniences ------------------------------------------------------------------------------
    async def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> Completion:
        """``complete`` from plain messages: ``await llm.chat([{"role": "user", "content": "hi"}])``.

        ``options`` are those of :meth:`ChatRequest.create` (temperature, max_tokens, stop, timeout, backend).
        """
        return await self.complete(ChatRequest.create(messages, **options))

    def chat_stream(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> AsyncGenerator[str, None]:
        """``stream`` from plain messages. Use ``async for chunk in llm.chat_stream(messages)``."""
        return self.stream(ChatRequest.create(messages, **options))

    async def complete_json(
        self,
        messages: Sequence[Mapping[str, Any]],
        schema: type[T],
        *,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        timeout: float | None = None,
        backend: str | None = None,
        repair: bool = True,
    ) -> T:
        """Ask for a JSON answer and return it validated as ``schema``.

        The system prompt gets the JSON instructions and the schema; the backend also gets a
        ``response_format`` when its JSON mode allows. Reasoning blocks (``<think>...</think>``) and
        markdown fences are removed before parsing. If the answer does not parse or validate, the
        error is sent back once for a repair; if that fails too, :class:`LLMValidationError` (or
        :class:`LLMResponseError` when no JSON was found) is raised.
        """
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise ValidationError("schema must be a pydantic model class", field="schema")
        json_schema = schema_for(schema)
        request = ChatRequest.create(
            _with_instructions(normalize_messages(messages), prompts.json_instructions(json_schema)),
            temperature=temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            backend=backend,
            response_format=JSONFormat(name=schema.__name__, schema=json_schema),
        )
        completion = await self.complete(request)
        try:
            return parse_answer(completion.text, schema)
        except LLMResponseError as exc:
            error = _describe(exc, completion)
            if not repair:
                raise _final(exc, completion, error, repaired=False) from None
            logger.info("LLM answer from %s unusable (%s); asking once for a repair", completion.backend, error)
        previous = strip_reasoning(completion.text) or "(empty answer)"
        repair_request = replace(
            request,
            messages=(
                *request.messages,
                {"role": "assistant", "content": shorten(previous, 6000) or ""},
                {"role": "user", "content": prompts.repair_message(error)},
            ),
        )
        completion = await self.complete(repair_request)
        try:
            return parse_answer(completion.text, schema)
        except LLMResponseError as exc:
            raise _final(exc, completion, _describe(exc, completion), repaired=True) from None

    # --- lifecycle ---------------------------------------------------------------------------------
    async def aclose(self) -> None:  # noqa: B027 - optional hook, deliberately not abstract
        """Release connections. The default does nothing."""

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r})"


def _with_instructions(messages: tuple[dict[str, str], ...], instructions: str) -> tuple[dict[str, str], ...]:
    """Append ``instructions`` to the first system message, or add one in front."""
    out = [dict(m) for m in messages]
    for m in out:
        if m["role"] in ("system", "developer"):
            m["content"] = f"{m['content']}\n\n{instructions}" if m["content"] else instructions
            return tuple(out)
    return ({"role": "system", "content": instructions}, *out)


def _describe(exc: LLMResponseError, completion: Completion) -> str:
    detail = str(exc)
    if isinstance(exc, LLMValidationError) and exc.errors:
        detail = "it does not fit the schema: " + "; ".join(exc.errors[:10])
    if completion.finish_reason == "length":
        detail += " (the answer was cut off at the token limit: keep it shorter)"
    return detail


def _final(exc: LLMResponseError, completion: Completion, error: str, *, repaired: bool) -> LLMResponseError:
    suffix = " after one repair attempt" if repaired else ""
    message = f"unusable JSON answer from backend {completion.backend!r}{suffix}: {error}"
    if isinstance(exc, LLMValidationError):
        return LLMValidationError(message, backend=completion.backend, text=exc.text, errors=exc.errors)
    return LLMResponseError(message, backend=completion.backend, text=exc.text)
