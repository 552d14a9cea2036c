"""Running conversation summaries in ``conversations.summary``: read, count what is new, write.

A summary covers the conversation's turns up to ``conversations.summary_turn_id``; the turns after
it are the ones not summarized yet. Writes are compare-and-set on that column, so two processes
refreshing the same conversation never move a summary backwards, and a write never touches
memories, turns or anything an add writes.

:class:`Summaries` is the store's facet for them (``store.summaries``; None for a store that keeps
no summaries). Its methods block: run them in a thread.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

__all__ = ["ConversationSummary", "Summaries"]


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation's stored summary state."""

    conversation_id: str
    summary: str | None
    #: the last turn the summary covers (None: nothing summarized yet)
    summary_turn_id: int | None
    updated_at: datetime | None


class Summaries(ABC):
    """The store's conversation summaries (``store.summaries``)."""

    @abstractmethod
    def read(self, user_id: str, conversation_id: str) -> ConversationSummary | None:
        """The conversation's summary state, or None if the conversation does not exist."""

    @abstractmethod
    def count_turns_since(self, user_id: str, conversation_id: str, after_turn_id: int | None) -> int:
        """Turns of the conversation with an id above ``after_turn_id`` (all of them for None)."""

    @abstractmethod
    def write(
        self,
        user_id: str,
        conversation_id: str,
        *,
        summary: str,
        upto_turn_id: int,
        expected_turn_id: int | None,
        now: datetime,
    ) -> bool:
        """Store ``summary`` as covering the turns up to ``upto_turn_id``, only if the stored summary
        still covers ``expected_turn_id`` (what the caller summarized from). One small transaction.
        Returns False when another writer got there first."""

    def pending(self, user_id: str, conversation_id: str) -> tuple[ConversationSummary | None, int]:
        """The summary state and the number of turns not summarized yet (None and 0 when the
        conversation does not exist)."""
        state = self.read(user_id, conversation_id)
        if state is None:
            return None, 0
        return state, self.count_turns_since(user_id, conversation_id, state.summary_turn_id)
