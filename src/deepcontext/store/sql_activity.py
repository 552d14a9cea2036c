"""The activity log (:class:`~deepcontext.store.activity.ActivityLog`) on a SQL store: the
``activity`` and ``activity_hits`` tables."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, and_, delete, func, insert, select

from deepcontext.store.activity import ActivityFilters, ActivityLog, ActivityRow
from deepcontext.store.repository import Reads

__all__ = ["SQLActivityLog"]


class _Context(Reads, Protocol):
    def transaction(self, begin: Callable[[], Any] | None = None) -> AbstractContextManager[Connection]: ...


def _row(r: Any, with_record: bool = True) -> ActivityRow:
    return ActivityRow(
        id=int(r.id), user_id=r.user_id, kind=r.kind, via=r.via, key_id=r.key_id, agent_id=r.agent_id, run_id=r.run_id,
        conversation_id=r.conversation_id, query=r.query, took_ms=r.took_ms, created_at=r.created_at,
        record=dict(r.details or {}) if with_record else {},
    )  # fmt: skip


def _prune(conn: Any, s: Any, user_id: str, keep: int, since: datetime) -> None:
    at, hits_t = s.t.activity, s.t.activity_hits
    # the id of the oldest call kept by count: everything below it, or older than ``since``, goes
    floor = conn.execute(
        select(at.c.id).where(at.c.user_id == user_id).order_by(at.c.id.desc()).offset(keep - 1).limit(1)
    ).scalar()
    stale = (at.c.created_at < since) if floor is None else ((at.c.created_at < since) | (at.c.id < floor))
    gone = select(at.c.id).where(at.c.user_id == user_id, stale)
    conn.execute(delete(hits_t).where(hits_t.c.user_id == user_id, hits_t.c.activity_id.in_(gone)))
    conn.execute(delete(at).where(at.c.user_id == user_id, stale))


def _where(at: Any, user_id: str, f: ActivityFilters) -> list[Any]:
    clauses = [at.c.user_id == user_id]
    for name in ("kind", "via", "agent_id", "run_id", "conversation_id"):
        value = getattr(f, name)
        if value is not None:
            clauses.append(at.c[name] == value)
    if f.after is not None:
        clauses.append(at.c.created_at >= f.after)
    if f.before is not None:
        clauses.append(at.c.created_at < f.before)
    return clauses


class SQLActivityLog(ActivityLog):
    def __init__(self, store: _Context) -> None:
        self.s = store

    def write(self, calls: Sequence[Mapping[str, Any]], *, keep: int, since: datetime) -> int:
        """Insert ``calls`` (column dicts with ``hits``: (memory id, rank) pairs) and prune each of their
        users to the newest ``keep`` calls made at or after ``since``. One transaction; the number written."""
        s = self.s
        at, hits_t = s.t.activity, s.t.activity_hits
        if not calls:
            return 0
        with s.transaction() as conn:
            # one multi-row statement each for the calls and their hits (a batch is a single round trip)
            values = [{k: v for k, v in call.items() if k != "hits"} for call in calls]
            ids = conn.execute(insert(at).returning(at.c.id, sort_by_parameter_order=True), values).scalars().all()
            rows = [
                {"activity_id": new_id, "memory_id": m, "user_id": call["user_id"], "rank": r}
                for new_id, call in zip(ids, calls, strict=True)
                for m, r in call["hits"]
            ]
            if rows:
                conn.execute(insert(hits_t), rows)
            for user_id in {c["user_id"] for c in calls}:
                _prune(conn, s, user_id, keep, since)
        return len(calls)

    def page(self, user_id: str, filters: ActivityFilters, *, limit: int, before_id: int | None = None) -> list[ActivityRow]:
        """The user's calls newest first, ``limit`` of them, older than ``before_id`` when given."""
        s = self.s
        at = s.t.activity
        clauses = _where(at, user_id, filters)
        if before_id is not None:
            clauses.append(at.c.id < before_id)
        q = select(at).where(and_(*clauses)).order_by(at.c.id.desc()).limit(limit)
        with s.connection() as conn:
            return [_row(r) for r in conn.execute(q)]

    def count(self, user_id: str, filters: ActivityFilters) -> int:
        s = self.s
        at = s.t.activity
        with s.connection() as conn:
            return int(conn.execute(select(func.count()).select_from(at).where(*_where(at, user_id, filters))).scalar_one())

    def get(self, user_id: str, activity_id: int) -> ActivityRow | None:
        """One call of the user with its record, or None."""
        s = self.s
        at = s.t.activity
        with s.connection() as conn:
            r = conn.execute(select(at).where(at.c.user_id == user_id, at.c.id == activity_id)).first()
        return _row(r) if r is not None else None

    def retrievals(self, user_id: str, memory_id: int, *, limit: int) -> list[tuple[ActivityRow, int]]:
        """The user's newest calls that returned the memory, with its rank in each."""
        s = self.s
        at, hits_t = s.t.activity, s.t.activity_hits
        cols = [c for c in at.c if c.name != "details"]
        q = (
            select(*cols, hits_t.c.rank)
            .select_from(hits_t.join(at, at.c.id == hits_t.c.activity_id))
            .where(hits_t.c.user_id == user_id, hits_t.c.memory_id == memory_id, at.c.user_id == user_id)
            .order_by(hits_t.c.activity_id.desc())
            .limit(limit)
        )
        with s.connection() as conn:
            return [(_row(r, with_record=False), int(r.rank)) for r in conn.execute(q)]
