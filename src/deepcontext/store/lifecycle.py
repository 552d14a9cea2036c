"""The SQL of the memory lifecycle (decay, consolidation, cleanup), over :class:`SQLStore`'s tables.

Every function is one short transaction (or one read) through ``store.transaction()`` / ``store.connection()``.
Writes follow the store's rules: the user's ``version`` is bumped and every changed memory row is
stamped with it (``rev``), so the SQLite vector caches of every process see the change; history
entries are written in the same transaction. Conditions are re-checked inside each write (a memory
still active, unchanged since it was read), so work planned from an earlier read never overwrites
what another writer did meanwhile. No function waits on an LLM or an embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, bindparam, delete, exists, func, insert, literal, or_, select, update

from deepcontext.store.sqlparts import chunks
from deepcontext.types import HistoryEvent, MemoryStatus, MemoryTier

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

__all__ = [
    "CandidateRow",
    "DecayChange",
    "DecayRow",
    "FactWrite",
    "GroupWrite",
    "PurgeResult",
    "apply_decay",
    "consolidation_candidates",
    "count_short_term",
    "decay_rows",
    "purge",
    "set_consolidation_due",
    "soft_delete_faded",
    "speaker_entity_ids",
    "users_due",
    "write_consolidation",
    "write_consolidations",
]

ACTOR = "lifecycle"
_ACTIVE = MemoryStatus.ACTIVE.value


def _unexpired(store: SQLStore, now: datetime) -> Any:
    mt = store.t.memories
    return or_(mt.c.expires_at.is_(None), mt.c.expires_at > now)


# --- users -----------------------------------------------------------------------------------------


def count_short_term(store: SQLStore, user_id: str, now: datetime) -> int:
    """Active, unexpired short-term memories of the user (one count over the (user, status, tier) index)."""
    mt = store.t.memories
    with store.connection() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(mt)
                .where(
                    mt.c.user_id == user_id,
                    mt.c.status == _ACTIVE,
                    mt.c.tier == MemoryTier.SHORT_TERM.value,
                    _unexpired(store, now),
                )
            ).scalar_one()
        )


def set_consolidation_due(store: SQLStore, user_id: str, due: bool) -> None:
    """Set or clear ``users.consolidation_due`` (no memory changes: the version stays)."""
    u = store.t.users
    with store.transaction() as conn:
        conn.execute(update(u).where(u.c.user_id == user_id).values(consolidation_due=due))


def consolidation_flag(store: SQLStore, user_id: str) -> bool:
    u = store.t.users
    with store.connection() as conn:
        return bool(conn.execute(select(u.c.consolidation_due).where(u.c.user_id == user_id)).scalar())


def users_due(store: SQLStore) -> list[str]:
    """Users flagged for consolidation."""
    u = store.t.users
    with store.connection() as conn:
        return [r[0] for r in conn.execute(select(u.c.user_id).where(u.c.consolidation_due.is_(True)).order_by(u.c.user_id))]


def speaker_entity_ids(store: SQLStore, user_id: str) -> list[int]:
    """Entities naming the speakers of the user's conversations: the names of user and assistant
    turns, and the generic "User" and "Assistant" (what memories say when a speaker has no name)."""
    from deepcontext.text import entity_norm

    et = store.t.entities
    with store.connection() as conn:
        names = store.turns.speaker_names(conn, user_id)
    display = store.user_name(user_id)
    if display:
        names.add(display)
    with store.connection() as conn:
        norms = sorted({entity_norm(n) for n in names | {"User", "Assistant"}} - {""})
        return [int(r[0]) for r in conn.execute(select(et.c.id).where(et.c.user_id == user_id, et.c.norm_name.in_(norms)))]


# --- decay -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class DecayRow:
    id: int
    memory_type: str
    tier: str
    importance: float
    base_importance: float
    reinforced_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    mention_count: int


@dataclass(slots=True)
class DecayChange:
    id: int
    importance: float
    access_count: int  # as read: the write is skipped if an access happened meanwhile
    mention_count: int  # as read: the write is skipped if the memory was said again meanwhile
    deactivate: bool = False
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def decay_rows(store: SQLStore, user_id: str, now: datetime) -> list[DecayRow]:
    """The user's active, unpinned, unexpired memories with what the forgetting curve needs."""
    mt = store.t.memories
    with store.connection() as conn:
        rows = conn.execute(
            select(
                mt.c.id, mt.c.memory_type, mt.c.tier, mt.c.importance, mt.c.base_importance,
                mt.c.reinforced_at, mt.c.last_accessed_at, mt.c.access_count, mt.c.mention_count,
            )
            .where(mt.c.user_id == user_id, mt.c.status == _ACTIVE, mt.c.pinned.is_(False), _unexpired(store, now))
            .order_by(mt.c.id)
        ).all()
    return [
        DecayRow(
            id=int(r.id),
            memory_type=r.memory_type,
            tier=r.tier,
            importance=float(r.importance),
            base_importance=float(r.base_importance),
            reinforced_at=r.reinforced_at,
            last_accessed_at=r.last_accessed_at,
            access_count=int(r.access_count),
            mention_count=int(r.mention_count),
        )
        for r in rows
    ]


def apply_decay(store: SQLStore, user_id: str, changes: Sequence[DecayChange], now: datetime) -> list[int]:
    """Write new importances; deactivate (status ``decayed``, a DECAY history entry) the changes
    marked so. A row is skipped if it is no longer active or was accessed since it was read (the
    next run recomputes it). Returns the ids actually deactivated.

    A new importance alone is written like an access count (:meth:`SQLStore.bump_access`): without
    stamping ``rev``. Importance is not part of any vector cache, and on PostgreSQL a row update
    that touches no indexed column can stay in place (a HOT update) instead of re-inserting the row
    into every index, the HNSW one included (measured: 10,000 rows in 100 s with ``rev``). A
    deactivation changes the status: it bumps the user's version and stamps ``rev``."""
    if not changes:
        return []
    mt = store.t.memories
    deactivated: list[int] = []
    plain = [c for c in changes if not c.deactivate]
    gone = [c for c in changes if c.deactivate]
    if plain:
        # by primary key only: a condition on (user_id, status) lets PostgreSQL's planner pick the
        # (user_id, status, tier) index and scan all the user's rows for every row updated (with
        # fresh statistics it does not, but right after a bulk import it did: O(n^2)). Ids are never
        # reused on PostgreSQL; SQLite always looks rows up by rowid and may reuse the highest id of a
        # deleted row, so there the user is checked too. A row that became inactive since it was
        # read just gets an importance nobody reads.
        where = [
            mt.c.id == bindparam("b_id"),
            mt.c.access_count == bindparam("b_ac"),
            mt.c.mention_count == bindparam("b_mc"),
        ]
        if store.engine.dialect.name == "sqlite":
            where.append(mt.c.user_id == user_id)
        stmt = update(mt).where(*where).values(importance=bindparam("b_imp"))
        for chunk in chunks(plain, 1000):  # one short transaction per thousand rows
            with store.transaction() as conn:
                rows = [{"b_id": c.id, "b_ac": c.access_count, "b_mc": c.mention_count, "b_imp": c.importance} for c in chunk]
                conn.execute(stmt, rows)
    if not gone:
        return []
    with store.transaction() as conn:
        store.lock_user(conn, user_id)  # other writers of the user wait: the statuses read stay true
        current = _rows_by_id(conn, store, user_id, [c.id for c in gone], mt.c.status)
        live = [c for c in gone if c.id in current and current[c.id].status == _ACTIVE]
        if not live:
            return []
        rev = store.bump_user(conn, user_id, now)
        for c in live:
            res = conn.execute(
                update(mt)
                # an access or a re-mention meanwhile: skip (the next run recomputes it)
                .where(mt.c.id == c.id, mt.c.access_count == c.access_count, mt.c.mention_count == c.mention_count)
                .values(status=MemoryStatus.DECAYED.value, importance=c.importance, updated_at=now, rev=rev)
            )
            if res.rowcount:
                deactivated.append(c.id)
                store.writer.history(
                    conn, user_id, c.id, HistoryEvent.DECAY, now, actor=ACTOR, reason=c.reason, details=c.details
                )
    return deactivated


def _rows_by_id(conn: Connection, store: SQLStore, user_id: str, ids: Sequence[int], *cols: Any) -> dict[int, Any]:
    """Rows of these memories that belong to the user, looked up by primary key only (see apply_decay)."""
    mt = store.t.memories
    out: dict[int, Any] = {}
    for chunk in chunks(sorted(set(ids))):
        for r in conn.execute(select(mt.c.id, mt.c.user_id, *cols).where(mt.c.id.in_(list(chunk)))):
            if r.user_id == user_id:
                out[int(r.id)] = r
    return out


# --- consolidation -----------------------------------------------------------------------------------


@dataclass(slots=True)
class CandidateRow:
    """A short-term memory that may be consolidated, with what grouping and merging need."""

    id: int
    text: str
    memory_type: str
    importance: float
    base_importance: float
    confidence: float
    access_count: int
    said_at: datetime | None
    occurred_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime
    updated_at: datetime
    conversation_id: str | None
    metadata: dict[str, Any]
    embedding: np.ndarray | None
    entity_ids: list[int] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def when(self) -> datetime:
        """When it became true: valid_from, else said_at, else created_at."""
        return self.valid_from or self.said_at or self.created_at


def consolidation_candidates(store: SQLStore, user_id: str, now: datetime, limit: int) -> list[CandidateRow]:
    """Active, unpinned short-term memories without an expiry (an expiring memory must not live on
    inside a long-term one), oldest first, at most ``limit``."""
    mt, me, et = store.t.memories, store.t.memory_entities, store.t.entities
    with store.connection() as conn:
        rows = conn.execute(
            select(
                mt.c.id, mt.c.text, mt.c.memory_type, mt.c.importance, mt.c.base_importance, mt.c.confidence,
                mt.c.access_count, mt.c.said_at, mt.c.occurred_at, mt.c.valid_from, mt.c.valid_to, mt.c.created_at,
                mt.c.updated_at, mt.c.conversation_id, mt.c.metadata, mt.c.embedding, mt.c.agent_id, mt.c.run_id,
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


@dataclass(slots=True)
class FactWrite:
    """One long-term memory a consolidation writes: new (sources marked merged into it), or one
    source promoted in place (``promote``: its id; its text is unchanged)."""

    text: str
    content_hash: str
    memory_type: str
    source_ids: list[int]
    importance: float
    confidence: float
    access_count: int
    said_at: datetime | None
    occurred_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    conversation_id: str | None
    metadata: dict[str, Any]
    embedding: np.ndarray | None = None
    promote: int | None = None
    #: positions (in GroupWrite.facts) of the facts this one contradicts
    contradicts: list[int] = field(default_factory=list)
    #: the scope of its sources (a group never mixes scopes)
    agent_id: str | None = None
    run_id: str | None = None


@dataclass(slots=True)
class GroupWrite:
    """Everything one group's consolidation writes, decided before the transaction."""

    #: source id -> its updated_at when read (the write happens only if none changed)
    sources: dict[int, datetime]
    facts: list[FactWrite]
    method: str  # "llm" | "extractive"
    reason: str


def write_consolidation(store: SQLStore, user_id: str, group: GroupWrite, now: datetime) -> list[int] | None:
    """Write one group's consolidation in one transaction; the ids of its long-term memories (in
    the order of ``group.facts``), or None when a source changed since it was read (nothing written)."""
    return write_consolidations(store, user_id, [group], now)[0]


def write_consolidations(
    store: SQLStore, user_id: str, groups: Sequence[GroupWrite], now: datetime
) -> list[list[int] | None]:
    """Write the groups of one consolidation in one transaction (one per group cost ~2.7 ms each,
    27 ms for a typical run of 10 groups, all of it holding the database's write lock). Each
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
    rows = _rows_by_id(conn, store, user_id, sorted(group.sources), mt.c.status, mt.c.tier, mt.c.updated_at, mt.c.text)
    for sid, seen in group.sources.items():
        r = rows.get(sid)
        if r is None or r.status != _ACTIVE or r.tier != MemoryTier.SHORT_TERM.value or r.updated_at != seen:
            return None
    return {sid: rows[sid].text for sid in group.sources}


def _write_group(
    conn: Connection, store: SQLStore, user_id: str, group: GroupWrite, now: datetime, rev: int, old_texts: dict[int, str]
) -> list[int]:
    t = store.t
    mt = t.memories
    fact_ids: list[int] = []
    for f in group.facts:
        if f.promote is not None:
            conn.execute(
                update(mt)
                .where(mt.c.id == f.promote)
                .values(
                    tier=MemoryTier.LONG_TERM.value,
                    importance=f.importance,
                    base_importance=f.importance,
                    reinforced_at=now,
                    valid_to=f.valid_to,
                    updated_at=now,
                    rev=rev,
                )
            )
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
                conn, user_id, fid, HistoryEvent.MERGE, now,
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
    if merged_into:
        conn.execute(
            update(mt)
            .where(mt.c.id == bindparam("b_id"))
            .values(status=MemoryStatus.MERGED.value, superseded_by=bindparam("b_into"), updated_at=now, rev=rev),
            [{"b_id": sid, "b_into": fid} for sid, fid in merged_into.items()],
        )
        texts = {fid: f.text for f, fid in zip(group.facts, fact_ids, strict=True)}
        for sid, fid in merged_into.items():
            store.writer.history(
                conn, user_id, sid, HistoryEvent.MERGE, now,
                old_text=old_texts[sid], new_text=texts[fid], actor=ACTOR,
                reason=f"merged into long-term memory {fid}", details={"merged_into": fid, "method": group.method},
            )  # fmt: skip
    return fact_ids


def _insert_fact(store: SQLStore, conn: Connection, user_id: str, f: FactWrite, now: datetime, rev: int) -> int:
    t = store.t
    mt, ms, me, ml = t.memories, t.memory_sources, t.memory_entities, t.memory_links
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


# --- cleanup -----------------------------------------------------------------------------------------


def soft_delete_faded(store: SQLStore, user_id: str, threshold: float, now: datetime) -> list[int]:
    """Soft-delete (status ``deleted``, a DELETE history entry) the user's unpinned working and
    short-term memories, active or decayed, whose importance is under ``threshold``."""
    mt = store.t.memories
    where = (
        mt.c.user_id == user_id,
        mt.c.tier.in_([MemoryTier.WORKING.value, MemoryTier.SHORT_TERM.value]),
        mt.c.status.in_([_ACTIVE, MemoryStatus.DECAYED.value]),
        mt.c.importance < threshold,
        mt.c.pinned.is_(False),
    )
    with store.connection() as conn:
        if conn.execute(select(mt.c.id).where(*where).limit(1)).first() is None:
            return []
    with store.transaction() as conn:
        store.lock_user(conn, user_id)
        rows = conn.execute(select(mt.c.id, mt.c.text, mt.c.importance, mt.c.status).where(*where).order_by(mt.c.id)).all()
        if not rows:
            return []
        rev = store.bump_user(conn, user_id, now)
        ids = [int(r.id) for r in rows]
        for chunk in chunks(ids):
            conn.execute(
                update(mt)
                .where(mt.c.id.in_(list(chunk)))
                .values(
                    status=MemoryStatus.DELETED.value,
                    deleted_at=now,
                    valid_to=func.coalesce(mt.c.valid_to, literal(now, type_=mt.c.valid_to.type)),
                    updated_at=now,
                    rev=rev,
                )
            )
        conn.execute(
            insert(store.t.memory_history),
            [
                {
                    "user_id": user_id,
                    "memory_id": int(r.id),
                    "event": HistoryEvent.DELETE.value,
                    "old_text": r.text,
                    "new_text": None,
                    "actor": ACTOR,
                    "reason": f"faded: importance {r.importance:.4f} under {threshold:g}",
                    "created_at": now,
                    "details": {"importance": float(r.importance), "was": r.status},
                }
                for r in rows
            ],
        )
    return ids


@dataclass(slots=True)
class PurgeResult:
    """What a purge removed."""

    deleted: list[int] = field(default_factory=list)  # soft-deleted past the retention period
    expired: list[int] = field(default_factory=list)  # expires_at passed
    predecessors: list[int] = field(default_factory=list)  # merged / superseded into a purged memory
    entities: int = 0  # entities left without any memory or relation

    @property
    def memory_ids(self) -> list[int]:
        return self.deleted + self.expired + self.predecessors


def purge(store: SQLStore, user_id: str, *, deleted_before: datetime, expired_before: datetime, now: datetime) -> PurgeResult:
    """Remove for good, from every table and index: memories soft-deleted before ``deleted_before``,
    memories that expired before ``expired_before``, and the inactive versions merged or superseded
    into those (their history). References from surviving memories (``superseded_by``,
    ``consolidated_from``) are cleared, entities left with no memory and no relation go too, and the
    user's version is bumped (the in-process vector cache of the user is dropped)."""
    t = store.t
    mt = t.memories
    doomed_where = or_(
        (mt.c.status == MemoryStatus.DELETED.value) & (mt.c.deleted_at < deleted_before),
        mt.c.expires_at < expired_before,
    )
    with store.connection() as conn:
        if conn.execute(select(mt.c.id).where(mt.c.user_id == user_id, doomed_where).limit(1)).first() is None:
            return PurgeResult()
    result = PurgeResult()
    with store.transaction() as conn:
        store.lock_user(conn, user_id)
        for r in conn.execute(
            select(mt.c.id, mt.c.status, mt.c.deleted_at, mt.c.expires_at).where(mt.c.user_id == user_id, doomed_where)
        ):
            if r.expires_at is not None and r.expires_at < expired_before:
                result.expired.append(int(r.id))
            else:
                result.deleted.append(int(r.id))
        doomed = set(result.deleted) | set(result.expired)
        frontier = set(doomed)
        while frontier:
            found: set[int] = set()
            for chunk in chunks(sorted(frontier)):
                found |= {
                    int(r[0])
                    for r in conn.execute(
                        select(mt.c.id).where(
                            mt.c.user_id == user_id,
                            mt.c.superseded_by.in_(list(chunk)),
                            mt.c.status.in_([MemoryStatus.MERGED.value, MemoryStatus.SUPERSEDED.value]),
                        )
                    )
                }
            frontier = found - doomed
            result.predecessors.extend(sorted(frontier))
            doomed |= frontier
        if not doomed:
            return result
        ids = sorted(doomed)
        rev = store.bump_user(conn, user_id, now)
        # survivors that point at a purged memory
        successors: set[int] = set()
        for chunk in chunks(ids):
            successors |= {
                int(r[0])
                for r in conn.execute(
                    select(mt.c.superseded_by).where(mt.c.id.in_(list(chunk)), mt.c.superseded_by.is_not(None))
                )
            }
        successors -= doomed
        for chunk in chunks(sorted(successors)):
            for sid, cf in conn.execute(select(mt.c.id, mt.c.consolidated_from).where(mt.c.id.in_(list(chunk)))):
                before = list(cf or [])
                after = [i for i in before if i not in doomed]
                if after != before:
                    conn.execute(update(mt).where(mt.c.id == sid).values(consolidated_from=after, rev=rev))
        pointing: set[int] = set()
        for chunk in chunks(ids):
            pointing |= {
                int(r[0])
                for r in conn.execute(
                    select(mt.c.id).where(mt.c.user_id == user_id, mt.c.superseded_by.in_(list(chunk)))
                )
            }
        for chunk in chunks(sorted(pointing - doomed)):  # (rows being purged are not touched)
            conn.execute(update(mt).where(mt.c.id.in_(list(chunk))).values(superseded_by=None, rev=rev))
        me, ms, ml, mh, et, rt = (
            t.memory_entities, t.memory_sources, t.memory_links, t.memory_history, t.entities, t.relations,
        )  # fmt: skip
        touched_entities: set[int] = set()
        for chunk in chunks(ids):
            c = list(chunk)
            touched_entities |= {int(r[0]) for r in conn.execute(select(me.c.entity_id).where(me.c.memory_id.in_(c)))}
            store.unindex(conn, c)
            conn.execute(delete(ml).where(or_(ml.c.memory_id.in_(c), ml.c.other_id.in_(c))))
            conn.execute(delete(me).where(me.c.memory_id.in_(c)))
            conn.execute(delete(ms).where(ms.c.memory_id.in_(c)))
            conn.execute(delete(mh).where(mh.c.user_id == user_id, mh.c.memory_id.in_(c)))
            conn.execute(delete(mt).where(mt.c.user_id == user_id, mt.c.id.in_(c)))
        for chunk in chunks(sorted(touched_entities)):
            res = conn.execute(
                delete(et).where(
                    et.c.user_id == user_id,
                    et.c.id.in_(list(chunk)),
                    ~exists().where(me.c.entity_id == et.c.id),
                    ~exists().where(or_(rt.c.source_id == et.c.id, rt.c.target_id == et.c.id)),
                )
            )
            result.entities += int(res.rowcount or 0)
    store.forget_user_caches(user_id)
    return result
