"""Changes of memory rows after they were written: status (delete, supersede, merge, decay), the
lifecycle's bookkeeping (promotion, importance, purge) and the references between memories. Part of
:class:`~deepcontext.store.sql_writes.MemoryWriter`, the one writer of memory rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, literal, or_, select, update

from deepcontext.store.repository import Lookups, Writes
from deepcontext.store.sqlparts import chunks
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier

__all__ = ["MemoryRowChanges", "history_row"]


def history_row(
    user_id: str,
    memory_id: int,
    event: HistoryEvent,
    now: datetime,
    *,
    old_text: str | None = None,
    new_text: str | None = None,
    actor: str = "system",
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``memory_history`` row."""
    return {
        "user_id": user_id,
        "memory_id": memory_id,
        "event": event.value,
        "old_text": old_text,
        "new_text": new_text,
        "actor": actor,
        "reason": reason,
        "created_at": now,
        "details": details or {},
    }


class RowChangesContext(Lookups, Writes, Protocol):
    """What the writer's row changes use of the store: lookups, write transactions, the engine (for
    its dialect) and the keyword index's removal of rows."""

    @property
    def engine(self) -> Engine: ...

    def unindex(self, conn: Connection, memory_ids: Sequence[int]) -> None: ...


class MemoryRowChanges:
    """The row changes of :class:`~deepcontext.store.sql_writes.MemoryWriter` (its base)."""

    s: RowChangesContext

    def history(
        self,
        conn: Connection,
        user_id: str,
        memory_id: int,
        event: HistoryEvent,
        now: datetime,
        **entry: Any,
    ) -> None:
        """One history entry (``old_text``, ``new_text``, ``actor``, ``reason``, ``details``)."""
        self.history_rows(conn, [history_row(user_id, memory_id, event, now, **entry)])

    def history_rows(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
        """History entries made by :func:`history_row`, in one statement."""
        if rows:
            conn.execute(insert(self.s.t.memory_history), list(rows))

    def reinforce(self, conn: Connection, user_id: str, memory_ids: Sequence[int], now: datetime) -> None:
        """A re-mention is a review: one more mention, and the forgetting curve restarts from the
        memory's base importance now (like an access). Not stamped with ``rev``: nothing of this is
        in a vector cache (see :func:`deepcontext.store.lifecycle.apply_decay`)."""
        if not memory_ids:
            return
        mt = self.s.t.memories
        counts: dict[int, int] = {}
        for mid in memory_ids:
            counts[mid] = counts.get(mid, 0) + 1
        for times in sorted(set(counts.values())):
            ids = sorted(mid for mid, n in counts.items() if n == times)
            conn.execute(
                update(mt)
                .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(ids), mt.c.status == MemoryStatus.ACTIVE.value)
                .values(mention_count=mt.c.mention_count + times, reinforced_at=now, importance=mt.c.base_importance)
            )

    def outdate_turns(self, conn: Connection, user_id: str, old_id: int, valid_to: datetime, now: datetime, rev: int) -> None:
        """A contradicted fact's verbatim turns stay active (they are the record of what was said) but
        get ``valid_to``: search weighs them down unless the question is about the past."""
        t = self.s.t
        ms, mt = t.memory_sources, t.memories
        turns = select(ms.c.turn_id).where(ms.c.memory_id == old_id, ms.c.user_id == user_id)
        turn_memories = select(ms.c.memory_id).where(ms.c.user_id == user_id, ms.c.turn_id.in_(turns))
        conn.execute(
            update(mt)
            .where(
                self.s.owner_clause(mt.c.user_id) == user_id,
                mt.c.id.in_(turn_memories),
                mt.c.source == "turn",
                mt.c.status == MemoryStatus.ACTIVE.value,
                mt.c.valid_to.is_(None),
            )
            .values(valid_to=valid_to, updated_at=now, rev=rev)
        )

    def promote(
        self,
        conn: Connection,
        user_id: str,
        memory_id: int,
        *,
        importance: float,
        valid_to: datetime | None,
        now: datetime,
        rev: int,
    ) -> None:
        """Keep a short-term memory as a long-term one of its own (consolidation; its history entry is
        the consolidation's)."""
        mt = self.s.t.memories
        conn.execute(
            update(mt)
            .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id)
            .values(
                tier=MemoryTier.LONG_TERM.value,
                importance=importance,
                base_importance=importance,
                reinforced_at=now,
                valid_to=valid_to,
                updated_at=now,
                rev=rev,
            )  # fmt: skip
        )

    def write_metadata(
        self, conn: Connection, user_id: str, memory_id: int, metadata: dict[str, Any], *, now: datetime, rev: int
    ) -> None:
        """Replace a memory's metadata without a history entry (bookkeeping of the conversation graph;
        a user's own change goes through :meth:`change_memory`)."""
        mt = self.s.t.memories
        conn.execute(
            update(mt)
            .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id)
            .values(metadata=metadata, updated_at=now, rev=rev)
        )

    def relink(self, conn: Connection, user_id: str, memory_id: int, **links: Any) -> None:
        """Point a memory's ``superseded_by`` and ``consolidated_from`` at other ids (an import mapping
        the source database's ids, a purge removing ids that no longer exist); stamped with ``rev``
        when given."""
        allowed = {"superseded_by", "consolidated_from", "rev"}
        if not links or set(links) - allowed:
            raise ValueError(f"relink sets {sorted(allowed)}, got {sorted(links)}")
        mt = self.s.t.memories
        conn.execute(update(mt).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id).values(**links))

    def unlink_successors(self, conn: Connection, user_id: str, memory_ids: Sequence[int], *, rev: int) -> None:
        """Clear ``superseded_by`` of these memories (what replaced them is being purged)."""
        mt = self.s.t.memories
        for chunk in chunks(list(memory_ids)):
            conn.execute(
                update(mt)
                .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(list(chunk)))
                .values(superseded_by=None, rev=rev)
            )

    def set_importances(self, conn: Connection, user_id: str, rows: Sequence[tuple[int, int, int, float]]) -> None:
        """The forgetting curve's new importance of each (id, access count, mention count, importance)
        row, unless the memory was accessed or mentioned again since the counts were read. Not
        stamped with ``rev``: nothing of this is in a vector cache."""
        mt = self.s.t.memories
        # by primary key only: a condition on (user_id, status) lets PostgreSQL's planner pick the
        # (user_id, status, tier) index and scan all the user's rows for every row updated (with
        # fresh statistics it does not, but right after a bulk import it did: O(n^2)). Ids are never
        # reused on PostgreSQL; SQLite always looks rows up by rowid and may reuse the highest id of a
        # deleted row, so there the user is checked too. A row that became inactive since it was
        # read just gets an importance nobody reads.
        where = [mt.c.id == bindparam("b_id"), mt.c.access_count == bindparam("b_ac"), mt.c.mention_count == bindparam("b_mc")]
        if self.s.engine.dialect.name == "sqlite":
            where.append(mt.c.user_id == user_id)
        stmt = update(mt).where(*where).values(importance=bindparam("b_imp"))
        conn.execute(stmt, [{"b_id": i, "b_ac": ac, "b_mc": mc, "b_imp": imp} for i, ac, mc, imp in rows])

    def purge_rows(self, conn: Connection, user_id: str, memory_ids: Sequence[int]) -> None:
        """Delete these memories for good, with their keyword entries, links, entity and source rows
        and history (the lifecycle's purge of old deletions)."""
        t = self.s.t
        mt, me, ms, ml, mh = t.memories, t.memory_entities, t.memory_sources, t.memory_links, t.memory_history
        for chunk in chunks(list(memory_ids)):
            c = list(chunk)
            self.s.unindex(conn, c)
            conn.execute(delete(ml).where(or_(ml.c.memory_id.in_(c), ml.c.other_id.in_(c))))
            conn.execute(delete(me).where(me.c.memory_id.in_(c)))
            conn.execute(delete(ms).where(ms.c.memory_id.in_(c)))
            conn.execute(delete(mh).where(mh.c.user_id == user_id, mh.c.memory_id.in_(c)))
            conn.execute(delete(mt).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(c)))

    def soft_delete(
        self,
        conn: Connection,
        user_id: str,
        rows: Sequence[Any],
        *,
        now: datetime,
        rev: int,
        actor: str,
        reason: str | None | Callable[[Any], str | None],
        details: Callable[[Any], dict[str, Any] | None] | None = None,
        keep_valid_to: bool = False,
        metadata: Callable[[Any], dict[str, Any]] | None = None,
    ) -> None:
        """Mark the memories of ``rows`` (each with ``id`` and ``text``) deleted, each with its
        history entry; the only place a memory is soft-deleted (the keyword index follows the status
        by trigger or by the backend's own rule). ``reason``, ``details``, ``metadata``: per row when
        callables. ``keep_valid_to``: a memory that already stopped being true keeps that time."""
        if not rows:
            return
        mt = self.s.t.memories
        ends = func.coalesce(mt.c.valid_to, literal(now, type_=mt.c.valid_to.type)) if keep_valid_to else now
        values: dict[str, Any] = {
            "status": MemoryStatus.DELETED.value,
            "deleted_at": now,
            "valid_to": ends,
            "updated_at": now,
            "rev": rev,
        }
        if metadata is None:
            ids = [int(r.id) for r in rows]
            for chunk in chunks(ids):
                conn.execute(
                    update(mt).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(list(chunk))).values(**values)
                )
        else:
            stmt = (
                update(mt)
                .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == bindparam("b_id"))
                .values(**values, metadata=bindparam("b_meta"))
            )
            conn.execute(stmt, [{"b_id": int(r.id), "b_meta": metadata(r)} for r in rows])
        self.history_rows(
            conn,
            [
                history_row(
                    user_id,
                    int(r.id),
                    HistoryEvent.DELETE,
                    now,
                    old_text=r.text,
                    actor=actor,
                    reason=reason(r) if callable(reason) else reason,
                    details=details(r) if details else None,
                )  # fmt: skip
                for r in rows
            ],
        )

    def supersede(
        self,
        conn: Connection,
        user_id: str,
        rows: Sequence[Any],
        *,
        by: int,
        new_text: str,
        valid_to: datetime,
        now: datetime,
        rev: int,
        actor: str,
        event: HistoryEvent,
        reason: str | None,
    ) -> None:
        """Mark the memories of ``rows`` (``id``, ``text``) superseded by memory ``by``: true until
        ``valid_to`` (when the new version became true: said time, not write time), each with its
        history entry."""
        mt = self.s.t.memories
        for row in rows:
            conn.execute(
                update(mt)
                .where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == row.id)
                .values(status=MemoryStatus.SUPERSEDED.value, valid_to=valid_to, superseded_by=by, updated_at=now, rev=rev)
            )
        self.history_rows(
            conn,
            [
                history_row(
                    user_id,
                    int(row.id),
                    event,
                    now,
                    old_text=row.text,
                    new_text=new_text,
                    actor=actor,
                    reason=reason or f"superseded by memory {by}",
                    details={"superseded_by": by},
                )  # fmt: skip
                for row in rows
            ],
        )

    def merge(
        self,
        conn: Connection,
        user_id: str,
        merged_into: dict[int, int],
        *,
        old_texts: dict[int, str],
        new_texts: dict[int, str],
        now: datetime,
        rev: int,
        actor: str,
        method: str,
    ) -> None:
        """Mark each memory of ``merged_into`` (source id -> the long-term memory it became part
        of) merged, each with its history entry."""
        if not merged_into:
            return
        mt = self.s.t.memories
        conn.execute(
            update(mt)
            .where(mt.c.id == bindparam("b_id"))
            .values(status=MemoryStatus.MERGED.value, superseded_by=bindparam("b_into"), updated_at=now, rev=rev),
            [{"b_id": sid, "b_into": fid} for sid, fid in merged_into.items()],
        )
        self.history_rows(
            conn,
            [
                history_row(
                    user_id,
                    sid,
                    HistoryEvent.MERGE,
                    now,
                    old_text=old_texts[sid],
                    new_text=new_texts[fid],
                    actor=actor,
                    reason=f"merged into long-term memory {fid}",
                    details={"merged_into": fid, "method": method},
                )  # fmt: skip
                for sid, fid in merged_into.items()
            ],
        )

    def decay(
        self,
        conn: Connection,
        user_id: str,
        memory_id: int,
        *,
        importance: float,
        seen: tuple[int, int],
        now: datetime,
        rev: int,
        actor: str,
        reason: str | None,
        details: dict[str, Any] | None,
    ) -> bool:
        """Deactivate a faded memory (status ``decayed``, its new importance, a history entry) unless
        it was accessed or mentioned again since ``seen`` = (access count, mention count) was read;
        whether it was."""
        mt = self.s.t.memories
        res = conn.execute(
            update(mt)
            .where(mt.c.id == memory_id, mt.c.access_count == seen[0], mt.c.mention_count == seen[1])
            .values(status=MemoryStatus.DECAYED.value, importance=importance, updated_at=now, rev=rev)
        )
        if not res.rowcount:
            return False
        self.history(conn, user_id, memory_id, HistoryEvent.DECAY, now, actor=actor, reason=reason, details=details)
        return True
