"""The SQL of a conversation's turns as graph nodes: the conversation row's stamp, the turn
structure, and the rows a graph write adds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from deepcontext.dialogue.sqltx import Conversation, Stamp
from deepcontext.dialogue.turnmap import TurnRow
from deepcontext.text import content_hash

__all__ = ["NODE_SUMMARY_KEY", "PART_KEY", "REV_KEY", "insert_edges", "insert_turn", "load", "read_stamp", "set_conversation"]

#: turn metadata key: "first" on a dialogue node's first turn, "reply" on its reply
PART_KEY = "dialogue_part"
#: conversation metadata key: bumped by structural changes other than appends
REV_KEY = "dialogue_rev"
#: turn metadata key holding a node's short summary text
NODE_SUMMARY_KEY = "dialogue_summary"


def read_stamp(b: Conversation, conn: Connection, *, for_update: bool = False) -> Stamp | None:
    cv = b.t.conversations
    q = select(cv.c.turn_count, cv.c.tip_turn_id, cv.c.metadata).where(
        cv.c.user_id == b.user_id, cv.c.conversation_id == b.conversation_id
    )
    if for_update:
        q = q.with_for_update()
    row = conn.execute(q).first()
    if row is None:
        return None
    meta = row.metadata or {}
    return (int(row.turn_count or 0), row.tip_turn_id, int(meta.get(REV_KEY, 0) or 0))


def load(b: Conversation, conn: Connection, after: int) -> tuple[list[TurnRow], list[tuple[int, int]]]:
    """The structure of the conversation's turns with ids above ``after`` (positional unpacking:
    this runs over every turn when a handle opens a conversation)."""
    tt, te = b.t.turns, b.t.turn_edges
    mine = (tt.c.user_id == b.user_id, tt.c.conversation_id == b.conversation_id, tt.c.id > after)
    found = conn.execute(
        select(
            tt.c.id,
            tt.c.role,
            tt.c.kind,
            tt.c.archived,
            tt.c.summarized_by,
            tt.c.metadata[PART_KEY].as_string(),
        )
        .where(*mine)
        .order_by(tt.c.id)
    ).all()
    rows = [TurnRow(i, role, kind, bool(archived), by, part) for i, role, kind, archived, by, part in found]
    edges: list[tuple[int, int]] = [
        (c, p)
        for c, p in conn.execute(
            select(te.c.child_id, te.c.parent_id)
            .join(tt, tt.c.id == te.c.child_id)
            .where(*mine)
            .order_by(te.c.child_id, te.c.position, te.c.parent_id)
        ).all()
    ]
    return rows, edges


def set_conversation(
    b: Conversation, conn: Connection, now: datetime, *, added: int, tip: int | None = None, bump_rev: bool = False, stamp: Stamp
) -> Stamp:
    cv = b.t.conversations
    where = (cv.c.user_id == b.user_id, cv.c.conversation_id == b.conversation_id)
    values: dict[str, Any] = {"updated_at": now, "turn_count": cv.c.turn_count + added}
    if tip is not None:
        values["tip_turn_id"] = tip
    rev = stamp[2]
    if bump_rev:
        meta = conn.execute(select(cv.c.metadata).where(*where)).scalar_one() or {}
        rev += 1
        values["metadata"] = {**meta, REV_KEY: rev}
    conn.execute(update(cv).where(*where).values(**values))
    return (stamp[0] + added, tip if tip is not None else stamp[1], rev)


def insert_turn(
    b: Conversation,
    conn: Connection,
    now: datetime,
    *,
    role: str,
    content: str,
    kind: str = "message",
    part: str = "first",
    tags: Sequence[str] = (),
    summary_of: Sequence[int] = (),
) -> int:
    tt = b.t.turns
    return int(
        conn.execute(
            insert(tt)
            .values(
                user_id=b.user_id,
                conversation_id=b.conversation_id,
                role=role,
                name=None,
                content=content,
                content_hash=content_hash(content),
                kind=kind,
                said_at=now,
                created_at=now,
                archived=False,
                summary_of=list(summary_of),
                tags=list(tags),
                metadata={PART_KEY: part},
            )
            .returning(tt.c.id)
        ).scalar_one()
    )


def insert_edges(b: Conversation, conn: Connection, edges: list[tuple[int, int, int]]) -> None:
    if edges:
        conn.execute(
            insert(b.t.turn_edges),
            [{"user_id": b.user_id, "child_id": c, "parent_id": p, "position": i} for c, p, i in edges],
        )
