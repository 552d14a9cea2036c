"""Running conversation summaries in ``conversations.summary``: read, count what is new, write.

A summary covers the conversation's turns up to ``conversations.summary_turn_id``; the turns after
it are the ones not summarized yet. Writes are compare-and-set on that column, so two processes
refreshing the same conversation never move a summary backwards, and a write never touches
memories, turns or anything an add writes.

These are functions over an :class:`~deepcontext.store.sql.SQLStore` (SQLite and PostgreSQL), kept
out of ``sql.py``. Other :class:`~deepcontext.store.interface.Store` implementations have no summaries:
:func:`supports_summaries` is False for them, reads return None and writes do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update

from deepcontext.store.interface import Store
from deepcontext.store.sql import SQLStore
from deepcontext.types import Turn

__all__ = [
    "ConversationSummary",
    "count_turns_since",
    "load_context",
    "pending",
    "read_summary",
    "supports_summaries",
    "turns_since",
    "write_summary",
]


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation's stored summary state."""

    conversation_id: str
    summary: str | None
    #: the last turn the summary covers (None: nothing summarized yet)
    summary_turn_id: int | None
    updated_at: datetime | None


def supports_summaries(store: Store) -> bool:
    """Whether ``store`` keeps conversation summaries (the SQL stores do)."""
    return isinstance(store, SQLStore)


def read_summary(store: Store, user_id: str, conversation_id: str) -> ConversationSummary | None:
    """The conversation's summary state, or None if the conversation does not exist (or the store
    keeps no summaries)."""
    if not isinstance(store, SQLStore):
        return None
    cv = store.t.conversations
    with store.connection() as conn:
        row = conn.execute(
            select(cv.c.summary, cv.c.summary_turn_id, cv.c.summary_updated_at).where(
                cv.c.user_id == user_id, cv.c.conversation_id == conversation_id
            )
        ).first()
    if row is None:
        return None
    return ConversationSummary(
        conversation_id=conversation_id,
        summary=row.summary,
        summary_turn_id=int(row.summary_turn_id) if row.summary_turn_id is not None else None,
        updated_at=row.summary_updated_at,
    )


def count_turns_since(store: Store, user_id: str, conversation_id: str, after_turn_id: int | None) -> int:
    """Turns of the conversation with an id above ``after_turn_id`` (all of them for None)."""
    if not isinstance(store, SQLStore):
        return 0
    tt = store.t.turns
    where = [tt.c.user_id == user_id, tt.c.conversation_id == conversation_id]
    if after_turn_id is not None:
        where.append(tt.c.id > after_turn_id)
    with store.connection() as conn:
        return int(conn.execute(select(func.count()).select_from(tt).where(*where)).scalar_one())


def pending(store: Store, user_id: str, conversation_id: str) -> tuple[ConversationSummary | None, int]:
    """The summary state and the number of turns not summarized yet, in one call (0 and None when
    the conversation does not exist)."""
    state = read_summary(store, user_id, conversation_id)
    if state is None:
        return None, 0
    return state, count_turns_since(store, user_id, conversation_id, state.summary_turn_id)


def turns_since(store: Store, user_id: str, conversation_id: str, after_turn_id: int | None, limit: int) -> list[Turn]:
    """The last ``limit`` turns of the conversation with an id above ``after_turn_id``, oldest first."""
    turns = store.recent_turns(user_id, conversation_id, limit)
    if after_turn_id is None:
        return turns
    return [t for t in turns if t.id > after_turn_id]


def write_summary(
    store: Store,
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
    Returns False when another writer got there first (or the store keeps no summaries)."""
    if not isinstance(store, SQLStore):
        return False
    cv = store.t.conversations
    guard = cv.c.summary_turn_id.is_(None) if expected_turn_id is None else cv.c.summary_turn_id == expected_turn_id
    with store.transaction() as conn:
        result = conn.execute(
            update(cv)
            .where(cv.c.user_id == user_id, cv.c.conversation_id == conversation_id, guard)
            .values(summary=summary, summary_turn_id=upto_turn_id, summary_updated_at=now)
        )
        return bool(result.rowcount)


def load_context(store: Store, user_id: str, conversation_id: str, turns: int) -> tuple[str | None, list[Turn]]:
    """What an extractor is shown besides the new messages: the stored summary and the last
    ``turns`` turns of the conversation (oldest first). One worker-thread hop for both."""
    state = read_summary(store, user_id, conversation_id)
    if state is None and supports_summaries(store):
        return None, []  # a new conversation: no turns either
    recent = store.recent_turns(user_id, conversation_id, turns) if turns > 0 else []
    return (state.summary if state is not None else None), recent
