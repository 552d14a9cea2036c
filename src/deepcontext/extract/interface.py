"""The extraction seam: messages in, candidate memories, entities and relations out.

Extractors never write anything. Every extracted item cites the messages it came from by their
position in the batch (``source_indices``); the ingest service maps those to stored turn ids.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from deepcontext.types import EntityType, MemoryType

__all__ = [
    "Classifier",
    "Decision",
    "ExistingMemory",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedRelationship",
    "ExtractionContext",
    "ExtractionResult",
    "Extractor",
    "MessageIn",
]


@dataclass(frozen=True, slots=True)
class MessageIn:
    """A validated message handed to an extractor."""

    index: int  # position in the add() batch
    role: str  # user | assistant | system | tool
    content: str
    said_at: datetime  # timezone-aware: the message's own timestamp, else the add's time
    name: str | None = None  # speaker name when known ("Caroline")
    turn_id: int | None = None  # stored turn id, when already known
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def speaker(self) -> str:
        """Who said it, for memory texts: the name if given, else 'User' / 'Assistant'."""
        return self.name or self.role.capitalize()


@dataclass(slots=True)
class ExtractionContext:
    """What an extractor may know beyond the messages themselves."""

    user_id: str
    conversation_id: str
    now: datetime
    recent_messages: list[MessageIn] = field(default_factory=list)  # earlier turns, oldest first
    summary: str | None = None  # the conversation's running summary, if any
    known_entities: list[str] = field(default_factory=list)
    user_name: str | None = None  # the user's display name: what memories call an unnamed user
    #: the one relative whose single-valued fact a "she" / "he" with no one named before can be about:
    #: "f|school" -> "daughter" when the user's daughter is the only girl or child whose school is stored
    kin_referents: dict[str, str] = field(default_factory=dict)


class ExtractedFact(BaseModel):
    text: str
    memory_type: MemoryType = MemoryType.SEMANTIC
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    entities: list[str] = Field(default_factory=list, description="Names of entities the fact mentions")
    source_indices: list[int] = Field(default_factory=list, description="Messages (batch positions) it comes from")
    occurred_at: datetime | None = Field(default=None, description="When the fact is about, if stated")
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExtractedEntity(BaseModel):
    name: str
    entity_type: EntityType = EntityType.OTHER
    attributes: dict[str, Any] = Field(default_factory=dict)
    source_indices: list[int] = Field(default_factory=list)


class ExtractedRelationship(BaseModel):
    source: str
    target: str
    relation: str = Field(description="snake_case verb phrase: works_at, lives_in, likes, has, ...")
    properties: dict[str, Any] = Field(default_factory=dict)
    source_indices: list[int] = Field(default_factory=list)


class ExtractionResult(BaseModel):
    facts: list[ExtractedFact] = Field(default_factory=list)
    entities: list[ExtractedEntity] = Field(default_factory=list)
    relationships: list[ExtractedRelationship] = Field(default_factory=list)

    # DeepContext 0.1 exposed the facts split by type
    @property
    def semantic(self) -> list[ExtractedFact]:
        return [f for f in self.facts if f.memory_type is MemoryType.SEMANTIC]

    @property
    def episodic(self) -> list[ExtractedFact]:
        return [f for f in self.facts if f.memory_type is MemoryType.EPISODIC]

    @property
    def procedural(self) -> list[ExtractedFact]:
        return [f for f in self.facts if f.memory_type is MemoryType.PROCEDURAL]


class Extractor(ABC):
    """Turns messages into candidate memories. One abstract method."""

    #: recorded as the ``source`` of the memories it produces
    name: str = "extractor"

    @abstractmethod
    async def extract(self, messages: list[MessageIn], context: ExtractionContext) -> ExtractionResult:
        """Extract facts, entities and relationships from ``messages``."""

    def wants_context(self, messages: list[MessageIn]) -> bool:
        """Whether the conversation's last turns are needed to read ``messages`` (e.g. a pronoun
        whose referent was named before)."""
        return False


# --- classification: what to do with a candidate when similar memories exist ----------------------


class ExistingMemory(BaseModel):
    """An active memory of the user, shown to a classifier next to a candidate."""

    id: int
    text: str
    memory_type: MemoryType
    similarity: float = Field(description="Cosine similarity to the candidate")
    said_at: datetime | None = None


class Decision(BaseModel):
    """A classifier's verdict on one candidate fact.

    ADD: store as new. UPDATE: the candidate refines ``memory_id`` (new version ``text``, old kept in
    history). REPLACE: the candidate contradicts ``memory_id`` and supersedes it. DELETE: the candidate
    says ``memory_id`` is no longer true (soft delete). NOOP: already known.
    ``memory_id`` must be one of the ids shown for that candidate.
    """

    action: str = Field(description="ADD | UPDATE | REPLACE | DELETE | NOOP")
    memory_id: int | None = None
    text: str | None = None
    reason: str | None = None


class Classifier(ABC):
    """Decides ADD / UPDATE / REPLACE / DELETE / NOOP for candidates against their nearest memories."""

    name: str = "classifier"

    @abstractmethod
    async def classify(
        self,
        candidates: list[ExtractedFact],
        neighbours: list[list[ExistingMemory]],
        context: ExtractionContext,
    ) -> list[Decision]:
        """One decision per candidate, in order. ``neighbours[i]`` are the memories shown for candidate i."""
