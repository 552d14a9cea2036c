"""The SQL of consolidation: the short-term memories it may merge, and the writes of its groups
(new long-term facts, or sources promoted in place; the sources marked merged into them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, insert, literal, or_, select

from deepcontext.store.records import CandidateRow, FactWrite, GroupWrite
from deepcontext.store.sqlparts import chunks
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

__all__ = [
    "ACTOR",
    "CandidateRow",
    "FactWrite",
    "GroupWrite",
    "consolidation_candidates",
    "rows_by_id",
    "unexpired",
    "write_consolidation",
    "write_consolidations",
]

ACTOR = "lifecycle"
_ACTIVE = MemoryStatus.ACTIVE.value


def unexpired(store: SQLStore, now: datetime) -> Any:
    mt = store.t.memories
    return or_(mt.c.expires_at.is_(None), mt.c.expires_at > now)


def rows_by_id(conn: Connection, store: SQLStore, user_id: str, ids: Sequence[int], *cols: Any) -> dict[int, Any]:
    """Rows of these memories that belong to the user, looked up by primary key only (see apply_decay)."""
    mt = store.t.memories
    out: dict[int, Any] = {}
    for chunk in chunks(sorted(set(ids))):
        for r in conn.execute(select(mt.c.id, mt.c.user_id, *cols).where(mt.c.id.in_(list(chunk)))):
            if r.user_id == user_id:
                out[int(r.id)] = r
    return out


# --- consolidation -----------------------------------------------------------------------------------


def consolidation_candidates(store: SQLStore, user_id: str, now: datetime, limit: int) -> list[CandidateRow]:
    """Active, unpinned short-term memories without an expiry (an expiring memory must not live on
    inside a long-term one), oldest first, at most ``limit``."""
    mt, me, et = store.t.memories, store.t.memory_entities, store.t.entities
    with store.connection() as conn:
        rows = conn.execute(
            select(
                mt.c.id,
                mt.c.text,
                mt.c.memory_type,
                mt.c.importance,
                mt.c.base_importance,
                mt.c.confidence,
                mt.c.access_count,
                mt.c.said_at,
                mt.c.occurred_at,
                mt.c.valid_from,
                mt.c.valid_to,
                mt.c.created_at,
                mt.c.updated_at,
                mt.c.conversation_id,
                mt.c.metadata,
                mt.c.embedding,
                mt.c.agent_id,
                mt.c.run_id,
            )
            .where(
                mt.c.user_id == user_id,
                mt.c.status == _ACTIVE,
                mt.c.tier == MemoryTier.SHORT_TERM.value,
                mt.c.pinned.is_(False),
                mt.c.expires_at.is_(None),
            )
            .order_by(mt.c.id)
            .limit(limit)
        ).all()
        out = {
            int(r.id): CandidateRow(
                id=int(r.id),
                text=r.text,
                memory_type=r.memory_type,
                importance=float(r.importance),
                base_importance=float(r.base_importance),
                confidence=float(r.confidence),
                access_count=int(r.access_count),
                said_at=r.said_at,
                occurred_at=r.occurred_at,
                valid_from=r.valid_from,
                valid_to=r.valid_to,
                created_at=r.created_at,
                updated_at=r.updated_at,
                conversation_id=r.conversation_id,
                metadata=dict(r.metadata or {}),
                embedding=r.embedding,
                agent_id=r.agent_id,
                run_id=r.run_id,
            )
            for r in rows
        }
        for chunk in chunks(list(out)):
            for mid, eid, name in conn.execute(
                select(me.c.memory_id, me.c.entity_id, et.c.name)
                .join(et, et.c.id == me.c.entity_id)
                .where(me.c.user_id == user_id, me.c.memory_id.in_(list(chunk)))
                .order_by(me.c.memory_id, me.c.entity_id)
            ):
                out[int(mid)].entity_ids.append(int(eid))
                out[int(mid)].entity_names.append(name)
    return list(out.values())


def write_consolidation(store: SQLStore, user_id: str, group: GroupWrite, now: datetime) -> list[int] | None:
    """Write one group's consolidation in one transaction; the ids of its long-term memories (in
    the order of ``group.facts``), or None when a source changed since it was read (nothing written)."""
    return write_consolidations(store, user_id, [group], now)[0]


def write_consolidations(store: SQLStore, user_id: str, groups: Sequence[GroupWrite], now: datetime) -> list[list[int] | None]:
    """Write the groups of one consolidation in one transaction (not one per group: each would hold
    the database's write lock again). Each
    group is checked on its own: a group whose sources changed since they were read is skipped
    (None in its place) and the others are written. Per group: the ids of its long-term memories,
    in the order of its facts."""
    out: list[list[int] | None] = []
    if not groups:
        return out
    with store.transaction() as conn:
        store.lock_user(conn, user_id)
        rev: int | None = None
        for group in groups:
            old_texts = _unchanged_sources(conn, store, user_id, group)
            if old_texts is None:
                out.append(None)
                continue
            if rev is None:
                rev = store.bump_user(conn, user_id, now)
            out.append(_write_group(conn, store, user_id, group, now, rev, old_texts))
    return out


def _unchanged_sources(conn: Connection, store: SQLStore, user_id: str, group: GroupWrite) -> dict[int, str] | None:
    """The texts of the group's sources, or None when one changed since it was read."""
    mt = store.t.memories
    rows = rows_by_id(conn, store, user_id, sorted(group.sources), mt.c.status, mt.c.tier, mt.c.updated_at, mt.c.text)
    for sid, seen in group.sources.items():
        r = rows.get(sid)
        if r is None or r.status != _ACTIVE or r.tier != MemoryTier.SHORT_TERM.value or r.updated_at != seen:
            return None
    return {sid: rows[sid].text for sid in group.sources}


def _write_group(
    conn: Connection, store: SQLStore, user_id: str, group: GroupWrite, now: datetime, rev: int, old_texts: dict[int, str]
) -> list[int]:
    fact_ids: list[int] = []
    for f in group.facts:
        if f.promote is not None:
            store.writer.promote(conn, user_id, f.promote, importance=f.importance, valid_to=f.valid_to, now=now, rev=rev)
            fact_ids.append(f.promote)
            continue
        fid = _insert_fact(store, conn, user_id, f, now, rev)
        fact_ids.append(fid)
    merged_into: dict[int, int] = {}
    promoted = {f.promote for f in group.facts if f.promote is not None}
    for f, fid in zip(group.facts, fact_ids, strict=True):
        details: dict[str, Any] = {"method": group.method, "consolidated_from": list(f.source_ids)}
        if f.contradicts:
            details["contradicts"] = [fact_ids[i] for i in f.contradicts]
        if f.promote is not None:
            details["promoted"] = True
            store.writer.history(
                conn, user_id, fid, HistoryEvent.PROMOTE, now,
                old_text=f.text, new_text=f.text, actor=ACTOR,
                reason=f"{group.reason}; kept as a long-term memory of its own", details=details,
            )  # fmt: skip
            continue
        store.writer.history(
            conn, user_id, fid, HistoryEvent.MERGE, now, new_text=f.text, actor=ACTOR, reason=group.reason, details=details
        )
        for sid in f.source_ids:
            if sid not in promoted:
                merged_into.setdefault(sid, fid)
    store.writer.merge(
        conn, user_id, merged_into, old_texts=old_texts,
        new_texts={fid: f.text for f, fid in zip(group.facts, fact_ids, strict=True)}, now=now, rev=rev, actor=ACTOR,
        method=group.method,
    )  # fmt: skip
    return fact_ids


def _insert_fact(store: SQLStore, conn: Connection, user_id: str, f: FactWrite, now: datetime, rev: int) -> int:
    t = store.t
    ms, me, ml = t.memory_sources, t.memory_entities, t.memory_links
    row = {
        "text": f.text,
        "content_hash": f.content_hash,
        "memory_type": f.memory_type,
        "tier": MemoryTier.LONG_TERM.value,
        "importance": f.importance,
        "confidence": f.confidence,
        "access_count": f.access_count,
        "said_at": f.said_at,
        "occurred_at": f.occurred_at,
        "valid_from": f.valid_from,
        "valid_to": f.valid_to,
        "conversation_id": f.conversation_id,
        "agent_id": f.agent_id,
        "run_id": f.run_id,
        "source": "consolidation",
        "consolidated_from": list(f.source_ids),
        "metadata": f.metadata,
        "embedding": f.embedding,
    }
    fid = store.writer.insert(conn, user_id, [row], now=now, rev=rev)[0]
    src = list(f.source_ids)
    # provenance: the union of the sources' turns; entities: the union of theirs
    conn.execute(
        insert(ms).from_select(
            ["memory_id", "turn_id", "user_id"],
            select(literal(fid), ms.c.turn_id, literal(user_id))
            .where(ms.c.user_id == user_id, ms.c.memory_id.in_(src))
            .group_by(ms.c.turn_id),
        )
    )
    conn.execute(
        insert(me).from_select(
            ["memory_id", "entity_id", "user_id"],
            select(literal(fid), me.c.entity_id, literal(user_id))
            .where(me.c.user_id == user_id, me.c.memory_id.in_(src))
            .group_by(me.c.entity_id),
        )
    )
    # connections: the sources' links to memories outside the group, best similarity kept
    links = conn.execute(
        select(ml.c.other_id, func.max(ml.c.similarity))
        .where(ml.c.user_id == user_id, ml.c.memory_id.in_(src), ml.c.other_id.not_in(src))
        .group_by(ml.c.other_id)
    ).all()
    if links:
        rows = [{"memory_id": fid, "other_id": int(o), "user_id": user_id, "similarity": float(s)} for o, s in links]
        rows += [{"memory_id": int(o), "other_id": fid, "user_id": user_id, "similarity": float(s)} for o, s in links]
        store.writer.insert_links(conn, user_id, rows)
    return fid
