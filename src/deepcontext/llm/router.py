"""A router over named backends: default, fallback order, retries with backoff, a concurrency limit.

Retries (per backend, up to ``max_retries``) happen on timeouts, HTTP 429, 5xx and refused
connections, with exponential backoff and jitter; a ``Retry-After`` from the backend is honoured up to
``max_wait``. Other failures (HTTP 400, 401, 404, an unusable answer...) are not retried on the same
backend. When a backend gives up, the next one in the fallback order is tried.

Streams hold a concurrency slot until they end. A stream is retried or moved to the next backend only
before its first chunk; once text has been yielded, a failure is raised to the caller as
:class:`~deepcontext.errors.LLMStreamError` and nothing is retried.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace

from deepcontext.errors import (
    ConfigurationError,
    LLMBackendError,
    LLMError,
    LLMRateLimitError,
    LLMStreamError,
    LLMTimeoutError,
    ValidationError,
)
from deepcontext.llm.client import LLM
from deepcontext.llm.messages import ChatRequest, Completion

__all__ = ["Router", "backoff_delay"]

logger = logging.getLogger("deepcontext.llm")


def backoff_delay(
    retry: int,
    *,
    base: float = 0.5,
    max_wait: float = 30.0,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    Exponential (``base * 2**(retry-1)``) with "equal jitter" (between half and all of it), at least
    ``retry_after`` when the backend gave one, never more than ``max_wait``.
    """
    rand: float = (rng or random).random()
    exp = base * 2.0 ** max(0, retry - 1)
    delay = exp / 2 + rand * exp / 2
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, max_wait)


def _retryable(err: LLMError) -> bool:
    if isinstance(err, LLMStreamError):
        return False
    if isinstance(err, LLMTimeoutError):
        return True
    return isinstance(err, LLMBackendError) and err.retryable


class Router(LLM):
    """An :class:`LLM` that spreads calls over named backends.

    ``backends``: a mapping of name to LLM, or a sequence of LLMs (their ``name`` is used).
    ``default``: the backend tried first (default: the first one). ``fallback``: names tried next, in
    order (default: none; pass ``fallback=[...]`` explicitly). A request may name its own first
    backend (``ChatRequest.backend``); the fallback order follows it.
    Per backend, ``backend.timeout`` and ``backend.max_retries`` override the router's ``timeout``
    and ``max_retries``.
    """

    def __init__(
        self,
        backends: Mapping[str, LLM] | Sequence[LLM],
        *,
        default: str | None = None,
        fallback: Sequence[str] = (),
        max_retries: int = 2,
        timeout: float | None = None,
        backoff_base: float = 0.5,
        max_wait: float = 30.0,
        max_concurrency: int = 8,
        name: str = "router",
        seed: int | None = None,
    ) -> None:
        named = dict(backends) if isinstance(backends, Mapping) else {b.name: b for b in backends}
        if not named:
            raise ConfigurationError("a Router needs at least one backend")
        if not isinstance(backends, Mapping) and len(named) != len(backends):
            raise ConfigurationError("Router backends must have distinct names")
        for key, backend in named.items():
            if not isinstance(backend, LLM):
                raise ConfigurationError(f"Router backend {key!r} is not an LLM")
        self._backends = named
        self.default = default or next(iter(named))
        self.fallback = list(dict.fromkeys(fallback))
        for n in [self.default, *self.fallback]:
            if n not in named:
                raise ConfigurationError(f"Router: unknown backend {n!r}; known: {sorted(named)}")
        if max_retries < 0 or max_concurrency < 1 or backoff_base < 0 or max_wait < 0:
            raise ConfigurationError("Router: max_retries, backoff_base and max_wait >= 0, max_concurrency >= 1")
        self.name = name
        self.model = named[self.default].model
        self.max_retries = max_retries
        self._retries = max_retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.max_wait = max_wait
        self.max_concurrency = max_concurrency
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._rng = random.Random(seed)

    # --- introspection -------------------------------------------------------------------------------
    @property
    def backends(self) -> dict[str, LLM]:
        """The backends by name (a copy)."""
        return dict(self._backends)

    def order(self, preferred: str | None = None, fallback: Sequence[str] | None = None) -> list[str]:
        """Backend names in the order a call tries them: ``preferred`` (default: the router's default),
        then ``fallback`` (default: the router's fallback order)."""
        names = [preferred or self.default, *(self.fallback if fallback is None else fallback)]
        for name in names:
            if name not in self._backends:
                raise ValidationError(f"unknown LLM backend {name!r}; known: {sorted(self._backends)}", field="backend")
        return list(dict.fromkeys(names))

    def _limits(self, backend: LLM, request: ChatRequest) -> tuple[int, ChatRequest]:
        retries = backend.max_retries if backend.max_retries is not None else self._retries
        timeout = request.timeout or backend.timeout or self.timeout
        return retries, replace(request, timeout=timeout, backend=None, fallback=None)

    async def _wait(self, name: str, retry: int, err: LLMError) -> None:
        retry_after = err.retry_after if isinstance(err, LLMRateLimitError) else None
        delay = backoff_delay(retry, base=self.backoff_base, max_wait=self.max_wait, retry_after=retry_after, rng=self._rng)
        logger.warning("LLM backend %s failed (%s); retry %d in %.2fs", name, err, retry, delay)
        await asyncio.sleep(delay)

    # --- the seam ------------------------------------------------------------------------------------
    async def _tries(
        self, request: ChatRequest, failures: list[tuple[str, LLMError]], what: str
    ) -> AsyncGenerator[tuple[str, LLM, ChatRequest], None]:
        """(backend name, backend, request) of each try in order, waiting before each retry. The caller
        appends every failure to ``failures`` and stops at the first success."""
        for name in self.order(request.backend, request.fallback):
            backend = self._backends[name]
            retries, call = self._limits(backend, request)
            for attempt in range(retries + 1):
                if attempt:
                    await self._wait(name, attempt, failures[-1][1])
                yield name, backend, call
                if not _retryable(failures[-1][1]):
                    break
            logger.warning("LLM backend %s gave up%s: %s", name, what, failures[-1][1])

    async def complete(self, request: ChatRequest) -> Completion:
        """Run the call on the first backend that answers, retrying and falling back as configured."""
        failures: list[tuple[str, LLMError]] = []
        attempts = 0
        async with aclosing(self._tries(request, failures, "")) as tries:
            async for name, backend, call in tries:
                attempts += 1
                try:
                    async with self._semaphore:
                        completion = await backend.complete(call)
                except LLMError as err:
                    failures.append((name, err))
                    continue
                if failures:
                    logger.info("LLM call answered by %s after %d failed attempt(s)", name, len(failures))
                return replace(completion, attempts=attempts)
        raise _exhausted(failures, attempts)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[str, None]:
        """Stream from the first backend that starts answering; never retried once text was yielded."""
        failures: list[tuple[str, LLMError]] = []
        attempts = 0
        async with aclosing(self._tries(request, failures, " streaming")) as tries:
            async for name, backend, call in tries:
                attempts += 1
                parts: list[str] = []
                try:
                    async with self._semaphore, aclosing(backend.stream(call)) as chunks:
                        async for chunk in chunks:
                            parts.append(chunk)
                            yield chunk
                    return
                except LLMError as err:
                    if parts:
                        if isinstance(err, LLMStreamError):
                            raise
                        raise LLMStreamError(
                            f"{err} (after {sum(map(len, parts))} characters were streamed)",
                            backend=name,
                            partial_text="".join(parts),
                        ) from None
                    failures.append((name, err))
        raise _exhausted(failures, attempts)

    async def aclose(self) -> None:
        """Close every backend."""
        for backend in self._backends.values():
            await backend.aclose()

    def __repr__(self) -> str:
        inner = ", ".join(repr(b) for b in self._backends.values())
        return (
            f"Router(default={self.default!r}, fallback={self.fallback!r}, max_retries={self.max_retries}, "
            f"max_concurrency={self.max_concurrency}, backends=[{inner}])"
        )


def _exhausted(failures: list[tuple[str, LLMError]], attempts: int) -> LLMError:
    """The error raised when every backend gave up: the last one's kind, with every failure listed."""
    name, last = failures[-1]
    summary = "; ".join(f"{n}: {e}" for n, e in failures[-6:])
    if len(failures) > 6:
        summary = f"... {len(failures) - 6} earlier; " + summary
    message = f"LLM call failed after {attempts} attempt(s): {summary}"
    err: LLMError
    if isinstance(last, LLMTimeoutError):
        err = LLMTimeoutError(message, backend=name, attempts=attempts)
    elif isinstance(last, LLMRateLimitError):
        err = LLMRateLimitError(message, backend=name, retry_after=last.retry_after, attempts=attempts)
    elif isinstance(last, LLMBackendError):
        err = LLMBackendError(message, backend=name, status_code=last.status_code, retryable=last.retryable, attempts=attempts)
    else:
        return last
    err.failures = [e for _, e in failures]
    return err
