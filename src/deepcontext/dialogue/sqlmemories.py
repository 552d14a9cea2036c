"""Key memories of a store-backed conversation graph, as rows of the deepcontext ``memories`` table.

A key memory is a memory row with ``source = 'dialogue'`` and the graph's ``conversation_id``:
content, ``pinned``, ``tags`` and ``canonical_key`` are its columns; the Memory Graph fields
without a column live in ``metadata.key_memory`` (``status``, ``packable``, ``turn_id``); its
provenance is every turn of its source nodes; it is embedded when the backend has an ``embed``
function. Removing or rejecting one soft-deletes the row, which frees its canonical key. Every
write runs inside the backend's conversation-locked transaction, so two processes adding the same
canonical key get one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, or_, select

from deepcontext.dialogue.backend import NewKeyMemory
from deepcontext.dialogue.sqltx import Conversation, WriteTx
from deepcontext.dialogue.turnmap import TurnGraph
from deepcontext.dialogue.vocabulary import KeyMemory
from deepcontext.text import content_hash
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier, MemoryType

__all__ = ["KEY", "SOURCE", "add", "load", "remove", "set_status"]

#: memories.source of key memories
SOURCE = "dialogue"
#: memories.metadata key holding the Memory Graph fields
KEY = "key_memory"
_ACTOR = "dialogue"


def _mine(b: Conversation) -> tuple[Any, ...]:
    mt = b.t.memories
    return (mt.c.user_id == b.user_id, mt.c.conversation_id == b.conversation_id, mt.c.source == SOURCE)


def add(b: Conversation, tx: WriteTx, m: NewKeyMemory, *, embedding: Any = None) -> tuple[int, bool]:
    store, mt = b.store, b.t.memories
    conn, g, now = tx.conn, tx.g, tx.now
    turns = g.member_turns(m.source_nodes)
    if m.canonical_key:
        held = conn.execute(
            select(mt.c.id)
            .where(*_mine(b), mt.c.status == MemoryStatus.ACTIVE.value, mt.c.canonical_key == m.canonical_key)
            .order_by(mt.c.id)
            .limit(1)
        ).first()
        if held is not None:
            mid = int(held[0])
            added = store.writer.link_sources(conn, b.user_id, mid, turns)
            store.writer.history(
                conn, b.user_id, mid, HistoryEvent.NOOP, now, actor=_ACTOR, reason="same canonical key",
                details={"turn_ids": turns[:50], "new_sources": added},
            )  # fmt: skip
            return mid, False
    importance = 0.9 if m.pinned else 0.7
    row = {
        "text": m.content,
        "content_hash": content_hash(m.content),
        "memory_type": MemoryType.SEMANTIC.value,
        "tier": MemoryTier.LONG_TERM.value,
        "importance": importance,
        "confidence": 0.9,
        "said_at": now,
        "valid_from": now,
        "conversation_id": b.conversation_id,
        "source": SOURCE,
        "metadata": {KEY: {"status": m.status, "packable": m.packable, "turn_id": m.turn_id}},
        "pinned": m.pinned,
        "tags": list(m.tags),
        "canonical_key": m.canonical_key,
        "embedding": embedding,
    }
    mid = store.writer.insert(conn, b.user_id, [row], now=now, rev=tx.rev)[0]
    store.writer.link_sources(conn, b.user_id, mid, turns)
    store.writer.history(
        conn, b.user_id, mid, HistoryEvent.ADD, now, new_text=m.content, actor=_ACTOR, reason="key memory",
        details={"turn_ids": turns[:50]},
    )  # fmt: skip
    return mid, True


def load(b: Conversation, conn: Connection, g: TurnGraph, memory_ids: Sequence[int] | None) -> list[KeyMemory]:
    mt, ms = b.t.memories, b.t.memory_sources
    where = [
        *_mine(b),
        or_(mt.c.status == MemoryStatus.ACTIVE.value, mt.c.status == MemoryStatus.DELETED.value),
    ]
    if memory_ids is not None:
        ids = sorted({int(i) for i in memory_ids})
        if not ids:
            return []
        where.append(mt.c.id.in_(ids))
    rows = conn.execute(
        select(mt.c.id, mt.c.text, mt.c.status, mt.c.pinned, mt.c.tags, mt.c.canonical_key, mt.c.metadata)
        .where(*where)
        .order_by(mt.c.id)
    ).all()
    out: list[KeyMemory] = []
    for r in rows:
        km = (r.metadata or {}).get(KEY) or {}
        status = str(km.get("status", "candidate"))
        if km.get("removed") or (r.status != MemoryStatus.ACTIVE.value and status != "rejected"):
            continue
        out.append(
            KeyMemory(
                id=int(r.id),
                content=r.text,
                tags=set(r.tags or ()),
                pinned=bool(r.pinned),
                packable=bool(km.get("packable", True)),
                status=status,
                turn_id=int(km.get("turn_id", 0) or 0),
                canonical_key=r.canonical_key,
            )
        )
    if out:
        by_id = {m.id: m for m in out}
        for mid, tid in conn.execute(
            select(ms.c.memory_id, ms.c.turn_id).where(ms.c.user_id == b.user_id, ms.c.memory_id.in_(list(by_id)))
        ):
            n = g.node_of.get(int(tid))
            if n is not None:
                by_id[int(mid)].source_nodes.add(n)
    return out


def _soft_delete(b: Conversation, tx: WriteTx, row: Any, meta: dict[str, Any], reason: str) -> None:
    b.store.writer.soft_delete(
        tx.conn, b.user_id, [row], now=tx.now, rev=tx.rev, actor=_ACTOR, reason=reason, metadata=lambda _row: meta
    )


def set_status(b: Conversation, tx: WriteTx, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
    mt = b.t.memories
    conn, now = tx.conn, tx.now
    rows = conn.execute(
        select(mt.c.id, mt.c.text, mt.c.metadata).where(*_mine(b), mt.c.status == MemoryStatus.ACTIVE.value).order_by(mt.c.id)
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
            _soft_delete(b, tx, r, meta, "key memory rejected")
        else:
            b.store.writer.write_metadata(conn, b.user_id, int(r.id), meta, now=now, rev=tx.rev)
        changed.append(int(r.id))
    return changed


def remove(b: Conversation, tx: WriteTx, memory_id: int) -> bool:
    mt = b.t.memories
    conn, now = tx.conn, tx.now
    row = conn.execute(select(mt.c.id, mt.c.text, mt.c.status, mt.c.metadata).where(*_mine(b), mt.c.id == memory_id)).first()
    if row is None:
        return False
    meta = dict(row.metadata or {})
    km = dict(meta.get(KEY) or {})
    if km.get("removed"):
        return False
    km["removed"] = True
    meta[KEY] = km
    if row.status == MemoryStatus.ACTIVE.value:
        _soft_delete(b, tx, row, meta, "key memory removed")
    else:
        b.store.writer.write_metadata(conn, b.user_id, int(row.id), meta, now=now, rev=tx.rev)
    return True
