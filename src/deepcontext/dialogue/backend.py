"""The seam under the Memory Graph API: where one conversation's nodes, edges and key memories live.

Two implementations: :class:`~deepcontext.dialogue.memory_backend.InMemoryBackend` (the default,
ids from 0 like the seed) and :class:`~deepcontext.dialogue.sqlstore.StoreDialogueBackend` (the
conversation's turns in the deepcontext database, per user and conversation).

Every write method is atomic: it validates against the current state and applies completely or not
at all, so two writers (threads or processes) never leave a half-written or cyclic graph. Reads go
through :meth:`DialogueBackend.topology`, a consistent node-level view held while the caller runs
a path algorithm over it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.vocabulary import KeyMemory, LLMContextGraphNode, LLMContextPair

__all__ = ["DialogueBackend", "NewKeyMemory", "NewNode"]


@dataclass(slots=True)
class NewNode:
    """A node to append: its message pair and its parents (node ids, in order)."""

    context: LLMContextPair
    parent_ids: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


@dataclass(slots=True)
class NewKeyMemory:
    content: str
    source_nodes: list[int] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    packable: bool = True
    canonical_key: str | None = None
    turn_id: int = 0
    status: str = "candidate"


@runtime_checkable
class DialogueBackend(Protocol):
    """Storage of one conversation graph and its key memories."""

    # --- nodes and edges ---------------------------------------------------------------------------
    def topology(self) -> AbstractContextManager[Topology]:
        """A current, consistent view of the structure; do not keep it past the ``with`` block."""
        ...

    def get_nodes(self, node_ids: Sequence[int]) -> dict[int, LLMContextGraphNode]:
        """Snapshots of these nodes (unknown ids are left out)."""
        ...

    def iter_nodes(self, batch: int = 500) -> Iterator[LLMContextGraphNode]:
        """Every node, by ascending id."""
        ...

    def tip_node_id(self) -> int | None:
        """The node the conversation continues from: the last node appended (summaries excluded)."""
        ...

    def add_nodes(self, nodes: Sequence[NewNode], *, chain: bool = False, after_tip: bool = False) -> list[int]:
        """Append nodes in one transaction; returns their ids in order.

        ``chain``: each node after the first also gets the previous one as parent. ``after_tip``:
        the first node's parents are the conversation's tip at write time (none if empty), read and
        written under the same lock, so concurrent appenders form one chain. Raises
        ``NodeNotFoundError`` for unknown parents.
        """
        ...

    def add_edge(self, child_id: int, parent_id: int) -> bool:
        """Add the edge parent -> child; False if it existed. Raises ``NodeNotFoundError`` or
        ``CyclicGraphError`` (checked against the state at write time)."""
        ...

    def add_summary(
        self, context: LLMContextPair, *, parent_ids: Sequence[int], summarized_ids: Sequence[int], child_ids: Sequence[int]
    ) -> int:
        """Create a summary node with these parents and children (edges added, none removed) and
        archive ``summarized_ids`` (their ``summarized_by`` becomes the new node). Raises
        ``DialogueConflictError`` if one of them is archived already or gone."""
        ...

    def update_node(self, node_id: int, *, tags: Sequence[str] | None = None, summary: str | None = None) -> None:
        """Replace a node's tags and/or its short summary text."""
        ...

    # --- key memories ------------------------------------------------------------------------------
    def add_memory(self, memory: NewKeyMemory) -> tuple[int, bool]:
        """Store a key memory; returns (id, created). With a ``canonical_key`` already held by a
        memory of this store, no row is added: the sources are merged into it, (its id, False)."""
        ...

    def get_memories(self, memory_ids: Sequence[int] | None = None) -> list[KeyMemory]:
        """Key memories by id (all when None), ascending id; removed ones are not returned."""
        ...

    def set_memory_status(self, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        """Move memories of round ``turn_id`` from one status to another; returns their ids."""
        ...

    def remove_memory(self, memory_id: int) -> bool:
        """Remove a key memory (its canonical key becomes free); False if there was none."""
        ...
