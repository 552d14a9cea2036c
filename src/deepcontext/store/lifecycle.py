"""The SQL of the memory lifecycle (decay, consolidation, cleanup), over :class:`SQLStore`'s tables;
consolidation's own statements are in :mod:`deepcontext.store.consolidation` and exported here too.

Every function is one short transaction (or one read) through ``store.transaction()`` / ``store.connection()``.
Writes follow the store's rules: the user's ``version`` is bumped and every changed memory row is
stamped with it (``rev``), so the SQLite vector caches of every process see the change; history
entries are written in the same transaction. Conditions are re-checked inside each write (a memory
still active, unchanged since it was read), so work planned from an earlier read never overwrites
what another writer did meanwhile. No function waits on an LLM or an embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, exists, func, or_, select, update

from deepcontext.store.consolidation import (
    ACTOR,
    CandidateRow,
    FactWrite,
    GroupWrite,
    consolidation_candidates,
    rows_by_id,
    unexpired,
    write_consolidation,
    write_consolidations,
)
from deepcontext.store.records import DecayChange, DecayRow, PurgeResult
from deepcontext.store.sqlparts import chunks
from deepcontext.types import MemoryStatus, MemoryTier

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

_ACTIVE = MemoryStatus.ACTIVE.value

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
                    unexpired(store, now),
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


def decay_rows(store: SQLStore, user_id: str, now: datetime) -> list[DecayRow]:
    """The user's active, unpinned, unexpired memories with what the forgetting curve needs."""
    mt = store.t.memories
    with store.connection() as conn:
        rows = conn.execute(
            select(
                mt.c.id,
                mt.c.memory_type,
                mt.c.tier,
                mt.c.importance,
                mt.c.base_importance,
                mt.c.reinforced_at,
                mt.c.last_accessed_at,
                mt.c.access_count,
                mt.c.mention_count,
            )
            .where(mt.c.user_id == user_id, mt.c.status == _ACTIVE, mt.c.pinned.is_(False), unexpired(store, now))
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
    into every index, the HNSW one included. A
    deactivation changes the status: it bumps the user's version and stamps ``rev``."""
    if not changes:
        return []
    mt = store.t.memories
    deactivated: list[int] = []
    plain = [c for c in changes if not c.deactivate]
    gone = [c for c in changes if c.deactivate]
    if plain:
        for chunk in chunks(plain, 1000):  # one short transaction per thousand rows
            with store.transaction() as conn:
                store.writer.set_importances(
                    conn, user_id, [(c.id, c.access_count, c.mention_count, c.importance) for c in chunk]
                )
    if not gone:
        return []
    with store.transaction() as conn:
        store.lock_user(conn, user_id)  # other writers of the user wait: the statuses read stay true
        current = rows_by_id(conn, store, user_id, [c.id for c in gone], mt.c.status)
        live = [c for c in gone if c.id in current and current[c.id].status == _ACTIVE]
        if not live:
            return []
        rev = store.bump_user(conn, user_id, now)
        for c in live:
            # an access or a re-mention meanwhile: skipped (the next run recomputes it)
            if store.writer.decay(
                conn, user_id, c.id, importance=c.importance, seen=(c.access_count, c.mention_count), now=now, rev=rev,
                actor=ACTOR, reason=c.reason, details=c.details,
            ):  # fmt: skip
                deactivated.append(c.id)
    return deactivated


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
        store.writer.soft_delete(
            conn, user_id, rows, now=now, rev=rev, actor=ACTOR, keep_valid_to=True,
            reason=lambda r: f"faded: importance {r.importance:.4f} under {threshold:g}",
            details=lambda r: {"importance": float(r.importance), "was": r.status},
        )  # fmt: skip
        ids = [int(r.id) for r in rows]
    return ids


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
                for r in conn.execute(select(mt.c.superseded_by).where(mt.c.id.in_(list(chunk)), mt.c.superseded_by.is_not(None)))
            }
        successors -= doomed
        for chunk in chunks(sorted(successors)):
            for sid, cf in conn.execute(select(mt.c.id, mt.c.consolidated_from).where(mt.c.id.in_(list(chunk)))):
                before = list(cf or [])
                after = [i for i in before if i not in doomed]
                if after != before:
                    store.writer.relink(conn, user_id, int(sid), consolidated_from=after, rev=rev)
        pointing: set[int] = set()
        for chunk in chunks(ids):
            pointing |= {
                int(r[0])
                for r in conn.execute(select(mt.c.id).where(mt.c.user_id == user_id, mt.c.superseded_by.in_(list(chunk))))
            }
        store.writer.unlink_successors(conn, user_id, sorted(pointing - doomed), rev=rev)  # (rows being purged are not touched)
        me, et, rt = t.memory_entities, t.entities, t.relations
        touched_entities: set[int] = set()
        for chunk in chunks(ids):
            touched_entities |= {int(r[0]) for r in conn.execute(select(me.c.entity_id).where(me.c.memory_id.in_(list(chunk))))}
        store.writer.purge_rows(conn, user_id, ids)
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
