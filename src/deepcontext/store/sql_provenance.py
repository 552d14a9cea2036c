"""Reads of provenance (the turns a memory came from) and of links between similar memories."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select

from deepcontext.store.repository import Reads
from deepcontext.store.sqlparts import chunks
from deepcontext.types import MemoryStatus, Provenance

__all__ = ["ProvenanceReads"]


class ProvenanceReads:
    """Reads of a store's provenance and memory links."""

    def __init__(self, store: Reads) -> None:
        self.s = store

    def sources_of(
        self, conn: Connection, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None
    ) -> dict[int, list[Provenance]]:
        """Provenance of memories, oldest turn first; at most ``per_memory`` turns each if given (a
        memory seen again thousands of times cites thousands of turns)."""
        ms, tt = self.s.t.memory_sources, self.s.t.turns
        pairs: list[tuple[int, int]] = []
        if per_memory is None:
            for chunk in chunks(list(memory_ids)):
                pairs += [
                    (int(m), int(t))
                    for m, t in conn.execute(
                        select(ms.c.memory_id, ms.c.turn_id).where(ms.c.user_id == user_id, ms.c.memory_id.in_(list(chunk)))
                    )
                ]
        else:
            # the oldest turns of each memory: one index range scan each, never all its sources; one
            # statement with bound parameters, compiled once (a UNION of per-memory subqueries would
            # be compiled anew for every search)
            stmt = (
                select(ms.c.turn_id)
                .where(ms.c.memory_id == bindparam("mid"), ms.c.user_id == bindparam("uid"))
                .order_by(ms.c.turn_id)
                .limit(bindparam("lim", literal_execute=False))
            )
            for mid in dict.fromkeys(int(m) for m in memory_ids):
                pairs += [(mid, int(r[0])) for r in conn.execute(stmt, {"mid": mid, "uid": user_id, "lim": per_memory})]
        turns: dict[int, Any] = {}
        turn_ids = sorted({t for _, t in pairs})
        for chunk in chunks(turn_ids):
            for r in conn.execute(
                select(tt.c.id, tt.c.conversation_id, tt.c.role, tt.c.name, tt.c.said_at).where(tt.c.id.in_(list(chunk)))
            ):
                turns[int(r.id)] = r
        out: dict[int, list[Provenance]] = {}
        for mid, tid in sorted(pairs):
            t = turns.get(tid)
            if t is not None:
                out.setdefault(mid, []).append(  # rows of our own schema: no re-validation (hot path of search)
                    Provenance.model_construct(
                        turn_id=t.id, conversation_id=t.conversation_id, role=t.role, speaker=t.name, said_at=t.said_at
                    )
                )
        return out

    def sources(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[Provenance]]:
        with self.s.connection() as conn:
            return self.sources_of(conn, user_id, memory_ids)

    def memory_links(self, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None) -> dict[int, list[int]]:
        ml, mt = self.s.t.memory_links, self.s.t.memories
        out: dict[int, list[int]] = {}
        ids = list(dict.fromkeys(int(m) for m in memory_ids))
        if not ids or (per_memory is not None and per_memory <= 0):
            return out
        with self.s.connection() as conn:
            rows = conn.execute(
                select(ml.c.memory_id, ml.c.other_id)
                .join(mt, mt.c.id == ml.c.other_id)
                .where(
                    ml.c.user_id == user_id,
                    ml.c.memory_id.in_(ids),
                    mt.c.status == MemoryStatus.ACTIVE.value,
                )
                .order_by(ml.c.memory_id, ml.c.similarity.desc(), ml.c.other_id)
            ).all()
        for mid, other in rows:
            got = out.setdefault(mid, [])
            if per_memory is None or len(got) < per_memory:
                got.append(other)
        return out
