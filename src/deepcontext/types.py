"""Public data types: enums, input messages and the result models of the API.

The names and fields of DeepContext 0.1 (``AddResponse``, ``SearchResponse``,
``MemorySearchResult``, ``MemoryTier``, ``MemoryType``...) are kept; new fields are only added.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

__all__ = [
    "ActivityCall",
    "ActivityHit",
    "ActivityItem",
    "ActivityPage",
    "AddResponse",
    "DeletedMemoryInfo",
    "EntityInfo",
    "EntityType",
    "GraphNeighbourInfo",
    "HistoryEntry",
    "HistoryEvent",
    "LifecycleRun",
    "Memory",
    "MemoryListing",
    "MemoryPage",
    "MemorySearchResult",
    "MemoryStatus",
    "MemoryTier",
    "MemoryType",
    "Message",
    "Provenance",
    "RelationInfo",
    "RowCounts",
    "SearchResponse",
    "ToolAction",
    "Turn",
    "UpdatedMemory",
    "UserInfo",
]


class MemoryTier(str, Enum):
    """Hierarchical tiers. Working: verbatim recent turns; short-term: extracted facts and events;
    long-term: consolidated knowledge."""

    WORKING = "working"
    SHORT_TERM = "short_term"
    LONG_TERM = "long_term"


class MemoryType(str, Enum):
    SEMANTIC = "semantic"  # stable facts: "Ana works at Acme"
    EPISODIC = "episodic"  # time-bound events: "Ana moved to Lisbon on 3 May 2024"
    PROCEDURAL = "procedural"  # how-to knowledge: "To deploy, run make release"


class MemoryStatus(str, Enum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"  # replaced by a newer version (superseded_by points at it)
    MERGED = "merged"  # consolidated into a long-term memory (superseded_by points at it)
    DECAYED = "decayed"  # importance fell under the threshold
    DELETED = "deleted"  # soft-deleted by a user or by cleanup


class EntityType(str, Enum):
    PERSON = "person"
    ORGANIZATION = "organization"
    LOCATION = "location"
    PRODUCT = "product"
    TECHNOLOGY = "technology"
    DATE = "date"
    EVENT = "event"
    CONCEPT = "concept"
    PREFERENCE = "preference"
    OTHER = "other"


class ToolAction(str, Enum):
    """What happens to a candidate memory when it meets the existing ones."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    REPLACE = "REPLACE"
    DELETE = "DELETE"
    NOOP = "NOOP"


class HistoryEvent(str, Enum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    REPLACE = "REPLACE"
    DELETE = "DELETE"
    NOOP = "NOOP"  # a duplicate was seen again: its turn was linked as extra provenance
    DECAY = "DECAY"
    MERGE = "MERGE"
    PROMOTE = "PROMOTE"  # a short-term memory moved to long-term alone, text unchanged
    EXPIRE = "EXPIRE"
    RESTORE = "RESTORE"
    IMPORT = "IMPORT"


class Message(BaseModel):
    """One conversation message as accepted by ``add``. Plain dicts with the same keys work too."""

    model_config = ConfigDict(extra="forbid")

    role: str
    content: str
    name: str | None = Field(default=None, description="Speaker name, e.g. 'Caroline'")
    timestamp: datetime | None = Field(default=None, description="When it was said (default: the add's time)")
    metadata: dict[str, Any] = Field(default_factory=dict)


class Provenance(BaseModel):
    """A turn a memory was derived from."""

    turn_id: int
    conversation_id: str
    role: str
    speaker: str | None = None
    said_at: datetime


class Turn(BaseModel):
    """A message stored verbatim: a node of its conversation's DAG."""

    id: int
    user_id: str
    conversation_id: str
    role: str
    name: str | None = None
    content: str
    said_at: datetime
    created_at: datetime
    kind: str = "message"
    parent_ids: list[int] = Field(default_factory=list)
    archived: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_id: str | None = Field(default=None, description="The agent the turn belongs to, inside its user")
    run_id: str | None = Field(default=None, description="The run (session) the turn belongs to")


class Memory(BaseModel):
    """A memory with everything known about it."""

    id: int
    user_id: str
    text: str
    memory_type: MemoryType
    tier: MemoryTier
    status: MemoryStatus
    importance: float
    confidence: float
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    said_at: datetime | None = Field(default=None, description="When the source turn was said")
    mention_count: int = Field(default=1, description="How many times it was said (re-mentions reinforce it)")
    occurred_at: datetime | None = Field(default=None, description="When the fact is about")
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    superseded_by: int | None = None
    conversation_id: str | None = None
    source: str = Field(default="rules", description="What produced it: turn, rules, llm, user, consolidation, import")
    consolidated_from: list[int] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    sources: list[Provenance] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    pinned: bool = False
    tags: list[str] = Field(default_factory=list)
    agent_id: str | None = Field(default=None, description="The agent the memory belongs to, inside its user")
    run_id: str | None = Field(default=None, description="The run (session) the memory belongs to")

    @property
    def is_active(self) -> bool:
        return self.status is MemoryStatus.ACTIVE


class MemoryPage(BaseModel):
    """One page of ``list``. Pass ``next_cursor`` back as ``cursor`` for the next page."""

    total: int
    memories: list[Memory]
    next_cursor: str | None = None


class HistoryEntry(BaseModel):
    id: int
    memory_id: int
    event: HistoryEvent
    old_text: str | None = None
    new_text: str | None = None
    actor: str = "system"
    reason: str | None = None
    created_at: datetime
    details: dict[str, Any] = Field(default_factory=dict)


class MemorySearchResult(BaseModel):
    """A single search result (DeepContext 0.1 fields first)."""

    memory_id: int
    text: str
    memory_type: MemoryType
    tier: MemoryTier
    score: float = Field(ge=0.0, le=1.0, description="Calibrated relevance: the estimated chance that this result is relevant")
    importance: float = 0.5
    confidence: float = 0.8
    created_at: datetime
    connections: list[int] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # added in 0.2
    said_at: datetime | None = None
    occurred_at: datetime | None = None
    conversation_id: str | None = None
    sources: list[Provenance] = Field(default_factory=list)
    legs: dict[str, int] = Field(
        default_factory=dict, description="Rank of this result in each retrieval leg and in the fusion (fused)"
    )
    rrf_score: float = 0.0
    similarity: float | None = Field(
        default=None,
        description="Cosine of the query with this result (best of its turn's memories), when the vector leg found it",
    )
    access_count: int = 0
    superseded_by: int | None = Field(
        default=None, description="Set on an older value (include_superseded): the memory that replaced it"
    )
    valid_to: datetime | None = Field(default=None, description="When what it says stopped being true")
    agent_id: str | None = None
    run_id: str | None = None


class SearchResponse(BaseModel):
    query: str
    user_id: str
    total: int
    results: list[MemorySearchResult]
    took_ms: float | None = None


class AddResponse(BaseModel):
    """What an ``add`` did (DeepContext 0.1 fields first)."""

    semantic_facts: list[str] = Field(default_factory=list)
    episodic_facts: list[str] = Field(default_factory=list)
    entities_found: list[str] = Field(default_factory=list)
    relationships_found: int = 0
    memories_added: int = 0
    memories_updated: int = 0
    memories_replaced: int = 0
    # added in 0.2
    procedural_facts: list[str] = Field(default_factory=list)
    memories_deleted: int = 0
    memories_unchanged: int = 0
    memory_ids: list[int] = Field(default_factory=list, description="Ids of memories written by this add")
    turn_ids: list[int] = Field(default_factory=list, description="Ids of the stored turns, in message order")
    conversation_id: str = "default"


class EntityInfo(BaseModel):
    id: int
    name: str
    entity_type: EntityType
    mention_count: int
    first_seen_at: datetime
    last_seen_at: datetime


class RelationInfo(BaseModel):
    source: str
    relation: str
    target: str
    strength: float
    mention_count: int


class ActivityHit(BaseModel):
    """One result of a recorded search, as it was returned."""

    memory_id: int
    rank: int = Field(description="1 is the first result")
    score: float
    similarity: float | None = None
    legs: dict[str, int] = Field(default_factory=dict, description="Rank in each retrieval leg and in the fusion")
    text: str = Field(description="The memory's text when it was returned")


class ActivityItem(BaseModel):
    """Something a recorded ``context`` call put in the context, or left out (``cause`` set)."""

    part: str
    id: str
    memory_id: int | None = None
    tokens: int | None = None
    score: float | None = None
    why: str = ""
    text: str = Field(default="", description="What it showed (left out: the start of its text)")
    cause: str | None = Field(default=None, description="Why it was left out: budget, relevance or duplicate")


class ActivityCall(BaseModel):
    """A recorded ``search`` or ``context`` call: who made it, with what, and what it gave."""

    id: int
    user_id: str
    kind: Literal["search", "context"]
    via: str = Field(description="python, rest, mcp or cli")
    key_id: str | None = Field(default=None, description="The API key that made it (REST and MCP)")
    agent_id: str | None = None
    run_id: str | None = None
    conversation_id: str | None = None
    query: str
    params: dict[str, Any] = Field(default_factory=dict, description="The call's other parameters")
    took_ms: float | None = None
    created_at: datetime
    results: list[ActivityHit] = Field(default_factory=list, description="Search results, or a context's search candidates")
    included: list[ActivityItem] = Field(default_factory=list, description="What a context included, in text order")
    left_out: list[ActivityItem] = Field(default_factory=list, description="What a context considered and left out")
    total_tokens: int | None = None


class ActivityPage(BaseModel):
    """One page of a user's recorded calls, newest first. Pass ``next_cursor`` back as ``cursor``."""

    calls: list[ActivityCall]
    next_cursor: str | None = None


# --- plain results -------------------------------------------------------------------------------
# DeepContext 0.1 answered these calls with dicts, and its users index them; typed dicts keep that
# and give editors and type checkers the keys.


class UpdatedMemory(TypedDict):
    """``DeepContext.update``'s answer."""

    memory_id: int
    text: str
    status: Literal["updated"]


class DeletedMemoryInfo(TypedDict):
    """``DeepContext.delete``'s answer."""

    memory_id: int
    status: Literal["deleted"]


class MemoryListing(TypedDict):
    """``DeepContext.list_memories``'s page (offset paging, DeepContext 0.1's form)."""

    total: int
    limit: int
    offset: int
    #: each memory as JSON (``Memory.model_dump(mode="json")``)
    memories: list[dict[str, Any]]


class UserInfo(TypedDict):
    """``DeepContext.get_user``'s answer."""

    user_id: str
    #: the display name memories use for the user (None: "User")
    name: str | None


class GraphNeighbourInfo(TypedDict):
    """One entity of ``DeepContext.get_entity_graph``'s breadth-first walk."""

    entity: str
    entity_type: str
    #: the relation that reached it (None for the entity asked about)
    relation: str | None
    depth: int
    strength: float
    #: the entity it was reached from
    via: str | None
    #: "out" (via -> entity) or "in"; None for the entity asked about
    direction: str | None


class LifecycleRun(TypedDict):
    """What a lifecycle run (``run_lifecycle``, ``consolidate``) did for one user."""

    user_id: str
    #: memories whose importance the forgetting curve lowered
    memories_decayed: int
    #: of those, memories that fell under decay_min_importance (status decayed)
    memories_deactivated: int
    #: short-term memories that moved to long-term: merged into a new memory or promoted alone
    memories_consolidated: int
    #: of those, memories promoted alone (same row, tier long_term)
    memories_promoted: int
    #: new long-term memories written by merges
    long_term_created: int
    #: groups of two or more memories consolidated
    groups: int
    #: groups not written because a source changed meanwhile (tried again next run)
    groups_skipped: int
    #: groups merged offline because the LLM failed
    llm_fallbacks: int
    consolidation_ran: bool
    #: "llm" or "extractive" when consolidation ran
    method: str | None
    #: faded memories soft-deleted by cleanup
    memories_cleaned: int
    #: memories purged for good after the retention period
    purged: int
    #: expired memories purged
    expired: int
    #: entities removed with the last memories mentioning them
    entities_purged: int
    took_ms: float


#: rows per table (``stats``, ``delete_user``, ``import_records``): keyed by table name, since the
#: tables a database holds grow with its schema
RowCounts: TypeAlias = dict[str, int]
