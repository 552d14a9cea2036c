"""Builders shared by the dialogue tests: message pairs, stores, graphs on every backend, a test agent."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from deepcontext.clock import ManualClock
from deepcontext.dialogue import LLMContext, LLMContextGraph, LLMContextPair
from deepcontext.dialogue.sqlstore import StoreDialogueBackend

DIM = 16


def pair(user: str, assistant: str) -> LLMContextPair:
    return LLMContextPair(LLMContext("user", user), LLMContext("assistant", assistant))


def open_store(url: str) -> Any:
    """A migrated store for ``url`` (SQLite file or PostgreSQL database)."""
    if url.startswith("sqlite"):
        from deepcontext.store.sqlite import SQLiteStore

        store: Any = SQLiteStore(url, DIM)
    else:
        from deepcontext.store.postgres import PostgresStore

        store = PostgresStore(url, DIM)
    store.migrate()
    return store


def store_backend(store: Any, user_id: str | None = None, conversation_id: str = "c1") -> StoreDialogueBackend:
    return StoreDialogueBackend(
        store, user_id=user_id or f"u-{uuid.uuid4().hex[:8]}", conversation_id=conversation_id, clock=ManualClock()
    )


def chain_of(graph: LLMContextGraph, n: int, parent_ids: Sequence[int] | None = None, prefix: str = "q") -> list[int]:
    return graph.add_chain([pair(f"{prefix}{i} question", f"{prefix}{i} answer") for i in range(n)], parent_ids)


class ScriptedAgent:
    """A deterministic agent with the seed's ``fetch``: records calls; summaries get ``summary_text``,
    other calls get ``"answer: <msg>"`` (or raise ``fail`` when set)."""

    def __init__(self, summary_text: str = "SUMMARY", fail: BaseException | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.summary_text = summary_text
        self.fail = fail

    async def fetch(
        self,
        msg: str,
        system_prompt: str | None = None,
        temperature: float = 0.4,
        max_tokens: int = 4096,
        prev_messages: list[dict[str, str]] | None = None,
    ) -> str:
        self.calls.append({"msg": msg, "system_prompt": system_prompt, "prev_messages": prev_messages})
        if msg.startswith("Summarise"):
            return self.summary_text
        if self.fail is not None:
            raise self.fail
        return f"answer: {msg}"

    @property
    def answers(self) -> list[dict[str, Any]]:
        return [c for c in self.calls if not c["msg"].startswith("Summarise")]
