"""The memory writer: every memory row is created, changed and deleted here, with the rules that
go with it (keyword index, history, provenance, links, revision stamps)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from sqlalchemy import Connection, delete, func, insert, select, update

from deepcontext.errors import MemoryNotFoundError, ValidationError
from deepcontext.store.interface import MemoryEdit, MemoryFilters, MemoryRewrite
from deepcontext.store.sql_row_changes import MemoryRowChanges, RowChangesContext, history_row
from deepcontext.store.sqlparts import chunks
from deepcontext.types import HistoryEvent, Memory, MemoryStatus

if TYPE_CHECKING:
    from deepcontext.store.sql_memories import MemoryReads
    from deepcontext.store.sql_turns import TurnReads

__all__ = ["MemoryWriter", "history_row"]


def _new_memory(now: datetime) -> dict[str, Any]:
    """The columns of a new active memory that callers usually leave to their defaults."""
    return {
        "status": MemoryStatus.ACTIVE.value,
        "access_count": 0,
        "mention_count": 1,
        "reinforced_at": now,
        "created_at": now,
        "updated_at": now,
        "source": "rules",
        "consolidated_from": [],
        "metadata": {},
        "pinned": False,
        "tags": [],
    }


class WriterContext(RowChangesContext, Protocol):
    """What :class:`MemoryWriter` uses of its store beyond its row changes: the keyword index and
    the memories and turns it reads back."""

    @property
    def keyword_context_turns(self) -> int: ...

    @property
    def memories(self) -> MemoryReads: ...

    @property
    def turns(self) -> TurnReads: ...

    def index_texts(self, conn: Connection, rows: list[tuple[int, str]]) -> None: ...

    def purge_deleted(self, conn: Connection) -> None: ...


class MemoryWriter(MemoryRowChanges):
    """Writes to a store's memories."""

    s: WriterContext

    def __init__(self, store: WriterContext) -> None:
        self.s = store

    def active_memory(self, conn: Connection, user_id: str, memory_id: int) -> Any:
        mt = self.s.t.memories
        row = conn.execute(select(mt).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id)).first()
        if row is None:
            raise MemoryNotFoundError(memory_id, user_id)
        if row.status != MemoryStatus.ACTIVE.value:
            raise MemoryNotFoundError(memory_id, user_id, status=str(row.status))
        return row

    def insert(
        self,
        conn: Connection,
        user_id: str,
        rows: Sequence[dict[str, Any]],
        *,
        now: datetime,
        rev: int,
        turns: Sequence[int | None] | None = None,
    ) -> list[int]:
        """Create memories of the user, indexed for keyword search, stamped with ``rev``; the only place
        memory rows are inserted. ``rows`` hold columns of ``memories``; those of a new active memory
        default. ``turns``: per row, the turn a verbatim turn memory stores (its context is indexed
        with it, see :meth:`index`). Returns the new ids in the order of ``rows``."""
        if not rows:
            return []
        mt = self.s.t.memories
        full = [{**_new_memory(now), **r, "user_id": user_id, "rev": rev} for r in rows]
        for r in full:
            r.setdefault("base_importance", r["importance"])
            r.setdefault("valid_from", r.get("said_at") or now)
        keys = set().union(*full)
        for r in full:  # one statement for all rows: every row names the same columns
            for k in keys:
                r.setdefault(k, None)
        ids = [int(i) for i in conn.execute(insert(mt).returning(mt.c.id, sort_by_parameter_order=True), full).scalars().all()]
        of = turns or [None] * len(ids)
        self.index(conn, user_id, [(mid, r["text"], t) for mid, r, t in zip(ids, full, of, strict=True)])
        return ids

    def index(self, conn: Connection, user_id: str, rows: Sequence[tuple[int, str, int | None]]) -> None:
        """Index ``(memory id, text, turn)`` rows for keyword search. A verbatim turn memory (its
        ``turn`` given) is indexed with the earlier turns it follows (``keyword_context_turns`` of
        them): a reply such as "Adoption agencies, mostly." carries the words of the question it
        answers, which a question about it repeats."""
        turn_ids = [t for _, _, t in rows if t is not None]
        context = self.s.turns.context_texts(conn, user_id, turn_ids, self.s.keyword_context_turns) if turn_ids else {}
        self.s.index_texts(
            conn, [(mid, f"{text} {context[t]}" if t is not None and t in context else text) for mid, text, t in rows]
        )

    def verbatim_turns(self, conn: Connection, memory_ids: Sequence[int]) -> dict[int, int]:
        """The turn each verbatim turn memory among ``memory_ids`` stores (its oldest source)."""
        mt, ms = self.s.t.memories, self.s.t.memory_sources
        out: dict[int, int] = {}
        for chunk in chunks(list(memory_ids)):
            rows = conn.execute(
                select(ms.c.memory_id, func.min(ms.c.turn_id))
                .join(mt, mt.c.id == ms.c.memory_id)
                .where(ms.c.memory_id.in_(list(chunk)), mt.c.source == "turn")
                .group_by(ms.c.memory_id)
            )
            out.update((int(m), int(t)) for m, t in rows)
        return out

    def link_sources(self, conn: Connection, user_id: str, memory_id: int, turn_ids: Sequence[int]) -> int:
        if not turn_ids:
            return 0
        ms = self.s.t.memory_sources
        have = {
            r[0]
            for r in conn.execute(
                select(ms.c.turn_id).where(ms.c.memory_id == memory_id, ms.c.turn_id.in_(list(set(turn_ids))))
            ).all()
        }
        new = [tid for tid in dict.fromkeys(turn_ids) if tid not in have]
        if new:
            conn.execute(insert(ms), [{"memory_id": memory_id, "turn_id": tid, "user_id": user_id} for tid in new])
        return len(new)

    def insert_links(self, conn: Connection, user_id: str, rows: list[dict[str, Any]]) -> None:
        ml = self.s.t.memory_links
        stmt = self.s.upsert(ml).on_conflict_do_nothing(index_elements=[ml.c.memory_id, ml.c.other_id])
        conn.execute(stmt, rows)

    def update_memory(
        self,
        user_id: str,
        memory_id: int,
        *,
        text: str,
        content_hash: str,
        embedding: np.ndarray | None,
        now: datetime,
        actor: str,
        reason: str | None,
        metadata: dict[str, Any] | None = None,
    ) -> Memory:
        mt = self.s.t.memories
        with self.s.transaction() as conn:
            self.s.lock_user(conn, user_id)
            row = self.active_memory(conn, user_id, memory_id)
            rev = self.s.bump_user(conn, user_id, now)
            values: dict[str, Any] = {
                "text": text,
                "content_hash": content_hash,
                "embedding": embedding,
                "updated_at": now,
                "rev": rev,
            }
            if metadata is not None:
                values["metadata"] = metadata
            conn.execute(update(mt).where(mt.c.id == memory_id).values(**values))
            self.s.unindex(conn, [memory_id])
            self.index(conn, user_id, [(memory_id, text, self.verbatim_turns(conn, [memory_id]).get(memory_id))])
            self.history(
                conn, user_id, memory_id, HistoryEvent.UPDATE, now,
                old_text=row.text, new_text=text, actor=actor, reason=reason,
            )  # fmt: skip
        return self.s.memories.get_memories(user_id, [memory_id])[0]

    def change_memory(self, user_id: str, memory_id: int, change: MemoryEdit, *, now: datetime, actor: str) -> Memory:
        mt = self.s.t.memories
        with self.s.transaction() as conn:
            self.s.lock_user(conn, user_id)
            row = self._restorable(conn, user_id, memory_id) if change.restore else self.active_memory(conn, user_id, memory_id)
            rev = self.s.bump_user(conn, user_id, now)
            values: dict[str, Any] = {"updated_at": now, "rev": rev}
            details: dict[str, Any] = {}
            if change.text is not None:
                values.update(text=change.text, content_hash=change.content_hash, embedding=change.embedding)
            if change.pinned is not None:
                values["pinned"] = details["pinned"] = change.pinned
            if change.metadata is not None:
                values["metadata"] = change.metadata
                details["metadata"] = {"old": row._mapping["metadata"] or {}, "new": change.metadata}
            if change.expires_at is not None or change.clear_expiry:
                values["expires_at"] = change.expires_at
                details["expires_at"] = change.expires_at.isoformat() if change.expires_at else None
            if change.restore:
                # a deliberate restore counts as an access: its forgetting curve starts again
                values.update(status=MemoryStatus.ACTIVE.value, valid_to=None, deleted_at=None, last_accessed_at=now,
                              access_count=row.access_count + 1)  # fmt: skip
                details["status"] = {"old": row.status, "new": MemoryStatus.ACTIVE.value}
            conn.execute(update(mt).where(mt.c.id == memory_id).values(**values))
            text = row.text if change.text is None else change.text
            if change.restore or change.text is not None:  # the keyword index holds active memories' texts
                self.s.unindex(conn, [memory_id])
                self.index(conn, user_id, [(memory_id, text, self.verbatim_turns(conn, [memory_id]).get(memory_id))])
            event = HistoryEvent.RESTORE if change.restore else HistoryEvent.UPDATE
            self.history(
                conn, user_id, memory_id, event, now, old_text=row.text, new_text=text, actor=actor,
                reason=change.reason, details=details,
            )  # fmt: skip
        return self.s.memories.get_memories(user_id, [memory_id])[0]

    def _restorable(self, conn: Connection, user_id: str, memory_id: int) -> Any:
        mt = self.s.t.memories
        row = conn.execute(select(mt).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id)).first()
        if row is None:
            raise MemoryNotFoundError(memory_id, user_id)
        if row.status not in (MemoryStatus.DELETED.value, MemoryStatus.DECAYED.value):
            raise ValidationError(
                f"memory {memory_id} is {row.status}: only deleted or decayed memories can be restored", field="memory_id"
            )
        return row

    def delete_memory(self, user_id: str, memory_id: int, *, now: datetime, actor: str, reason: str | None) -> Memory:
        with self.s.transaction() as conn:
            self.s.lock_user(conn, user_id)
            row = self.active_memory(conn, user_id, memory_id)
            rev = self.s.bump_user(conn, user_id, now)
            self.soft_delete(conn, user_id, [row], now=now, rev=rev, actor=actor, reason=reason)
        return self.s.memories.get_memories(user_id, [memory_id])[0]

    def delete_memories(
        self, user_id: str, filters: MemoryFilters, *, now: datetime, actor: str, reason: str | None
    ) -> list[int]:
        mt = self.s.t.memories
        with self.s.transaction() as conn:
            self.s.lock_user(conn, user_id)
            rows = conn.execute(
                select(mt.c.id, mt.c.text).where(mt.c.user_id == user_id, *self.s.filter_clause(filters, now)).order_by(mt.c.id)
            ).all()
            if not rows:
                return []
            rev = self.s.bump_user(conn, user_id, now)
            self.soft_delete(conn, user_id, rows, now=now, rev=rev, actor=actor, reason=reason)
        return [int(r.id) for r in rows]

    def delete_user(self, user_id: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self.s.transaction() as conn:
            # lock the users row as an add does, creating it if needed: on PostgreSQL a user being
            # created by a concurrent add is waited for instead of deadlocking with it
            created = self.s.bump_user(conn, user_id, datetime.now(UTC)) == 1
            ids = [r[0] for r in conn.execute(select(self.s.t.memories.c.id).where(self.s.t.memories.c.user_id == user_id))]
            self.s.unindex(conn, ids)
            for table in self.s.t.user_tables:
                counts[table.name] = conn.execute(delete(table).where(table.c.user_id == user_id)).rowcount or 0
            if created:
                counts[self.s.t.users.name] -= 1
            self.s.purge_deleted(conn)
        self.s.forget_user_caches(user_id)
        return counts

    def bump_access(self, user_id: str, memory_ids: Sequence[int], now: datetime) -> None:
        if not memory_ids:
            return
        mt = self.s.t.memories
        with self.s.transaction() as conn:
            conn.execute(
                update(mt)
                .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(sorted(set(memory_ids))))
                .values(access_count=mt.c.access_count + 1, last_accessed_at=now)
            )

    def rewrite_texts(self, conn: Connection, user_id: str, rewrites: Sequence[MemoryRewrite], now: datetime, reason: str) -> int:
        """New texts of active memories whose text is still the one read (one changed since is left)."""
        mt = self.s.t.memories
        current: dict[int, str] = {}
        for ids in chunks([r.memory_id for r in rewrites]):
            rows = conn.execute(
                select(mt.c.id, mt.c.text).where(
                    self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(list(ids)), mt.c.status == MemoryStatus.ACTIVE.value
                )
            ).all()
            current.update((int(mid), str(text)) for mid, text in rows)
        todo = [r for r in rewrites if current.get(r.memory_id) == r.old_text]
        if not todo:
            return 0
        rev = self.s.bump_user(conn, user_id, now)
        for r in todo:
            values: dict[str, Any] = {
                "text": r.text, "content_hash": r.content_hash, "embedding": r.embedding, "updated_at": now, "rev": rev
            }  # fmt: skip
            if r.metadata is not None:
                values["metadata"] = r.metadata
            conn.execute(update(mt).where(mt.c.id == r.memory_id, mt.c.user_id == user_id).values(**values))
            self.history(
                conn, user_id, r.memory_id, HistoryEvent.UPDATE, now, old_text=r.old_text, new_text=r.text, reason=reason
            )
        self.s.unindex(conn, [r.memory_id for r in todo])
        turn_of = self.verbatim_turns(conn, [r.memory_id for r in todo])
        self.index(conn, user_id, [(r.memory_id, r.text, turn_of.get(r.memory_id)) for r in todo])
        return len(todo)
