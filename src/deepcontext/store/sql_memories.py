"""Reads of memories: by id, pages, versions, history, counts, rank fields."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from sqlalchemy import Connection, Engine, and_, bindparam, func, or_, select
from sqlalchemy.sql import column as sql_column
from sqlalchemy.sql import table as sql_table

from deepcontext.errors import MemoryNotFoundError
from deepcontext.ids import SEPARATOR
from deepcontext.store.interface import MemoryFilters, RankFields
from deepcontext.store.migrations import SLOT_KEY_PREFIX
from deepcontext.store.repository import Lookups
from deepcontext.store.sqlparts import chunks, decode_cursor, encode_cursor
from deepcontext.types import HistoryEntry, HistoryEvent, Memory, MemoryStatus, MemoryTier, MemoryType

if TYPE_CHECKING:
    from deepcontext.store.sql_graph import GraphReads
    from deepcontext.store.sql_provenance import ProvenanceReads

__all__ = ["MemoryReads", "rank_rows"]


class MemoryReadsContext(Lookups, Protocol):
    """What :class:`MemoryReads` uses of its store: lookups, the engine (for its dialect) and the
    graph and provenance reads whose rows it joins."""

    @property
    def engine(self) -> Engine: ...

    @property
    def graph(self) -> GraphReads: ...

    @property
    def provenance(self) -> ProvenanceReads: ...


class MemoryReads:
    """Reads of a store's memories."""

    def __init__(self, store: MemoryReadsContext) -> None:
        self.s = store
        #: per user: ((user, incarnation, version), active memories) - see active_memory_count
        self._count_cache: dict[str, tuple[tuple[str, str, int], int]] = {}

    def memory_from_row(self, r: Any) -> Memory:
        # rows come from our own schema: construct without re-validating (hot path of search)
        return Memory.model_construct(
            id=r.id,
            user_id=r.user_id,
            text=r.text,
            memory_type=MemoryType(r.memory_type),
            tier=MemoryTier(r.tier),
            status=MemoryStatus(r.status),
            importance=r.importance,
            confidence=r.confidence,
            access_count=r.access_count,
            mention_count=r.mention_count,
            last_accessed_at=r.last_accessed_at,
            created_at=r.created_at,
            updated_at=r.updated_at,
            said_at=r.said_at,
            occurred_at=r.occurred_at,
            valid_from=r.valid_from,
            valid_to=r.valid_to,
            expires_at=r.expires_at,
            superseded_by=r.superseded_by,
            conversation_id=r.conversation_id,
            source=r.source,
            consolidated_from=list(r.consolidated_from or []),
            metadata=dict(r.metadata or {}),
            pinned=bool(r.pinned),
            tags=list(r.tags or []),
            agent_id=r.agent_id,
            run_id=r.run_id,
            entities=[],
            sources=[],
        )

    def memory_columns(self) -> list[Any]:
        return [c for c in self.s.t.memories.c if c.name != "embedding"]

    def get_memories(
        self, user_id: str, memory_ids: Sequence[int], *, details: bool = True, max_sources: int | None = None
    ) -> list[Memory]:
        ids = list(dict.fromkeys(int(i) for i in memory_ids))
        if not ids:
            return []
        with self.s.connection() as conn:
            by_id = self.read_memories(conn, user_id, ids)
            if details and by_id:
                found = list(by_id)
                ents = self.s.graph.entities_of(conn, user_id, found)
                srcs = self.s.provenance.sources_of(conn, user_id, found, max_sources)
                for mid, mem in by_id.items():
                    mem.entities = ents.get(mid, [])
                    mem.sources = srcs.get(mid, [])
        return [by_id[i] for i in ids if i in by_id]

    def read_memories(self, conn: Connection, user_id: str, ids: list[int]) -> dict[int, Memory]:
        """The user's memories among ``ids`` (without entities and sources), by id."""
        mt = self.s.t.memories
        by_id: dict[int, Memory] = {}
        for chunk in chunks(ids):
            for r in conn.execute(
                select(*self.memory_columns()).where(self.s.owner_clause(mt.c.user_id) == user_id, self.s.ids_in(mt.c.id, chunk))
            ):
                by_id[r.id] = self.memory_from_row(r)
        return by_id

    def list_memories(
        self,
        user_id: str,
        filters: MemoryFilters,
        *,
        limit: int,
        cursor: str | None,
        now: datetime,
    ) -> tuple[list[Memory], int, str | None]:
        mt = self.s.t.memories
        where = [mt.c.user_id == user_id, *self.s.filter_clause(filters, now)]
        after_id = decode_cursor(cursor) if cursor else None
        with self.s.connection() as conn:
            total = int(conn.execute(select(func.count()).select_from(mt).where(*where)).scalar_one())
            page_where = list(where)
            if after_id is not None:
                page_where.append(mt.c.id < after_id)
            ids = [r[0] for r in conn.execute(select(mt.c.id).where(and_(*page_where)).order_by(mt.c.id.desc()).limit(limit + 1))]
        more = len(ids) > limit
        ids = ids[:limit]
        memories = self.get_memories(user_id, ids)
        return memories, total, (encode_cursor(ids[-1]) if more and ids else None)

    def superseded_versions(
        self, user_id: str, memory_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, int]]:
        if not memory_ids:
            return []
        mt, ms = self.s.t.memories, self.s.t.memory_sources
        newer, here = ms.alias("newer"), ms.alias("here")
        stmt = (
            select(mt.c.id, here.c.memory_id)
            .join(newer, and_(newer.c.memory_id == mt.c.superseded_by, newer.c.user_id == user_id))
            .join(here, and_(here.c.turn_id == newer.c.turn_id, here.c.user_id == user_id))
            .where(
                mt.c.user_id == user_id,
                *self.s.filter_clause(replace(filters, statuses=(MemoryStatus.SUPERSEDED,)), now),
                here.c.memory_id.in_(list(dict.fromkeys(memory_ids))),
            )
            .order_by(mt.c.id.desc())
        )
        with self.s.connection() as conn:
            pairs = [(int(a), int(b)) for a, b in conn.execute(stmt)]
        first: dict[int, int] = {}
        for old, new in pairs:
            first.setdefault(old, new)
        return list(first.items())

    def find_active_by_metadata_keys(
        self,
        user_id: str,
        keys: Sequence[str],
        now: datetime,
        *,
        limit: int = 50,
        scope: tuple[str | None, str | None] | None = None,
    ) -> list[Memory]:
        if not keys:
            return []
        mt = self.s.t.memories
        filters = MemoryFilters(tiers=(MemoryTier.SHORT_TERM, MemoryTier.LONG_TERM))
        keys = list(dict.fromkeys(keys))
        where = [
            mt.c.user_id == user_id,
            *self.s.filter_clause(filters, now),
            *(self.s.scope_clause(scope) if scope is not None else []),
        ]
        if all(k.startswith(SLOT_KEY_PREFIX) for k in keys):
            # indexed (memory_slots, migration 6): walk the keys' rows newest first instead of every
            # memory's JSON; a memory holding several of the keys comes once per key
            stmt = (
                select(_SLOTS.c.memory_id)
                .join(mt, and_(mt.c.id == _SLOTS.c.memory_id, mt.c.user_id == _SLOTS.c.user_id))
                .where(_SLOTS.c.user_id == user_id, _SLOTS.c.slot_key.in_(keys), *where)
                .order_by(_SLOTS.c.memory_id.desc())
                .limit(limit * len(keys))
            )
        else:
            has_key = or_(*(mt.c.metadata[k].as_string().isnot(None) for k in keys))
            stmt = select(mt.c.id).where(*where, has_key).order_by(mt.c.id.desc()).limit(limit)
        with self.s.connection() as conn:
            ids = list(dict.fromkeys(int(r[0]) for r in conn.execute(stmt)))[:limit]
        return self.get_memories(user_id, ids, details=False) if ids else []

    def history(self, user_id: str, memory_id: int) -> list[HistoryEntry]:
        h = self.s.t.memory_history
        mt = self.s.t.memories
        with self.s.connection() as conn:
            if (
                conn.execute(select(mt.c.id).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id == memory_id)).first()
                is None
            ):
                raise MemoryNotFoundError(memory_id, user_id)
            rows = conn.execute(select(h).where(h.c.user_id == user_id, h.c.memory_id == memory_id).order_by(h.c.id)).all()
        return [
            HistoryEntry(
                id=r.id,
                memory_id=r.memory_id,
                event=HistoryEvent(r.event),
                old_text=r.old_text,
                new_text=r.new_text,
                actor=r.actor,
                reason=r.reason,
                created_at=r.created_at,
                details=dict(r.details or {}),
            )
            for r in rows
        ]

    def user_state(self, conn: Connection, user_id: str) -> tuple[str, int] | None:
        """The user's (incarnation, version): changes with every write of the user's memories (None
        for an unknown user)."""
        u = self.s.t.users
        row = conn.execute(select(u.c.incarnation, u.c.version).where(u.c.user_id == user_id)).first()
        return None if row is None else (row[0], int(row[1]))

    def active_memory_count(self, user_id: str) -> int:
        """Active memories of the user (cached per user version: one indexed lookup when unchanged)."""
        mt = self.s.t.memories
        with self.s.connection() as conn:
            state = self.user_state(conn, user_id)
            if state is None:
                return 0
            key = (user_id, *state)
            cached = self._count_cache.get(user_id)
            if cached is not None and cached[0] == key:
                return cached[1]
            n = int(
                conn.execute(
                    select(func.count()).select_from(mt).where(mt.c.user_id == user_id, mt.c.status == MemoryStatus.ACTIVE.value)
                ).scalar_one()
            )
        self._count_cache[user_id] = (key, n)
        return n

    def list_users(self, tenant: str | None = None, *, after: str | None = None, limit: int | None = None) -> list[str]:
        ut = self.s.t.users
        # byte order on both backends, so a tenant's ids are one range of the index whatever the
        # database's collation (PostgreSQL: ix_users_user_c)
        uid = ut.c.user_id.collate("C") if self.s.engine.dialect.name == "postgresql" else ut.c.user_id
        q = select(ut.c.user_id)
        if tenant is not None:
            # the separator is followed by "0" in byte order: [tenant/, tenant0) is the tenant's users
            q = q.where(uid >= f"{tenant}{SEPARATOR}", uid < f"{tenant}{chr(ord(SEPARATOR) + 1)}")
        if after is not None:
            q = q.where(uid > after)
        q = q.order_by(uid)
        if limit is not None:
            q = q.limit(limit)
        with self.s.connection() as conn:
            return [r[0] for r in conn.execute(q)]

    def count_rows(self, user_id: str) -> dict[str, int]:
        with self.s.connection() as conn:
            return {
                table.name: int(
                    conn.execute(select(func.count()).select_from(table).where(table.c.user_id == user_id)).scalar_one()
                )
                for table in self.s.t.user_tables
            }

    def iter_memories(self, user_id: str, *, batch: int = 500) -> Iterator[Memory]:
        mt = self.s.t.memories
        last = 0
        while True:
            with self.s.connection() as conn:
                ids = [
                    r[0]
                    for r in conn.execute(
                        select(mt.c.id).where(mt.c.user_id == user_id, mt.c.id > last).order_by(mt.c.id).limit(batch)
                    )
                ]
            if not ids:
                return
            yield from self.get_memories(user_id, ids)
            last = ids[-1]

    def embeddings(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """Stored vectors of these memories (export, consolidation)."""
        mt = self.s.t.memories
        out: dict[int, np.ndarray] = {}
        with self.s.connection() as conn:
            for chunk in chunks(list(memory_ids)):
                for mid, emb in conn.execute(
                    select(mt.c.id, mt.c.embedding).where(self.s.owner_clause(mt.c.user_id) == user_id, mt.c.id.in_(list(chunk)))
                ):
                    if emb is not None:
                        out[int(mid)] = emb
        return out

    def rank_fields(self, user_id: str, memory_ids: Sequence[int], *, standing_only: bool = False) -> dict[int, RankFields]:
        """What rescoring and grouping need, for many candidates, in one query (the first cited
        turn by an index seek per row), without building full Memory objects."""
        out: dict[int, RankFields] = {}
        mt = self.s.t.memories
        with self.s.connection() as conn:
            for chunk in chunks(list(dict.fromkeys(memory_ids))):
                stmt = self.rank_fields_select(user_id, chunk)
                if standing_only:
                    stmt = stmt.where(mt.c.metadata["standing"].as_string().is_not(None))
                out.update(rank_rows(conn.execute(stmt, {"uid": user_id, "ids": list(chunk)})))
        return out

    def rank_fields_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, RankFields]:
        """rank_fields of the memories (within ``filters``) citing any of these turns, in one query."""
        ms, mt = self.s.t.memory_sources, self.s.t.memories
        ids = sorted({int(t) for t in turn_ids})
        if not ids:
            return {}
        citing = select(ms.c.memory_id).where(ms.c.user_id == user_id, self.s.ids_in(ms.c.turn_id, ids))
        stmt = self.rank_fields_base().where(mt.c.id.in_(citing), *self.s.filter_clause(filters, now))
        with self.s.connection() as conn:
            return rank_rows(conn.execute(stmt, {"uid": user_id}))

    def superseders_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, tuple[int, RankFields]]:
        """The memories (within ``filters``) that superseded a memory citing one of these turns, each
        with that turn and its rank fields, in one query."""
        ms, mt = self.s.t.memory_sources, self.s.t.memories
        ids = sorted({int(t) for t in turn_ids})
        if not ids:
            return {}
        old = mt.alias("old")
        pairs = (
            select(old.c.superseded_by, func.min(ms.c.turn_id).label("turn"))
            .select_from(ms.join(old, old.c.id == ms.c.memory_id))
            .where(
                ms.c.user_id == user_id, self.s.ids_in(ms.c.turn_id, ids), old.c.user_id == user_id,
                old.c.status == MemoryStatus.SUPERSEDED.value, old.c.superseded_by.is_not(None),
            )
            .group_by(old.c.superseded_by)
        )  # fmt: skip
        with self.s.connection() as conn:
            by = {int(new): int(turn) for new, turn in conn.execute(pairs)}
            if not by:
                return {}
            stmt = self.rank_fields_base().where(self.s.ids_in(mt.c.id, sorted(by)), *self.s.filter_clause(filters, now))
            fields = rank_rows(conn.execute(stmt, {"uid": user_id}))
        return {mid: (by[mid], f) for mid, f in fields.items()}

    def rank_fields_select(self, user_id: str, ids: Sequence[int]) -> Any:
        """rank_fields' statement for ``ids`` of the user bound as ``uid`` (PostgreSQL builds one
        statement once, for any ids bound as the ``ids`` array parameter)."""
        return self.rank_fields_base().where(self.s.ids_in(self.s.t.memories.c.id, ids))

    def rank_fields_base(self) -> Any:
        mt, ms = self.s.t.memories, self.s.t.memory_sources
        uid: Any = bindparam("uid")
        # a memory's sources are its user's: the memory's own user check covers them, and without a
        # user_id test the (memory_id, turn_id) key gives the oldest at once (a memory said again
        # thousands of times has as many sources, each read to test its user_id)
        first = (
            select(func.min(ms.c.turn_id)).where(ms.c.memory_id == mt.c.id).correlate(mt).scalar_subquery().label("first_turn")
        )
        return select(
            mt.c.id, mt.c.importance, mt.c.confidence, mt.c.said_at, mt.c.created_at, mt.c.access_count,
            mt.c.status, mt.c.pinned, mt.c.valid_to, mt.c.metadata["standing"].as_string().label("standing"),
            mt.c.metadata["slots"].as_string().label("slots"), mt.c.conversation_id, mt.c.occurred_at, first,
        ).where(self.s.owner_clause(mt.c.user_id) == uid)  # fmt: skip

    def active_hashes(
        self,
        conn: Connection,
        user_id: str,
        hashes: Sequence[str],
        now: datetime,
        *,
        scope: tuple[str | None, str | None] | None = None,
    ) -> dict[str, int]:
        mt = self.s.t.memories
        in_scope = self.s.scope_clause(scope) if scope is not None else []
        out: dict[str, int] = {}
        for chunk in chunks(sorted(set(hashes))):
            rows = conn.execute(
                select(mt.c.content_hash, mt.c.id)
                .where(
                    mt.c.user_id == user_id,
                    mt.c.content_hash.in_(list(chunk)),
                    mt.c.status == MemoryStatus.ACTIVE.value,
                    or_(mt.c.expires_at.is_(None), mt.c.expires_at > now),
                    *in_scope,
                )
                .order_by(mt.c.id)
            ).all()
            for h, mid in rows:
                out.setdefault(h, int(mid))
        return out

    def find_active_by_hash(
        self, user_id: str, hashes: Sequence[str], now: datetime, *, scope: tuple[str | None, str | None] | None = None
    ) -> dict[str, int]:
        with self.s.connection() as conn:
            return self.active_hashes(conn, user_id, hashes, now, scope=scope)

    def memory_owner(self, memory_id: int) -> str | None:
        mt = self.s.t.memories
        with self.s.connection() as conn:
            row = conn.execute(select(mt.c.user_id).where(mt.c.id == int(memory_id))).first()
        return None if row is None else str(row[0])

    def pinned_memories(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        mt = self.s.t.memories
        with self.s.connection() as conn:
            ids = [
                int(r[0])
                for r in conn.execute(
                    select(mt.c.id)
                    .where(
                        mt.c.user_id == user_id,
                        mt.c.status == MemoryStatus.ACTIVE.value,
                        mt.c.pinned.is_(True),
                        or_(mt.c.expires_at.is_(None), mt.c.expires_at > now),
                    )
                    .order_by(mt.c.importance.desc(), mt.c.id.desc())
                    .limit(limit)
                )
            ]
        found = self.get_memories(user_id, ids, details=False)
        found.sort(key=lambda m: (-m.importance, -m.id))
        return found


#: the slot-key index the triggers of migration 6 keep (raw DDL, outside build_metadata)
_SLOTS = sql_table("memory_slots", sql_column("user_id"), sql_column("slot_key"), sql_column("memory_id"))


def rank_rows(rows: Any) -> dict[int, RankFields]:
    """RankFields by memory id from rows of :meth:`MemoryReads.rank_fields_base`."""
    return {
        int(r.id): RankFields(
            importance=float(r.importance),
            confidence=float(r.confidence),
            when=r.said_at or r.created_at,
            access_count=int(r.access_count),
            active=r.status == MemoryStatus.ACTIVE.value,
            first_turn=None if r.first_turn is None else int(r.first_turn),
            pinned=bool(r.pinned),
            valid_to=r.valid_to,
            standing=r.standing,
            slots=r.slots,
            conversation_id=r.conversation_id,
            occurred_at=r.occurred_at,
        )
        for r in rows
    }
