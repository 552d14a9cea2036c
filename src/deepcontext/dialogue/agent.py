"""What the dialogue needs of a model: an object with an async ``fetch`` like the seed's LLMFetcher.

``fetch(msg, system_prompt, temperature, max_tokens[, prev_messages])`` may return a string, an
OpenAI-style completion (``choices[0].message.content``) or anything with a ``text`` attribute
(a deepcontext ``Completion``). A deepcontext :class:`~deepcontext.llm.LLM` (``chat``) works too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from deepcontext.errors import ConfigurationError

__all__ = ["Agent", "ask", "response_text"]


@runtime_checkable
class Agent(Protocol):
    async def fetch(
        self,
        msg: str,
        system_prompt: str | None = None,
        temperature: float = 0.4,
        max_tokens: int = 4096,
    ) -> Any:
        """One chat call: ``msg`` as the user message after ``system_prompt``."""
        ...


def response_text(response: Any) -> str:
    """The text of a model answer in any of the shapes ``fetch`` may return."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    text = getattr(response, "text", None)
    if isinstance(text, str):
        return text
    choices = response.get("choices") if isinstance(response, Mapping) else getattr(response, "choices", None)
    if choices:
        first = choices[0]
        msg = first.get("message") if isinstance(first, Mapping) else getattr(first, "message", None)
        if msg is not None:
            content = msg.get("content") if isinstance(msg, Mapping) else getattr(msg, "content", None)
            return content or ""
    return str(response)


async def ask(
    agent: Any,
    msg: str,
    *,
    system_prompt: str | None = None,
    temperature: float = 0.4,
    max_tokens: int = 1024,
    prev_messages: Sequence[Mapping[str, str]] | None = None,
) -> str:
    """Send one message to ``agent`` and return the answer's text."""
    fetch = getattr(agent, "fetch", None)
    if fetch is not None:
        kwargs: dict[str, Any] = {
            "msg": msg,
            "system_prompt": system_prompt,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if prev_messages is not None:
            kwargs["prev_messages"] = [dict(m) for m in prev_messages]
        return response_text(await fetch(**kwargs))
    chat = getattr(agent, "chat", None)
    if chat is not None:
        messages: list[dict[str, str]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages += [dict(m) for m in prev_messages or ()]
        messages.append({"role": "user", "content": msg})
        return response_text(await chat(messages, temperature=temperature, max_tokens=max_tokens))
    raise ConfigurationError(f"{type(agent).__name__} has neither an async fetch() nor a chat() method")
