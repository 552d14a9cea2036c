"""The rows of one conversation seen as a graph (the Memory Graph's DAG): the store's side.

The conversation record *is* the DAG: each message is a row of ``turns`` chained after the
conversation's tip; a graph node is one or two turns (a message and its reply), a summary node a
turn of kind ``summary`` covering archived turns; nothing is ever deleted. Key memories are rows of
``memories`` with ``source = 'dialogue'``. :class:`ConversationRows` (``store.conversation_rows``)
reads and writes those rows for one (user, conversation); what they mean as a graph is
:mod:`deepcontext.dialogue`'s.

A write runs inside :meth:`ConversationRows.writing`: one transaction holding the user's row and
the conversation's row locked, in the order every write of the store takes them. The handle it
yields (and :meth:`ConversationRows.reading`'s) is opaque: pass it back to the other methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

__all__ = [
    "NODE_SUMMARY_KEY",
    "PART_KEY",
    "REV_KEY",
    "ConversationRows",
    "ConversationWrite",
    "KeyMemoryRow",
    "NewKeyMemoryRow",
    "NodeTurn",
    "Stamp",
    "TurnRow",
]

#: turn metadata key: "first" on a dialogue node's first turn, "reply" on its reply
PART_KEY = "dialogue_part"
#: conversation metadata key: bumped by structural changes other than appends
REV_KEY = "dialogue_rev"
#: turn metadata key holding a node's short summary text
NODE_SUMMARY_KEY = "dialogue_summary"

#: a conversation's (turn count, tip turn id, revision) as read
Stamp = tuple[int, Any, int]


class TurnRow(NamedTuple):
    """The structural columns of one turn (a tuple of plain values: the garbage collector stops
    tracking it, which matters with hundreds of thousands of them)."""

    id: int
    role: str
    kind: str
    archived: bool
    summarized_by: int | None
    #: None: written without the dialogue; "first": a dialogue node's first turn; "reply": its reply
    part: str | None


class NodeTurn(NamedTuple):
    """What a graph node shows of one of its turns."""

    id: int
    role: str
    kind: str
    content: str
    tags: list[str]
    summary: str  # the node's short summary (kept on its first turn)


@dataclass(slots=True)
class ConversationWrite:
    """An open write: its handle, the conversation's stamp read under the lock, the time of the
    write and the user's new version."""

    handle: Any
    stamp: Stamp
    now: datetime
    rev: int


@dataclass(slots=True)
class NewKeyMemoryRow:
    content: str
    source_turns: list[int]
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    packable: bool = True
    canonical_key: str | None = None
    turn_id: int = 0
    status: str = "candidate"


@dataclass(slots=True)
class KeyMemoryRow:
    id: int
    content: str
    tags: list[str]
    pinned: bool
    packable: bool
    status: str
    turn_id: int
    canonical_key: str | None
    source_turns: list[int] = field(default_factory=list)


class ConversationRows(ABC):
    """The turns, edges and key memories of one user's conversation (see the module docstring)."""

    user_id: str
    conversation_id: str

    # --- transactions ---------------------------------------------------------------------------
    @abstractmethod
    def reading(self) -> AbstractContextManager[Any]:
        """A read handle (a connection)."""

    @abstractmethod
    def writing(self, now: datetime) -> AbstractContextManager[ConversationWrite]:
        """One write transaction: the user's version bumped, the conversation's row created if new
        and locked, its stamp read under the lock."""

    # --- turns and edges ------------------------------------------------------------------------
    @abstractmethod
    def read_stamp(self, handle: Any) -> Stamp | None:
        """The conversation's stamp; None for a conversation with no row."""

    @abstractmethod
    def load(self, handle: Any, after: int) -> tuple[list[TurnRow], list[tuple[int, int]]]:
        """The structure of the conversation's turns with ids above ``after`` (by id) and their
        edges (child, parent), each child's parents in order."""

    @abstractmethod
    def node_turns(self, handle: Any, turn_ids: Sequence[int]) -> dict[int, NodeTurn]: ...

    @abstractmethod
    def insert_turns(self, handle: Any, now: datetime, turns: Sequence[tuple[str, str, list[str], str]]) -> list[int]:
        """Messages as turns, each (role, content, tags, part), in one statement; their ids in order."""

    @abstractmethod
    def insert_summary(self, handle: Any, now: datetime, content: str, covered: Sequence[int]) -> int:
        """A summary turn covering ``covered``, which are archived (summarized by it); its id."""

    @abstractmethod
    def insert_edges(self, handle: Any, edges: Sequence[tuple[int, int, int]]) -> None:
        """Edges (child turn, parent turn, position among the child's parents)."""

    @abstractmethod
    def set_conversation(
        self, handle: Any, now: datetime, *, added: int, tip: int | None = None, bump_rev: bool = False, stamp: Stamp
    ) -> Stamp:
        """Count ``added`` turns, move the tip, bump the revision (structural changes other than
        appends); the new stamp."""

    @abstractmethod
    def update_turn(self, handle: Any, turn_id: int, *, tags: Sequence[str] | None, summary: str | None) -> None:
        """A node's tags and short summary (on its first turn)."""

    # --- key memories ---------------------------------------------------------------------------
    @abstractmethod
    def add_key_memory(self, write: ConversationWrite, m: NewKeyMemoryRow, embedding: Any = None) -> tuple[int, bool]:
        """Store a key memory (sourced from its turns); with a canonical key held by an active one,
        that one gains the turns instead. (id, whether a row was added)."""

    @abstractmethod
    def key_memories(self, handle: Any, memory_ids: Sequence[int] | None) -> list[KeyMemoryRow]:
        """The conversation's key memories (all, or these), rejected ones included, removed ones not."""

    @abstractmethod
    def set_key_memory_status(self, write: ConversationWrite, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        """Move the key memories of ``turn_id`` in ``from_status`` to ``to_status`` (rejected ones
        are soft-deleted); their ids."""

    @abstractmethod
    def remove_key_memory(self, write: ConversationWrite, memory_id: int) -> bool:
        """Remove a key memory (soft-deleted if active); False when it was not there."""
