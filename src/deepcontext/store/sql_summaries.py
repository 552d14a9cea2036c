"""Conversation summaries (:class:`~deepcontext.store.summaries.Summaries`) on a SQL store: three
columns of ``conversations`` and a count of ``turns``."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, func, select, update

from deepcontext.store.repository import Reads
from deepcontext.store.summaries import ConversationSummary, Summaries

__all__ = ["SQLSummaries"]


class _Context(Reads, Protocol):
    def transaction(self, begin: Callable[[], Any] | None = None) -> AbstractContextManager[Connection]: ...


class SQLSummaries(Summaries):
    def __init__(self, store: _Context) -> None:
        self.s = store

    def read(self, user_id: str, conversation_id: str) -> ConversationSummary | None:
        cv = self.s.t.conversations
        with self.s.connection() as conn:
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

    def count_turns_since(self, user_id: str, conversation_id: str, after_turn_id: int | None) -> int:
        tt = self.s.t.turns
        where = [tt.c.user_id == user_id, tt.c.conversation_id == conversation_id]
        if after_turn_id is not None:
            where.append(tt.c.id > after_turn_id)
        with self.s.connection() as conn:
            return int(conn.execute(select(func.count()).select_from(tt).where(*where)).scalar_one())

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
        cv = self.s.t.conversations
        guard = cv.c.summary_turn_id.is_(None) if expected_turn_id is None else cv.c.summary_turn_id == expected_turn_id
        with self.s.transaction() as conn:
            result = conn.execute(
                update(cv)
                .where(cv.c.user_id == user_id, cv.c.conversation_id == conversation_id, guard)
                .values(summary=summary, summary_turn_id=upto_turn_id, summary_updated_at=now)
            )
            return bool(result.rowcount)
