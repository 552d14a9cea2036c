"""What the inspector reads of a user beyond the engine's public methods: per-user counts, the
knowledge graph, a conversation's DAG, the inputs of a lifecycle preview, the agents and runs.

:class:`Inspection` is the store's facet for it (``store.inspection``); its records are plain data.
Every method is one read of one user's rows (or of the users named), blocking: run it in a thread.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

__all__ = [
    "CleanupCounts",
    "ConversationInfo",
    "DagNode",
    "DagWindow",
    "DecayInput",
    "EntityCount",
    "EntityGraph",
    "Inspection",
    "RelationEdge",
    "Scopes",
    "UserSummary",
]


@dataclass(slots=True)
class UserSummary:
    user_id: str  # stored id
    turns: int = 0
    conversations: int = 0
    entities: int = 0
    tiers: dict[str, int] = field(default_factory=dict)  # active memories per tier
    statuses: dict[str, int] = field(default_factory=dict)  # memories per status
    last_activity: datetime | None = None

    @property
    def memories(self) -> int:
        return sum(self.statuses.values())


class EntityCount(NamedTuple):
    id: int
    name: str
    type: str
    mentions: int


class RelationEdge(NamedTuple):
    source: int
    target: int
    relation: str
    strength: float


@dataclass(slots=True)
class EntityGraph:
    """Entities of a user and the relations among them (self-relations left out)."""

    entities: list[EntityCount]
    relations: list[RelationEdge]
    total_entities: int  # all of the user's


class ConversationInfo(NamedTuple):
    id: str
    turns: int
    updated_at: datetime
    summary: str | None


@dataclass(slots=True)
class DagNode:
    id: int
    role: str
    name: str | None
    kind: str
    content: str
    said_at: datetime
    archived: bool
    parents: list[int] = field(default_factory=list)
    summary_of: list[int] = field(default_factory=list)
    summarized_by: int | None = None


@dataclass(slots=True)
class DagWindow:
    """A window of a conversation's turns (oldest first) and where it sits in the conversation."""

    nodes: list[DagNode]
    total: int  # the conversation's turns
    before: int  # turns older than the window
    after: int  # turns newer than the window


class DecayInput(NamedTuple):
    """An active memory with what the forgetting curve needs (times as epoch seconds)."""

    id: int
    importance: float
    base_importance: float
    reinforced_at: float
    last_accessed_at: float | None
    access_count: int
    half_life_days: float  # its type's and tier's, before the access bonus
    tier: str
    memory_type: str


class CleanupCounts(NamedTuple):
    """What cleanup would take besides the memories decay deactivates now."""

    faded: int  # decayed working / short-term memories under the importance floor
    purge_deleted: int  # soft-deleted before the retention time
    purge_expired: int  # expired before the grace time


@dataclass(slots=True)
class Scopes:
    """A user's agents and runs: memories and turns of each (None: memories without one)."""

    agents: list[tuple[str | None, int, int]] = field(default_factory=list)
    runs: list[tuple[str | None, int, int]] = field(default_factory=list)


class Inspection(ABC):
    """The inspector's reads (see the module docstring)."""

    @abstractmethod
    def user_summaries(self, user_ids: Sequence[str]) -> list[UserSummary]:
        """Counts and last activity of these users, in the order given."""

    @abstractmethod
    def entity_search(self, user_id: str, text: str, limit: int = 20) -> list[EntityCount]:
        """Entities whose name contains ``text`` (case-insensitive), the most mentioned first."""

    @abstractmethod
    def entity_graph(self, user_id: str, ids: Sequence[int] | None, limit: int) -> EntityGraph:
        """The ``limit`` most mentioned entities (or those of ``ids``, at most ``limit``) and the
        relations among them."""

    @abstractmethod
    def conversations(self, user_id: str, limit: int = 200) -> list[ConversationInfo]:
        """The user's conversations, the most recently updated first."""

    @abstractmethod
    def conversation_window(
        self, user_id: str, conversation_id: str, limit: int, *, upto: int | None = None, after: int | None = None,
        around: int | None = None,
    ) -> DagWindow:  # fmt: skip
        """``limit`` turns of a conversation with their parents: the last ones; or the last ones up
        to turn id ``upto``; or the first ones after turn id ``after``; or those ``around`` a turn."""

    @abstractmethod
    def decay_inputs(
        self, user_id: str, now: datetime, half_lives: Mapping[tuple[str, str], float], default_half_life: float
    ) -> list[DecayInput]:
        """The user's active, unpinned, unexpired memories, each with its half-life from
        ``half_lives`` ((memory type, tier) -> days), by id."""

    @abstractmethod
    def cleanup_counts(
        self, user_id: str, *, min_importance: float, deleted_before: datetime, expired_before: datetime
    ) -> CleanupCounts: ...

    @abstractmethod
    def scopes(self, user_id: str, limit: int = 200) -> Scopes:
        """The agents and the runs the user's memories and turns were stored under, most used first."""
