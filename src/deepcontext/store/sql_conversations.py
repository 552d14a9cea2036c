"""One conversation's graph rows (:class:`~deepcontext.store.conversations.ConversationRows`) on a
SQL store: turns, turn edges, the conversation row's stamp, key memories as memory rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import Connection, insert, or_, select, update

from deepcontext.store.conversations import (
    NODE_SUMMARY_KEY,
    PART_KEY,
    REV_KEY,
    ConversationRows,
    ConversationWrite,
    KeyMemoryRow,
    NewKeyMemoryRow,
    NodeTurn,
    Stamp,
    TurnRow,
)
from deepcontext.store.repository import Writes
from deepcontext.store.sqlparts import chunks
from deepcontext.text import content_hash
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier, MemoryType

if TYPE_CHECKING:
    from deepcontext.store.sql_writes import MemoryWriter

__all__ = ["KEY", "SOURCE", "SQLConversationRows"]

#: memories.source of key memories
SOURCE = "dialogue"
#: memories.metadata key holding the Memory Graph fields without a column (status, packable, turn_id)
KEY = "key_memory"
_ACTOR = "dialogue"
_ACTIVE = MemoryStatus.ACTIVE.value


class _Context(Writes, Protocol):
    @property
    def writer(self) -> MemoryWriter: ...


class SQLConversationRows(ConversationRows):
    def __init__(self, store: _Context, user_id: str, conversation_id: str) -> None:
        self.s = store
        self.t = store.t
        self.user_id = user_id
        self.conversation_id = conversation_id

    # --- transactions ---------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[Connection]:
        with self.s.connection() as conn:
            yield conn

    @contextmanager
    def writing(self, now: datetime) -> Iterator[ConversationWrite]:
        # lock order as in the engine's own writes: the users row first (bump_user upserts and, on
        # PostgreSQL, locks it), then the conversation row: a dialogue write and an add never deadlock
        with self.s.transaction() as conn:
            rev = self.s.bump_user(conn, self.user_id, now)
            stamp = self._stamp(conn, for_update=True)
            if stamp is None:
                cv = self.t.conversations
                conn.execute(
                    self.s.upsert(cv)
                    .values(
                        user_id=self.user_id, conversation_id=self.conversation_id, tip_turn_id=None, turn_count=0,
                        created_at=now, updated_at=now, metadata={},
                    )
                    .on_conflict_do_nothing(index_elements=[cv.c.user_id, cv.c.conversation_id])
                )  # fmt: skip
                stamp = self._stamp(conn, for_update=True)
                assert stamp is not None
            yield ConversationWrite(conn, stamp, now, rev)

    # --- turns and edges ------------------------------------------------------------------------
    def read_stamp(self, handle: Any) -> Stamp | None:
        return self._stamp(handle)

    def _stamp(self, conn: Connection, *, for_update: bool = False) -> Stamp | None:
        cv = self.t.conversations
        q = select(cv.c.turn_count, cv.c.tip_turn_id, cv.c.metadata).where(
            cv.c.user_id == self.user_id, cv.c.conversation_id == self.conversation_id
        )
        if for_update:
            q = q.with_for_update()
        row = conn.execute(q).first()
        if row is None:
            return None
        meta = row.metadata or {}
        return (int(row.turn_count or 0), row.tip_turn_id, int(meta.get(REV_KEY, 0) or 0))

    def _mine(self) -> tuple[Any, ...]:
        tt = self.t.turns
        return (tt.c.user_id == self.user_id, tt.c.conversation_id == self.conversation_id)

    def load(self, handle: Any, after: int) -> tuple[list[TurnRow], list[tuple[int, int]]]:
        # positional unpacking: this runs over every turn when a handle opens a conversation
        tt, te = self.t.turns, self.t.turn_edges
        mine = (*self._mine(), tt.c.id > after)
        found = handle.execute(
            select(tt.c.id, tt.c.role, tt.c.kind, tt.c.archived, tt.c.summarized_by, tt.c.metadata[PART_KEY].as_string())
            .where(*mine)
            .order_by(tt.c.id)
        ).all()
        rows = [TurnRow(i, role, kind, bool(archived), by, part) for i, role, kind, archived, by, part in found]
        edges: list[tuple[int, int]] = [
            (c, p)
            for c, p in handle.execute(
                select(te.c.child_id, te.c.parent_id)
                .join(tt, tt.c.id == te.c.child_id)
                .where(*mine)
                .order_by(te.c.child_id, te.c.position, te.c.parent_id)
            ).all()
        ]
        return rows, edges

    def node_turns(self, handle: Any, turn_ids: Sequence[int]) -> dict[int, NodeTurn]:
        tt = self.t.turns
        out: dict[int, NodeTurn] = {}
        for chunk in chunks(list(turn_ids)):
            for r in handle.execute(
                select(tt.c.id, tt.c.role, tt.c.kind, tt.c.content, tt.c.tags, tt.c.metadata).where(
                    tt.c.user_id == self.user_id, tt.c.id.in_(list(chunk))
                )
            ):
                summary = str((r.metadata or {}).get(NODE_SUMMARY_KEY, ""))
                out[int(r.id)] = NodeTurn(int(r.id), r.role, r.kind, r.content, list(r.tags or ()), summary)
        return out

    def _turn(self, now: datetime, role: str, content: str, *, kind: str, tags: Sequence[str], part: str,
              summary_of: Sequence[int] = ()) -> dict[str, Any]:  # fmt: skip
        return {
            "user_id": self.user_id, "conversation_id": self.conversation_id, "role": role, "name": None,
            "content": content, "content_hash": content_hash(content), "kind": kind, "said_at": now, "created_at": now,
            "archived": False, "summary_of": list(summary_of), "tags": list(tags), "metadata": {PART_KEY: part},
        }  # fmt: skip

    def insert_turns(self, handle: Any, now: datetime, turns: Sequence[tuple[str, str, list[str], str]]) -> list[int]:
        tt = self.t.turns
        values = [self._turn(now, role, content, kind="message", tags=tags, part=part) for role, content, tags, part in turns]
        return [int(i) for i in handle.execute(insert(tt).returning(tt.c.id, sort_by_parameter_order=True), values).scalars()]

    def insert_summary(self, handle: Any, now: datetime, content: str, covered: Sequence[int]) -> int:
        tt = self.t.turns
        row = self._turn(now, "system", content, kind="summary", tags=(), part="first", summary_of=covered)
        s = int(handle.execute(insert(tt).values(**row).returning(tt.c.id)).scalar_one())
        for chunk in chunks(list(covered)):
            handle.execute(
                update(tt).where(tt.c.user_id == self.user_id, tt.c.id.in_(list(chunk))).values(archived=True, summarized_by=s)
            )
        return s

    def insert_edges(self, handle: Any, edges: Sequence[tuple[int, int, int]]) -> None:
        if edges:
            handle.execute(
                insert(self.t.turn_edges),
                [{"user_id": self.user_id, "child_id": c, "parent_id": p, "position": i} for c, p, i in edges],
            )

    def set_conversation(
        self, handle: Any, now: datetime, *, added: int, tip: int | None = None, bump_rev: bool = False, stamp: Stamp
    ) -> Stamp:
        cv = self.t.conversations
        where = (cv.c.user_id == self.user_id, cv.c.conversation_id == self.conversation_id)
        values: dict[str, Any] = {"updated_at": now, "turn_count": cv.c.turn_count + added}
        if tip is not None:
            values["tip_turn_id"] = tip
        rev = stamp[2]
        if bump_rev:
            meta = handle.execute(select(cv.c.metadata).where(*where)).scalar_one() or {}
            rev += 1
            values["metadata"] = {**meta, REV_KEY: rev}
        handle.execute(update(cv).where(*where).values(**values))
        return (stamp[0] + added, tip if tip is not None else stamp[1], rev)

    def update_turn(self, handle: Any, turn_id: int, *, tags: Sequence[str] | None, summary: str | None) -> None:
        tt = self.t.turns
        values: dict[str, Any] = {}
        if tags is not None:
            values["tags"] = list(dict.fromkeys(tags))
        if summary is not None:
            meta = handle.execute(select(tt.c.metadata).where(tt.c.id == turn_id)).scalar_one() or {}
            values["metadata"] = {**meta, NODE_SUMMARY_KEY: summary}
        if values:
            handle.execute(update(tt).where(tt.c.user_id == self.user_id, tt.c.id == turn_id).values(**values))

    # --- key memories: rows of memories, source 'dialogue' --------------------------------------
    def _memories(self) -> tuple[Any, ...]:
        mt = self.t.memories
        return (mt.c.user_id == self.user_id, mt.c.conversation_id == self.conversation_id, mt.c.source == SOURCE)

    def add_key_memory(self, write: ConversationWrite, m: NewKeyMemoryRow, embedding: Any = None) -> tuple[int, bool]:
        mt, writer = self.t.memories, self.s.writer
        conn, now, turns = write.handle, write.now, m.source_turns
        if m.canonical_key:
            held = conn.execute(
                select(mt.c.id)
                .where(*self._memories(), mt.c.status == _ACTIVE, mt.c.canonical_key == m.canonical_key)
                .order_by(mt.c.id)
                .limit(1)
            ).first()
            if held is not None:
                mid = int(held[0])
                added = writer.link_sources(conn, self.user_id, mid, turns)
                writer.history(
                    conn, self.user_id, mid, HistoryEvent.NOOP, now, actor=_ACTOR, reason="same canonical key",
                    details={"turn_ids": turns[:50], "new_sources": added},
                )  # fmt: skip
                return mid, False
        row = {
            "text": m.content, "content_hash": content_hash(m.content), "memory_type": MemoryType.SEMANTIC.value,
            "tier": MemoryTier.LONG_TERM.value, "importance": 0.9 if m.pinned else 0.7, "confidence": 0.9,
            "said_at": now, "valid_from": now, "conversation_id": self.conversation_id, "source": SOURCE,
            "metadata": {KEY: {"status": m.status, "packable": m.packable, "turn_id": m.turn_id}},
            "pinned": m.pinned, "tags": list(m.tags), "canonical_key": m.canonical_key, "embedding": embedding,
        }  # fmt: skip
        mid = writer.insert(conn, self.user_id, [row], now=now, rev=write.rev)[0]
        writer.link_sources(conn, self.user_id, mid, turns)
        writer.history(
            conn, self.user_id, mid, HistoryEvent.ADD, now, new_text=m.content, actor=_ACTOR, reason="key memory",
            details={"turn_ids": turns[:50]},
        )  # fmt: skip
        return mid, True

    def key_memories(self, handle: Any, memory_ids: Sequence[int] | None) -> list[KeyMemoryRow]:
        mt, ms = self.t.memories, self.t.memory_sources
        where = [*self._memories(), or_(mt.c.status == _ACTIVE, mt.c.status == MemoryStatus.DELETED.value)]
        if memory_ids is not None:
            ids = sorted({int(i) for i in memory_ids})
            if not ids:
                return []
            where.append(mt.c.id.in_(ids))
        rows = handle.execute(
            select(mt.c.id, mt.c.text, mt.c.status, mt.c.pinned, mt.c.tags, mt.c.canonical_key, mt.c.metadata)
            .where(*where)
            .order_by(mt.c.id)
        ).all()
        out: list[KeyMemoryRow] = []
        for r in rows:
            km = (r.metadata or {}).get(KEY) or {}
            status = str(km.get("status", "candidate"))
            if km.get("removed") or (r.status != _ACTIVE and status != "rejected"):
                continue
            out.append(
                KeyMemoryRow(
                    id=int(r.id), content=r.text, tags=list(r.tags or ()), pinned=bool(r.pinned),
                    packable=bool(km.get("packable", True)), status=status, turn_id=int(km.get("turn_id", 0) or 0),
                    canonical_key=r.canonical_key,
                )
            )  # fmt: skip
        if out:
            by_id = {m.id: m for m in out}
            for mid, tid in handle.execute(
                select(ms.c.memory_id, ms.c.turn_id).where(ms.c.user_id == self.user_id, ms.c.memory_id.in_(list(by_id)))
            ):
                by_id[int(mid)].source_turns.append(int(tid))
        return out

    def _soft_delete(self, write: ConversationWrite, row: Any, meta: dict[str, Any], reason: str) -> None:
        self.s.writer.soft_delete(
            write.handle, self.user_id, [row], now=write.now, rev=write.rev, actor=_ACTOR, reason=reason,
            metadata=lambda _row: meta,
        )  # fmt: skip

    def set_key_memory_status(self, write: ConversationWrite, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        mt = self.t.memories
        rows = write.handle.execute(
            select(mt.c.id, mt.c.text, mt.c.metadata).where(*self._memories(), mt.c.status == _ACTIVE).order_by(mt.c.id)
        ).all()
        changed: list[int] = []
        for r in rows:
            meta = dict(r.metadata or {})
            km = dict(meta.get(KEY) or {})
            if km.get("status", "candidate") != from_status or int(km.get("turn_id", 0) or 0) != turn_id:
                continue
            km["status"] = to_status
            meta[KEY] = km
            if to_status == "rejected":
                self._soft_delete(write, r, meta, "key memory rejected")
            else:
                self.s.writer.write_metadata(write.handle, self.user_id, int(r.id), meta, now=write.now, rev=write.rev)
            changed.append(int(r.id))
        return changed

    def remove_key_memory(self, write: ConversationWrite, memory_id: int) -> bool:
        mt = self.t.memories
        row = write.handle.execute(
            select(mt.c.id, mt.c.text, mt.c.status, mt.c.metadata).where(*self._memories(), mt.c.id == memory_id)
        ).first()
        if row is None:
            return False
        meta = dict(row.metadata or {})
        km = dict(meta.get(KEY) or {})
        if km.get("removed"):
            return False
        km["removed"] = True
        meta[KEY] = km
        if row.status == _ACTIVE:
            self._soft_delete(write, row, meta, "key memory removed")
        else:
            self.s.writer.write_metadata(write.handle, self.user_id, int(row.id), meta, now=write.now, rev=write.rev)
        return True
