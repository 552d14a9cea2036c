"""The Memory Graph vocabulary: messages, message pairs, graph nodes, key memories and errors.

Names and fields follow the Memory Graph seed (``LLMContext``, ``LLMContextPair``,
``LLMContextGraphNode``, ``KeyMemory``), so code written for it keeps working. The node and memory
objects handed out by a graph or a memory store are *snapshots*: changing their fields changes
nothing stored; use the graph's and the store's methods to change things.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepcontext.errors import DeepContextError, NotFoundError, ValidationError

__all__ = [
    "KEY_MEMORY_STATUSES",
    "SUMMARY_LABEL",
    "DialogueConflictError",
    "KeyMemory",
    "KeyMemoryNotFoundError",
    "LLMContext",
    "LLMContextGraphNode",
    "LLMContextPair",
    "NodeNotFoundError",
]

#: the user half of a summary node (the assistant half holds the summary text)
SUMMARY_LABEL = "[Summary of the earlier conversation]"

#: the life of a key memory: proposed (candidate), accepted (committed) or refused (rejected)
KEY_MEMORY_STATUSES = ("candidate", "committed", "rejected")


class NodeNotFoundError(NotFoundError, KeyError):
    """A node id that is not in this graph. A ``KeyError`` too, as the seed raised ``KeyError``."""

    def __init__(self, node_id: Any, *, what: str = "node") -> None:
        super().__init__(f"{what} {node_id!r} does not exist")
        self.node_id = node_id


class KeyMemoryNotFoundError(NotFoundError, KeyError):
    """A key memory id that is not in this memory store (``KeyError`` compatible)."""

    def __init__(self, memory_id: Any) -> None:
        super().__init__(f"key memory {memory_id!r} does not exist")
        self.memory_id = memory_id


class DialogueConflictError(DeepContextError):
    """Another writer changed the graph in a way that makes this write meaningless (for example the
    nodes to compress were compressed meanwhile). Nothing was written."""


@dataclass(slots=True)
class LLMContext:
    """One chat message."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if not isinstance(self.role, str) or not self.role:
            raise ValidationError("LLMContext.role must be a non-empty string", field="role")
        if not isinstance(self.content, str):
            raise ValidationError("LLMContext.content must be a string", field="content")

    def to_dict(self) -> dict[str, str]:
        """``{"role": ..., "content": ...}``, the shape chat APIs take."""
        return {"role": self.role, "content": self.content}


@dataclass(slots=True)
class LLMContextPair:
    """One round of a conversation: the user's message and the model's reply.

    Either half may have empty content (a message still waiting for its reply, a lone system
    message): empty halves are left out of linear contexts.
    """

    user_role: LLMContext
    llm_role: LLMContext

    def __post_init__(self) -> None:
        if not isinstance(self.user_role, LLMContext) or not isinstance(self.llm_role, LLMContext):
            raise ValidationError("LLMContextPair takes two LLMContext objects", field="context")

    def messages(self) -> list[LLMContext]:
        """The non-empty halves, user first."""
        return [m for m in (self.user_role, self.llm_role) if m.content]


@dataclass(slots=True)
class LLMContextGraphNode:
    """A node of the conversation DAG (a snapshot).

    ``parent_ids`` / ``child_ids`` are the stored edges, archived nodes included. ``archived`` nodes
    were folded into the summary node(s) in ``summarized_by``; a summary node lists the nodes it
    covers in ``summarized_ids``.
    """

    id: int
    context: LLMContextPair
    parent_ids: set[int] = field(default_factory=set)
    child_ids: set[int] = field(default_factory=set)
    is_summary: bool = False
    archived: bool = False
    summarized_by: set[int] = field(default_factory=set)
    summarized_ids: set[int] = field(default_factory=set)
    summary: str = ""
    tags: set[str] = field(default_factory=set)


@dataclass(slots=True)
class KeyMemory:
    """A key memory: a fact, formula, conclusion or preference kept outside the graph.

    ``pinned`` memories go into every later context; ``packable=False`` protects the nodes in
    ``source_nodes`` from compression. ``turn_id`` is the caller's round number (the seed's
    meaning), used by :meth:`MemoryStore.commit_candidates`.
    """

    id: int
    content: str
    source_nodes: set[int] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    pinned: bool = False
    packable: bool = True
    status: str = "candidate"
    turn_id: int = 0
    canonical_key: str | None = None
