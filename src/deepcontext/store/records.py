"""The vocabulary between engine and store: filters, and *plans* that describe a write completely
before it starts, so no transaction is open while an embedder or an LLM works."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np

from deepcontext.store.metafilter import MetaFilter, parse_metadata_filter
from deepcontext.types import EntityType, HistoryEvent, MemoryStatus, MemoryTier, MemoryType

__all__ = [
    "DEFAULT_FILTERS",
    "AddOutcome",
    "AddPlan",
    "ColumnKind",
    "CandidateRow",
    "DecayChange",
    "DecayRow",
    "EntityUpsert",
    "FactWrite",
    "GroupWrite",
    "HeldLock",
    "MemoryChange",
    "MemoryEdit",
    "MemoryFilters",
    "MemoryRewrite",
    "NewMemory",
    "NewTurn",
    "PurgeResult",
    "RankFields",
    "RelationUpsert",
]

#: how an exported column's JSON value is read back: an ISO time, a base64 float32 vector, a JSON
#: document, or a plain value
ColumnKind = Literal["time", "vector", "json", "value"]


@dataclass(slots=True)
class MemoryFilters:
    """Filters every retrieval leg and ``list`` honour. ``None`` means no restriction."""

    tiers: tuple[MemoryTier, ...] | None = None
    types: tuple[MemoryType, ...] | None = None
    conversation_ids: tuple[str, ...] | None = None
    after: datetime | None = None  # said_at (or created_at when unknown) >= after
    before: datetime | None = None  # said_at (or created_at) < before
    metadata: MetaFilter | Mapping[str, Any] | None = None  # conditions on top-level metadata keys (store.metafilter)
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
    include_expired: bool = False
    #: memories of these agents / runs (a None in the tuple: memories without one)
    agent_ids: tuple[str | None, ...] | None = None
    run_ids: tuple[str | None, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.metadata, Mapping):  # the JSON form ({key: value} or operators)
            self.metadata = parse_metadata_filter(self.metadata)

    @property
    def only_active(self) -> bool:
        return self.statuses == (MemoryStatus.ACTIVE,)

    @property
    def needs_sql(self) -> bool:
        """Filters only the database can evaluate (metadata, scopes): in-memory indexes ask it which
        ids pass."""
        return self.metadata is not None or self.agent_ids is not None or self.run_ids is not None


#: the filters of a plain search (active, unexpired memories, nothing else): backends answer this
#: common case with statements of their own; compare with ==, never change it
DEFAULT_FILTERS = MemoryFilters()


@dataclass(slots=True)
class RankFields:
    """The few fields search rescoring needs for a candidate. Not frozen: a search builds a few
    hundred of them, and a frozen dataclass's constructor is several times slower."""

    importance: float
    confidence: float
    when: datetime  # said_at, else created_at
    access_count: int
    active: bool
    first_turn: int | None = None  # the turn the memory was derived from (its oldest source)
    pinned: bool = False
    valid_to: datetime | None = None  # when what it says stopped being true (knowledge updates)
    standing: str | None = None  # the kind of standing fact it states (allergy, diet, preference...)
    slots: str | None = None  # the single-valued facts it holds: "maya|employer maya|job"
    conversation_id: str | None = None
    occurred_at: datetime | None = None  # when what it says happened (extracted), if known


@dataclass(slots=True)
class NewTurn:
    role: str
    content: str
    content_hash: str
    said_at: datetime
    name: str | None = None
    kind: str = "message"
    metadata: dict[str, Any] = field(default_factory=dict)
    #: explicit parents (turn ids). None: chain after the conversation's tip (or the previous new turn)
    parent_ids: list[int] | None = None


@dataclass(slots=True)
class NewMemory:
    text: str
    content_hash: str
    memory_type: MemoryType
    tier: MemoryTier
    importance: float
    confidence: float
    embedding: np.ndarray | None
    source: str = "rules"
    said_at: datetime | None = None
    occurred_at: datetime | None = None
    valid_from: datetime | None = None
    expires_at: datetime | None = None
    conversation_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: provenance: indices into AddPlan.turns, and/or ids of turns stored earlier
    source_turn_indices: list[int] = field(default_factory=list)
    source_turn_ids: list[int] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    #: (existing memory id, cosine) pairs above the connection threshold
    links: list[tuple[int, float]] = field(default_factory=list)
    consolidated_from: list[int] = field(default_factory=list)
    pinned: bool = False
    tags: list[str] = field(default_factory=list)
    canonical_key: str | None = None
    #: the existing memory this one replaces (UPDATE / REPLACE): it becomes superseded
    supersedes: int | None = None
    #: further existing memories the same new version supersedes (an older value said twice)
    also_supersedes: list[int] = field(default_factory=list)
    event: HistoryEvent = HistoryEvent.ADD
    reason: str | None = None
    #: if an active memory with the same content hash exists when the write happens, link the
    #: provenance to it instead of inserting (exact duplicates never become two rows)
    dedupe: bool = True


@dataclass(slots=True)
class MemoryChange:
    """A change to an existing memory inside an add (DELETE or NOOP-with-provenance)."""

    memory_id: int
    action: HistoryEvent  # DELETE | NOOP
    reason: str | None = None
    source_turn_indices: list[int] = field(default_factory=list)
    source_turn_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class EntityUpsert:
    name: str
    norm_name: str
    entity_type: EntityType
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class RelationUpsert:
    source_norm: str
    target_norm: str
    relation: str
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class AddPlan:
    """Everything one ``add`` writes, decided before the transaction starts."""

    user_id: str
    conversation_id: str
    now: datetime
    turns: list[NewTurn] = field(default_factory=list)
    memories: list[NewMemory] = field(default_factory=list)
    changes: list[MemoryChange] = field(default_factory=list)
    entities: list[EntityUpsert] = field(default_factory=list)
    relations: list[RelationUpsert] = field(default_factory=list)
    actor: str = "system"
    #: the agent and run (inside the user) the turns and memories belong to; None: none. Exact
    #: duplicates and neighbours are looked for among memories of the same agent and run, where given
    agent_id: str | None = None
    run_id: str | None = None
    #: mark the user for consolidation (the lifecycle picks it up; add never waits for it)
    consolidation_due: bool = False


@dataclass(slots=True)
class AddOutcome:
    turn_ids: list[int]
    #: per plan.memories: the new id, or the id of the existing duplicate it was folded into
    memory_ids: list[int]
    #: per plan.memories: True if a row was inserted, False if folded into an existing duplicate
    inserted: list[bool]
    entity_ids: dict[str, int]
    relations_written: int


@dataclass(slots=True, frozen=True)
class MemoryEdit:
    """What a change of a memory sets (None: left as it is), in one transaction. ``text`` comes with
    its ``content_hash`` and ``embedding``; ``clear_expiry`` removes the expiry; ``restore`` makes a
    deleted or decayed memory active again."""

    text: str | None = None
    content_hash: str | None = None
    embedding: np.ndarray | None = None
    pinned: bool | None = None
    metadata: dict[str, Any] | None = None
    expires_at: datetime | None = None
    clear_expiry: bool = False
    restore: bool = False
    reason: str | None = None

    @property
    def empty(self) -> bool:
        return (
            self.text is None
            and self.pinned is None
            and self.metadata is None
            and self.expires_at is None
            and not (self.clear_expiry or self.restore)
        )


@dataclass(slots=True, frozen=True)
class MemoryRewrite:
    """A memory's new text, written only if its text is still ``old_text`` (with its new metadata
    when what the text states changes it: the slot keys of a renamed subject)."""

    memory_id: int
    old_text: str
    text: str
    content_hash: str
    embedding: np.ndarray | None
    metadata: dict[str, Any] | None = None


# --- the memory lifecycle: what decay, consolidation and cleanup read and write ---------------------


@dataclass(slots=True)
class DecayRow:
    id: int
    memory_type: str
    tier: str
    importance: float
    base_importance: float
    reinforced_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    mention_count: int


@dataclass(slots=True)
class DecayChange:
    id: int
    importance: float
    access_count: int  # as read: the write is skipped if an access happened meanwhile
    mention_count: int  # as read: the write is skipped if the memory was said again meanwhile
    deactivate: bool = False
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class PurgeResult:
    """What a purge removed."""

    deleted: list[int] = field(default_factory=list)  # soft-deleted past the retention period
    expired: list[int] = field(default_factory=list)  # expires_at passed
    predecessors: list[int] = field(default_factory=list)  # merged / superseded into a purged memory
    entities: int = 0  # entities left without any memory or relation

    @property
    def memory_ids(self) -> list[int]:
        return self.deleted + self.expired + self.predecessors


@dataclass(slots=True)
class CandidateRow:
    """A short-term memory that may be consolidated, with what grouping and merging need."""

    id: int
    text: str
    memory_type: str
    importance: float
    base_importance: float
    confidence: float
    access_count: int
    said_at: datetime | None
    occurred_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime
    updated_at: datetime
    conversation_id: str | None
    metadata: dict[str, Any]
    embedding: np.ndarray | None
    entity_ids: list[int] = field(default_factory=list)
    entity_names: list[str] = field(default_factory=list)
    agent_id: str | None = None
    run_id: str | None = None

    @property
    def when(self) -> datetime:
        """When it became true: valid_from, else said_at, else created_at."""
        return self.valid_from or self.said_at or self.created_at


@dataclass(slots=True)
class FactWrite:
    """One long-term memory a consolidation writes: new (sources marked merged into it), or one
    source promoted in place (``promote``: its id; its text is unchanged)."""

    text: str
    content_hash: str
    memory_type: str
    source_ids: list[int]
    importance: float
    confidence: float
    access_count: int
    said_at: datetime | None
    occurred_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    conversation_id: str | None
    metadata: dict[str, Any]
    embedding: np.ndarray | None = None
    promote: int | None = None
    #: positions (in GroupWrite.facts) of the facts this one contradicts
    contradicts: list[int] = field(default_factory=list)
    #: the scope of its sources (a group never mixes scopes)
    agent_id: str | None = None
    run_id: str | None = None


@dataclass(slots=True)
class GroupWrite:
    """Everything one group's consolidation writes, decided before the transaction."""

    #: source id -> its updated_at when read (the write happens only if none changed)
    sources: dict[int, datetime]
    facts: list[FactWrite]
    method: str  # "llm" | "extractive"
    reason: str


# --- locks ---------------------------------------------------------------------------------------


@dataclass
class HeldLock:
    """What ``user_lock`` yields: who holds the lock, and whether a lease was lost while held."""

    user_id: str
    name: str
    owner: str
    #: SQLite only: set when a renewal found the lease taken over (it had expired: the holder was
    #: stalled for longer than ttl). The caller may check it before committing its results.
    lost: bool = False
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
