"""The data that crosses the LLM seam: chat messages, a request, a completion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcontext.errors import ValidationError

__all__ = ["ROLES", "ChatRequest", "Completion", "JSONFormat", "Usage", "normalize_messages"]

#: roles accepted in chat messages (OpenAI's names)
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], ...]:
    """Validate chat messages and return them as plain ``{"role", "content"[, "name"]}`` dicts.

    Accepts mappings, or objects with ``role`` and ``content`` attributes (``deepcontext.types.Message``).
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of {role, content} mappings", field="messages")
    if not messages:
        raise ValidationError("messages is empty", field="messages")
    out: list[dict[str, str]] = []
    for i, m in enumerate(messages):
        if isinstance(m, Mapping):
            role, content, name = m.get("role"), m.get("content"), m.get("name")
        else:
            role, content, name = getattr(m, "role", None), getattr(m, "content", None), getattr(m, "name", None)
        if role not in ROLES:
            raise ValidationError(f"messages[{i}].role must be one of {sorted(ROLES)}", field=f"messages[{i}].role")
        if not isinstance(content, str):
            raise ValidationError(f"messages[{i}].content must be a string", field=f"messages[{i}].content")
        item = {"role": str(role), "content": content}
        if name:
            item["name"] = str(name)
        out.append(item)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class JSONFormat:
    """Ask for a JSON answer fitting ``schema`` (a JSON Schema, usually a pydantic model's)."""

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat call. Build it with :meth:`ChatRequest.create`, which validates the messages."""

    messages: tuple[dict[str, str], ...]
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    response_format: JSONFormat | None = None
    #: seconds; overrides the backend's own timeout for this call (per chunk when streaming)
    timeout: float | None = None
    #: preferred backend name (routers only; single backends ignore it)
    backend: str | None = None
    #: backends to try after it, replacing the router's fallback order for this call (routers only)
    fallback: tuple[str, ...] | None = None

    @classmethod
    def create(
        cls,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        response_format: JSONFormat | None = None,
        timeout: float | None = None,
        backend: str | None = None,
        fallback: Sequence[str] | None = None,
    ) -> ChatRequest:
        """Validate the arguments and build a request."""
        if temperature is not None and not 0.0 <= temperature <= 2.0:
            raise ValidationError("temperature must be within 0..2", field="temperature")
        if max_tokens is not None and max_tokens < 1:
            raise ValidationError("max_tokens must be at least 1", field="max_tokens")
        if timeout is not None and timeout <= 0:
            raise ValidationError("timeout must be positive", field="timeout")
        return cls(
            messages=normalize_messages(messages),
            temperature=temperature,
            max_tokens=max_tokens,
            stop=tuple(stop) if stop else None,
            response_format=response_format,
            timeout=timeout,
            backend=backend,
            fallback=tuple(fallback) if fallback is not None else None,
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the backend reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completion:
    """A finished chat call."""

    text: str
    backend: str
    model: str
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    #: calls made to get it (1 without retries; counted across fallbacks by a router)
    attempts: int = 1
