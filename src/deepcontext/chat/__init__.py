"""``deepcontext chat``: a terminal chat with an assistant that remembers, across turns and sessions.

- :mod:`~deepcontext.chat.runner`: :func:`run_chat`, the program (lines from a terminal or a stream);
- :mod:`~deepcontext.chat.conversation`: :class:`ChatSession`, one line at a time (messages and commands);
- :mod:`~deepcontext.chat.commands`: telling commands from messages;
- :mod:`~deepcontext.chat.prompt`: the context of a message and what the LLM receives;
- :mod:`~deepcontext.chat.render`: what the chat prints.

Importing this package imports nothing heavy; rich loads with the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["ChatSession", "run_chat"]

if TYPE_CHECKING:
    from deepcontext.chat.conversation import ChatSession
    from deepcontext.chat.runner import run_chat


def __getattr__(name: str) -> Any:
    if name == "run_chat":
        from deepcontext.chat.runner import run_chat

        return run_chat
    if name == "ChatSession":
        from deepcontext.chat.conversation import ChatSession

        return ChatSession
    raise AttributeError(f"module 'deepcontext.chat' has no attribute {name!r}")
