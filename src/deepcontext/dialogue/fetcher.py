"""LLMFetcher: the Memory Graph seed's model client (same calls), on deepcontext's LLM layer::

    fetcher = LLMFetcher("https://api.deepseek.com", "sk-...", "deepseek-chat")      # one backend
    answer = await fetcher.fetch("Hello", system_prompt="Be brief", prev_messages=[...])
    print(answer.choices[0].message.content)          # the seed's shape; also answer.text

Underneath: one :class:`~deepcontext.llm.Router` over OpenAI-compatible or LiteLLM backends (one
async HTTP stack; streams never block the loop). A call goes to ``default_backend``, then
``fallback_order``, then the others; each is retried on timeouts, 429, 5xx and refused connections.
A stream moves on only before its first chunk, then raises :class:`~deepcontext.errors.LLMStreamError`.
Every failure is an :class:`~deepcontext.errors.LLMError`; ``tools`` raise ``ConfigurationError``.
``LLMFetcher.from_llm(llm)`` wraps an existing LLM without owning it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from deepcontext.dialogue.vocabulary import LLMContext
from deepcontext.errors import (
    ConfigurationError,
    LLMBackendError,
    LLMError,
    LLMStreamError,
    LLMTimeoutError,
    ValidationError,
)

if TYPE_CHECKING:
    from deepcontext.llm.client import LLM
    from deepcontext.llm.messages import Usage

__all__ = [
    "FetchResponse",
    "LLMBackendConfig",
    "LLMBackendError",
    "LLMError",
    "LLMFetcher",
    "LLMStreamError",
    "LLMTimeoutError",
    "Limiter",
]

PROVIDERS = ("openai", "litellm")


@dataclass
class LLMBackendConfig:
    """One routable backend (the seed's fields). ``api_url`` is the OpenAI-compatible base URL
    (None: OpenAI's); ``extra`` is sent in the request body (``extra_body``; LiteLLM: as keyword
    arguments). ``api_key`` may be empty for local servers that need none."""

    name: str
    provider: str
    model: str
    api_key: str | None = None
    api_url: str | None = None
    timeout: float = 60.0
    max_retries: int = 0
    extra: dict[str, object] = field(default_factory=dict)


@runtime_checkable
class Limiter(Protocol):
    """The seed's rate limiter: acquired before each call (held for a whole stream), released after."""

    async def acquire_llm(self) -> None: ...

    def release_llm(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Message:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class _Choice:
    index: int
    message: _Message
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """A finished ``fetch``: ``text`` (also as ``choices[0].message.content``, the shape the seed's
    callers read), the backend that answered, the model, the finish reason, token usage and the
    number of calls it took."""

    text: str
    backend: str
    model: str
    finish_reason: str | None = None
    usage: Usage | None = None
    attempts: int = 1

    @property
    def choices(self) -> list[_Choice]:
        return [_Choice(0, _Message("assistant", self.text), self.finish_reason)]

    def __str__(self) -> str:
        return self.text


#: a message of ``prev_messages``: an :class:`~deepcontext.dialogue.LLMContext` (what the seed passes,
#: e.g. ``graph.build_linear_context(...)``) or a ``{"role", "content"}`` mapping
PrevMessage = LLMContext | Mapping[str, str]


def _as_message(m: Any) -> dict[str, str]:
    if isinstance(m, Mapping):
        role, content = m.get("role"), m.get("content")
    else:
        role, content = getattr(m, "role", None), getattr(m, "content", None)
    if not isinstance(role, str) or not role or not isinstance(content, str):
        raise ValidationError(
            "each of prev_messages must be an LLMContext or a {'role', 'content'} mapping of strings", field="prev_messages"
        )
    return {"role": role, "content": content}


def _backend_from_config(cfg: LLMBackendConfig) -> LLM:
    if not isinstance(cfg, LLMBackendConfig):
        raise ValidationError("backends must be LLMBackendConfig objects or deepcontext LLMs", field="backends")
    if cfg.provider not in PROVIDERS:
        raise ValidationError(f"unsupported provider {cfg.provider!r}; use one of {PROVIDERS}", field="provider")
    if isinstance(cfg.max_retries, bool) or not isinstance(cfg.max_retries, int) or cfg.max_retries < 0:
        raise ValidationError("max_retries must be a non-negative integer", field="max_retries")
    timeout = float(cfg.timeout)
    if timeout <= 0:
        raise ValidationError("timeout must be positive", field="timeout")
    retries = max(1, cfg.max_retries)  # the seed retried timeouts at least once
    if cfg.provider == "litellm":
        from deepcontext.llm.litellm_backend import LiteLLMBackend

        return LiteLLMBackend(
            cfg.model,
            name=cfg.name,
            base_url=cfg.api_url,
            api_key=cfg.api_key or None,
            timeout=timeout,
            max_retries=retries,
            extra=dict(cfg.extra),
        )
    from deepcontext.llm.openai_compat import OpenAICompatibleLLM

    if not cfg.api_key and not cfg.api_url:
        raise ValidationError(f"backend {cfg.name!r}: an api_key is required (or an api_url for a local server)", field="api_key")
    return OpenAICompatibleLLM(
        cfg.model,
        name=cfg.name,
        base_url=cfg.api_url,
        api_key=cfg.api_key or None,
        timeout=timeout,
        max_retries=retries,
        extra_body=dict(cfg.extra),
    )


class LLMFetcher:
    """Route chat calls over named backends with fallback, retries and streaming (see the module
    docstring). Use ``async with`` or call :meth:`aclose` to release the HTTP clients."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        *,
        provider: str = "openai",
        timeout: float = 60.0,
        backends: Sequence[LLMBackendConfig | LLM] | Mapping[str, LLM] | None = None,
        default_backend: str | None = None,
        limiter: Limiter | None = None,
        backoff_base: float = 0.5,
        max_concurrency: int = 8,
    ) -> None:
        from deepcontext.llm.client import LLM

        named: dict[str, LLM] = {}
        if backends:
            items = list(backends.values()) if isinstance(backends, Mapping) else list(backends)
            keys = list(backends.keys()) if isinstance(backends, Mapping) else None
            for i, b in enumerate(items):
                llm = b if isinstance(b, LLM) else _backend_from_config(b)
                name = keys[i] if keys is not None else llm.name
                if name in named:
                    raise ValidationError(f"duplicate backend name {name!r}", field="backends")
                named[name] = llm
        elif model and (api_key or api_url):
            named["default"] = _backend_from_config(
                LLMBackendConfig(
                    name="default",
                    provider=provider,
                    model=model,
                    api_key=api_key,
                    api_url=api_url,
                    timeout=float(timeout) if timeout is not None else 60.0,
                )
            )
        else:
            raise ValidationError("pass backends=[...], or api_url / api_key and model", field="backends")
        if default_backend is not None and default_backend not in named:
            raise ValidationError(f"unknown default backend {default_backend!r}; known: {list(named)}", field="default_backend")
        if limiter is not None and not isinstance(limiter, Limiter):
            raise ValidationError("limiter needs async acquire_llm() and release_llm()", field="limiter")
        from deepcontext.llm.router import Router

        self.backend_order: list[str] = list(named)
        self.default_backend: str = default_backend or self.backend_order[0]
        self.limiter = limiter
        self._router: LLM = Router(
            named,
            default=self.default_backend,
            backoff_base=backoff_base,
            max_concurrency=max_concurrency,
            name="fetcher",
        )
        self._owns = True

    @classmethod
    def from_llm(cls, llm: LLM, *, limiter: Limiter | None = None) -> LLMFetcher:
        """A fetcher over an existing deepcontext LLM (a backend or a router); :meth:`aclose` leaves
        it open. A router keeps its own default and fallback order."""
        from deepcontext.llm.client import LLM

        if not isinstance(llm, LLM):
            raise ConfigurationError(f"from_llm needs a deepcontext.llm.LLM, got {type(llm).__name__}")
        self = cls.__new__(cls)
        from deepcontext.llm.router import Router

        if isinstance(llm, Router):
            self.backend_order = list(llm.backends)
            self.default_backend = llm.default
        else:
            self.backend_order = [llm.name]
            self.default_backend = llm.name
        self.limiter = limiter
        self._router = llm
        self._owns = False
        return self

    # ------------------------------------------------------------------------------------------------
    @property
    def llm(self) -> LLM:
        """The deepcontext LLM underneath (a :class:`~deepcontext.llm.Router`), e.g. for an
        :class:`~deepcontext.dialogue.llm_planner.LLMPlanner`."""
        return self._router

    @property
    def backends(self) -> dict[str, LLM]:
        """The backends by name, in registration order."""
        from deepcontext.llm.router import Router

        if isinstance(self._router, Router):
            return self._router.backends
        return {self._router.name: self._router}

    def _route(self, backend_name: str | None, fallback_order: Sequence[str] | None) -> tuple[str | None, tuple[str, ...] | None]:
        """(preferred backend, fallback names) of one call, with the seed's rules."""
        from deepcontext.llm.router import Router

        if not isinstance(self._router, Router):
            if backend_name not in (None, self._router.name):
                raise ValidationError(f"unknown backend {backend_name!r}; known: {self.backend_order}", field="backend_name")
            return None, None
        known = self.backend_order
        for n in [backend_name, *(fallback_order or ())]:
            if n is not None and n not in known:
                raise ValidationError(f"unknown backend {n!r}; known: {known}", field="backend_name")
        if backend_name:
            return backend_name, ()
        if not self._owns:  # a router of the settings: its own default and fallback order
            return None, tuple(fallback_order) if fallback_order is not None else None
        names = [self.default_backend, *(fallback_order or ())]
        names += [n for n in known if n not in names]
        rest = tuple(dict.fromkeys(n for n in names[1:] if n != self.default_backend))
        return self.default_backend, rest

    @staticmethod
    def _messages(msg: str, prev_messages: Sequence[PrevMessage] | None, system_prompt: str | None) -> list[dict[str, str]]:
        if not isinstance(msg, str):
            raise ValidationError("msg must be a string", field="msg")
        out: list[dict[str, str]] = []
        if system_prompt:
            out.append({"role": "system", "content": system_prompt})
        out += [_as_message(m) for m in prev_messages or ()]
        out.append({"role": "user", "content": msg})
        return out

    def _request(
        self,
        msg: str,
        system_prompt: str | None,
        temperature: float,
        max_tokens: int,
        prev_messages: Sequence[PrevMessage] | None,
        backend_name: str | None,
        fallback_order: Sequence[str] | None,
        tools: Any,
    ) -> Any:
        from deepcontext.llm.messages import ChatRequest

        if tools:
            raise ConfigurationError("LLMFetcher does not support tools (function calling)")
        preferred, fallback = self._route(backend_name, fallback_order)
        return ChatRequest.create(
            self._messages(msg, prev_messages, system_prompt),
            temperature=temperature,
            max_tokens=max_tokens,
            backend=preferred,
            fallback=fallback,
        )

    # ------------------------------------------------------------------------------------------------
    async def fetch(
        self,
        msg: str,
        system_prompt: str | None = None,
        temperature: float = 0.4,
        max_tokens: int = 4096,
        prev_messages: Sequence[PrevMessage] | None = None,
        backend_name: str | None = None,
        fallback_order: Sequence[str] | None = None,
        tools: Any = None,
    ) -> FetchResponse:
        """One chat call: ``system_prompt``, then ``prev_messages``, then ``msg`` as the user message.

        Raises :class:`LLMTimeoutError` / :class:`LLMBackendError` (both :class:`LLMError`) when
        every backend tried failed.
        """
        request = self._request(msg, system_prompt, temperature, max_tokens, prev_messages, backend_name, fallback_order, tools)
        if self.limiter is not None:
            await self.limiter.acquire_llm()
        try:
            c = await self._router.complete(request)
        finally:
            if self.limiter is not None:
                self.limiter.release_llm()
        return FetchResponse(
            text=c.text, backend=c.backend, model=c.model, finish_reason=c.finish_reason, usage=c.usage, attempts=c.attempts
        )

    async def fetch_stream(
        self,
        msg: str,
        prev_messages: Sequence[PrevMessage] | None = None,
        system_prompt: str | None = None,
        temperature: float = 0.4,
        max_tokens: int = 4096,
        output_reasoning: bool = False,
        backend_name: str | None = None,
        fallback_order: Sequence[str] | None = None,
        tools: Any = None,
    ) -> AsyncGenerator[str, None]:
        """Yield the answer's text chunks as they arrive (note the seed's argument order:
        ``prev_messages`` second). ``output_reasoning`` is accepted for compatibility; reasoning
        deltas are not streamed. Raises :class:`LLMStreamError` if the stream breaks after text was
        yielded (never retried then), else like :meth:`fetch`."""
        request = self._request(msg, system_prompt, temperature, max_tokens, prev_messages, backend_name, fallback_order, tools)
        if self.limiter is not None:
            await self.limiter.acquire_llm()
        try:
            async with aclosing(self._router.stream(request)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            if self.limiter is not None:
                self.limiter.release_llm()

    # ------------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the HTTP clients (not those of an LLM given to :meth:`from_llm`)."""
        if self._owns:
            await self._router.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"LLMFetcher(default_backend={self.default_backend!r}, backends={self.backend_order!r})"
