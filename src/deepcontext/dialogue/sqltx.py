"""What the SQL of one conversation's graph and its key memories share: the conversation a helper
writes to, and the open write transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection

from deepcontext.dialogue.turnmap import TurnGraph

__all__ = ["Conversation", "Stamp", "WriteTx"]

#: a conversation's (turn count, tip turn id, revision) as read under the lock
Stamp = tuple[int, Any, int]


class Conversation(Protocol):
    """One user's conversation in a SQL store (``t``: the store's tables)."""

    store: Any
    t: Any
    user_id: str
    conversation_id: str


@dataclass(slots=True)
class WriteTx:
    """An open write transaction: its connection, the synced cache, the conversation stamp read
    under the lock, the time of the write and the user's new version (``memories.rev``)."""

    conn: Connection
    g: TurnGraph
    stamp: Stamp
    now: datetime
    rev: int
