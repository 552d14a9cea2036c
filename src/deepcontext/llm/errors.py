"""Translating SDK and HTTP errors into deepcontext's LLM errors (defined in :mod:`deepcontext.errors`).

Error messages never carry an API key: :func:`scrub` masks the keys a backend holds.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from deepcontext.errors import LLMBackendError, LLMError, LLMRateLimitError, LLMTimeoutError
from deepcontext.llm.structured import shorten

__all__ = ["describe", "from_sdk_error", "parse_retry_after", "scrub"]


#: things shaped like API keys or bearer tokens, masked in every error message whoever they belong to
_KEY_LIKE = re.compile(r"\b(?:sk|rk|pk|ak|key)-[A-Za-z0-9_\-]{8,}|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every given secret (4 characters or more) and anything shaped like an API key
    (``sk-...``, ``Bearer ...``) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_LIKE.sub("***", text)


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if given."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_message(body: Any, fallback: str) -> str:
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return fallback


def describe(backend: str, base_url: str | None = None) -> str:
    """How messages name a backend: with its URL when it has one, since a backend named after its
    provider ('openai') may be a local server (Ollama, vLLM) the user knows by its address."""
    return f"backend {backend!r} at {base_url}" if base_url else f"backend {backend!r}"


def from_sdk_error(
    exc: BaseException, *, backend: str, secrets: Iterable[str | None] = (), base_url: str | None = None
) -> LLMError:
    """Translate an exception of the openai SDK (LiteLLM's derive from it), of httpx or of asyncio into
    an :class:`LLMError` subclass. Keys are masked; the original is never chained into the message.
    ``base_url``: the backend's URL, named in the message."""
    keys = list(secrets)
    who = describe(backend, base_url)
    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, TimeoutError):
        return LLMTimeoutError(f"{who} did not answer in time", backend=backend)
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is installed with the llm extra
        openai = None  # type: ignore[assignment]
    if openai is not None:
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(f"{who} did not answer in time", backend=backend)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = scrub(shorten(_status_message(exc.body, str(exc)), 300) or "", keys)
            if status == 429:
                headers = getattr(exc.response, "headers", None)
                return LLMRateLimitError(
                    f"{who} is rate limiting (HTTP 429): {detail}",
                    backend=backend,
                    retry_after=parse_retry_after(headers),
                )
            retryable = status >= 500 or status in (408, 409)
            return LLMBackendError(
                f"{who} returned HTTP {status}: {detail}",
                backend=backend,
                status_code=status,
                retryable=retryable,
            )
        if isinstance(exc, openai.APIConnectionError):
            return LLMBackendError(f"{who} could not be reached: {scrub(str(exc), keys)}", backend=backend, retryable=True)
        if isinstance(exc, openai.APIError):
            return LLMBackendError(
                f"{who} failed: {scrub(shorten(str(exc), 300) or '', keys)}",
                backend=backend,
                retryable=True,
            )
    kind = type(exc)
    module = kind.__module__ or ""
    if module.startswith(("httpx", "httpcore", "h11", "aiohttp")) or isinstance(exc, (ConnectionError, OSError)):
        if "Timeout" in kind.__name__:
            return LLMTimeoutError(f"{who} did not answer in time", backend=backend)
        return LLMBackendError(
            f"{who} connection failed ({kind.__name__}): {scrub(shorten(str(exc), 200) or '', keys)}",
            backend=backend,
            retryable=True,
        )
    return LLMBackendError(
        f"{who} failed ({kind.__name__}): {scrub(shorten(str(exc), 200) or '', keys)}",
        backend=backend,
        retryable=False,
    )
