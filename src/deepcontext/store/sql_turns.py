"""Reads of conversation turns and their parents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from deepcontext.store.repository import Lookups
from deepcontext.store.sqlparts import chunks
from deepcontext.types import Turn

__all__ = ["CONTEXT_CHARS", "TurnReads"]

#: how much of each earlier turn the keyword index keeps as a turn's context (a pasted document
#: before a reply must not swamp it)
CONTEXT_CHARS = 1000


class TurnReads:
    """Reads of a store's turns."""

    def __init__(self, store: Lookups) -> None:
        self.s = store

    def turn_from_row(self, r: Any, parents: list[int]) -> Turn:
        return Turn(
            id=r.id,
            user_id=r.user_id,
            conversation_id=r.conversation_id,
            role=r.role,
            name=r.name,
            content=r.content,
            said_at=r.said_at,
            created_at=r.created_at,
            kind=r.kind,
            parent_ids=parents,
            archived=bool(r.archived),
            metadata=dict(r.metadata or {}),
            agent_id=r.agent_id,
            run_id=r.run_id,
        )

    def turns_where(self, conn: Connection, *where: Any, order_desc: bool = False, limit: int | None = None) -> list[Turn]:
        tt, te = self.s.t.turns, self.s.t.turn_edges
        q = select(tt).where(*where).order_by(tt.c.id.desc() if order_desc else tt.c.id)
        if limit is not None:
            q = q.limit(limit)
        rows = conn.execute(q).all()
        if not rows:
            return []
        ids = [r.id for r in rows]
        parents: dict[int, list[int]] = {}
        for chunk in chunks(ids):
            for child, parent in conn.execute(
                select(te.c.child_id, te.c.parent_id).where(te.c.child_id.in_(list(chunk))).order_by(te.c.position)
            ):
                parents.setdefault(child, []).append(parent)
        return [self.turn_from_row(r, parents.get(r.id, [])) for r in rows]

    def get_turns(self, user_id: str, turn_ids: Sequence[int]) -> list[Turn]:
        tt = self.s.t.turns
        ids = list(dict.fromkeys(turn_ids))
        if not ids:
            return []
        with self.s.connection() as conn:
            found = {t.id: t for t in self.turns_where(conn, self.s.owner_clause(tt.c.user_id) == user_id, tt.c.id.in_(ids))}
        return [found[i] for i in ids if i in found]

    def recent_turns(self, user_id: str, conversation_id: str, limit: int, *, before: int | None = None) -> list[Turn]:
        tt = self.s.t.turns
        where = [tt.c.user_id == user_id, tt.c.conversation_id == conversation_id]
        if before is not None:
            where.append(tt.c.id < before)
        with self.s.connection() as conn:
            turns = self.turns_where(conn, *where, order_desc=True, limit=limit)
        return list(reversed(turns))

    def speaker_names(self, conn: Connection, user_id: str) -> set[str]:
        """The names of the speakers of the user's user and assistant turns."""
        tt = self.s.t.turns
        rows = conn.execute(
            select(tt.c.name)
            .where(tt.c.user_id == user_id, tt.c.role.in_(["user", "assistant"]), tt.c.name.is_not(None))
            .distinct()
        )
        return {r[0] for r in rows}

    def context_texts(self, conn: Connection, user_id: str, turn_ids: Sequence[int], depth: int) -> dict[int, str]:
        """Per turn, the contents of the ``depth`` user or assistant turns before it in its
        conversation (first parents, nearest last): what a reply answers and what led to it. Turns
        with no such parent are left out."""
        if depth <= 0 or not turn_ids:
            return {}
        tt, te = self.s.t.turns, self.s.t.turn_edges
        chain: dict[int, list[int]] = {t: [] for t in dict.fromkeys(turn_ids)}
        level = {t: t for t in chain}  # turn -> the ancestor reached so far
        for _ in range(depth):
            parent: dict[int, int] = {}
            for chunk in chunks(sorted(set(level.values()))):
                rows = conn.execute(
                    select(te.c.child_id, te.c.parent_id).where(
                        te.c.user_id == user_id, te.c.child_id.in_(list(chunk)), te.c.position == 0
                    )
                )
                parent.update((int(c), int(p)) for c, p in rows)
            level = {t: parent[a] for t, a in level.items() if a in parent}
            for t, a in level.items():
                chain[t].append(a)
            if not level:
                break
        wanted = sorted({a for ancestors in chain.values() for a in ancestors})
        content: dict[int, str] = {}
        for chunk in chunks(wanted):
            rows = conn.execute(
                select(tt.c.id, tt.c.content).where(
                    self.s.owner_clause(tt.c.user_id) == user_id, tt.c.id.in_(list(chunk)), tt.c.role.in_(["user", "assistant"])
                )
            )
            content.update((int(i), str(c)[:CONTEXT_CHARS]) for i, c in rows)
        out = {}
        for t, ancestors in chain.items():
            texts = [content[a] for a in reversed(ancestors) if a in content]
            if texts:
                out[t] = " ".join(texts)
        return out
