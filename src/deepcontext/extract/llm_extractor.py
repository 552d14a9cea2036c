"""LLM extraction behind the :class:`~deepcontext.extract.interface.Extractor` seam.

:class:`LLMExtractor` turns messages into facts (semantic, episodic with dates, procedural), entities
and relations, each citing the messages it came from; items citing no message of the batch are
rejected (dropped, counted in the result's ``rejected``, logged), never returned. It raises the
:class:`~deepcontext.errors.LLMError` of a failed call (after the router's retries and the one repair
of :meth:`~deepcontext.llm.LLM.complete_json`) and never writes anything.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator

from deepcontext.errors import ConfigurationError
from deepcontext.extract.compound import split_compound
from deepcontext.extract.interface import (
    ExtractedEntity,
    ExtractedFact,
    ExtractedRelationship,
    ExtractionContext,
    ExtractionResult,
    Extractor,
    MessageIn,
)
from deepcontext.language.unnamed import UNNAMED, parsed, written
from deepcontext.llm import prompts
from deepcontext.llm.client import LLM
from deepcontext.llm.structured import shorten
from deepcontext.llm.tasks import format_turn
from deepcontext.types import EntityType, MemoryType

__all__ = [
    "ExtractionAnswer",
    "LLMExtractionResult",
    "LLMExtractor",
    "Rejection",
    "parse_occurred_at",
]

logger = logging.getLogger("deepcontext.extract")


# --- what the LLM is asked to return ---------------------------------------------------------------


def _as_list(v: Any) -> Any:
    if v is None:
        return []
    return [v] if isinstance(v, (int, str)) else v


class _Fact(BaseModel):
    text: str
    type: str = Field(default="semantic", validation_alias=AliasChoices("type", "memory_type"))
    importance: float = 0.5
    confidence: float = 0.8
    entities: list[str] = Field(default_factory=list)
    source_indices: list[int] = Field(
        default_factory=list, validation_alias=AliasChoices("source_indices", "sources", "source_index")
    )
    occurred_at: str | None = None

    @field_validator("entities", "source_indices", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _as_list(v)


class _Entity(BaseModel):
    name: str
    type: str = Field(default="other", validation_alias=AliasChoices("type", "entity_type"))
    source_indices: list[int] = Field(
        default_factory=list, validation_alias=AliasChoices("source_indices", "sources", "source_index")
    )

    @field_validator("source_indices", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _as_list(v)


class _Relation(BaseModel):
    source: str
    relation: str
    target: str
    source_indices: list[int] = Field(
        default_factory=list, validation_alias=AliasChoices("source_indices", "sources", "source_index")
    )

    @field_validator("source_indices", mode="before")
    @classmethod
    def _lists(cls, v: Any) -> Any:
        return _as_list(v)


class ExtractionAnswer(BaseModel):
    """The JSON the extraction prompt asks for."""

    facts: list[_Fact] = Field(default_factory=list)
    entities: list[_Entity] = Field(default_factory=list)
    relations: list[_Relation] = Field(default_factory=list, validation_alias=AliasChoices("relations", "relationships"))


# --- results -----------------------------------------------------------------------------------------


class Rejection(BaseModel):
    """An extracted item that was not returned, and why."""

    kind: Literal["fact", "entity", "relationship"]
    text: str
    reason: str
    cited: list[int] = Field(default_factory=list)


class LLMExtractionResult(ExtractionResult):
    """An :class:`ExtractionResult` that also lists the items rejected during validation."""

    rejected: list[Rejection] = Field(default_factory=list)


# --- normalisation helpers ----------------------------------------------------------------------------

_MEMORY_TYPES = {
    "semantic": MemoryType.SEMANTIC,
    "fact": MemoryType.SEMANTIC,
    "preference": MemoryType.SEMANTIC,
    "episodic": MemoryType.EPISODIC,
    "event": MemoryType.EPISODIC,
    "procedural": MemoryType.PROCEDURAL,
    "procedure": MemoryType.PROCEDURAL,
    "howto": MemoryType.PROCEDURAL,
    "how-to": MemoryType.PROCEDURAL,
    "how_to": MemoryType.PROCEDURAL,
    "instruction": MemoryType.PROCEDURAL,
}

_ENTITY_SYNONYMS = {
    "people": EntityType.PERSON,
    "user": EntityType.PERSON,
    "org": EntityType.ORGANIZATION,
    "organisation": EntityType.ORGANIZATION,
    "company": EntityType.ORGANIZATION,
    "place": EntityType.LOCATION,
    "city": EntityType.LOCATION,
    "country": EntityType.LOCATION,
    "tech": EntityType.TECHNOLOGY,
    "tool": EntityType.TECHNOLOGY,
    "software": EntityType.TECHNOLOGY,
    "time": EntityType.DATE,
}


def _memory_type(raw: str) -> MemoryType:
    return _MEMORY_TYPES.get(raw.strip().lower(), MemoryType.SEMANTIC)


def _entity_type(raw: str) -> EntityType:
    key = raw.strip().lower()
    try:
        return EntityType(key)
    except ValueError:
        return _ENTITY_SYNONYMS.get(key, EntityType.OTHER)


def _unit(value: float, default: float) -> float:
    """A score in 0..1: 0..10 and 0..100 scales are rescaled, the rest clamped."""
    if value != value:  # NaN
        return default
    if 1.0 < value <= 10.0:
        value /= 10.0
    elif 10.0 < value <= 100.0:
        value /= 100.0
    return min(1.0, max(0.0, value))


def _snake(relation: str) -> str:
    out = re.sub(r"[\s\-/]+", "_", relation.strip().lower())
    return re.sub(r"_+", "_", out).strip("_")


def parse_occurred_at(raw: str | None) -> tuple[datetime | None, str | None]:
    """Parse an LLM's date: ``YYYY-MM-DD``, ``YYYY-MM``, ``YYYY`` or ISO 8601 with a time.

    Returns ``(datetime in UTC or None, precision: "time" | "day" | "month" | "year" | None)``; naive
    times are taken as UTC.
    """
    if not raw or not isinstance(raw, str):
        return None, None
    text = raw.strip()
    try:
        if re.fullmatch(r"\d{4}", text):
            return datetime(int(text), 1, 1, tzinfo=UTC), "year"
        if re.fullmatch(r"\d{4}-\d{2}", text):
            y, m = text.split("-")
            return datetime(int(y), int(m), 1, tzinfo=UTC), "month"
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.fromisoformat(text).replace(tzinfo=UTC), "day"
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None, None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC), "time"


# --- the extractor ------------------------------------------------------------------------------------


class LLMExtractor(Extractor):
    """Extraction by an LLM. ``await extractor.extract(messages, context)``.

    Long batches are split into windows of at most ``max_messages_per_call`` messages and
    ``max_chars_per_call`` characters, extracted concurrently (the router bounds the concurrency),
    each window seeing the messages before it as context.
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        max_messages_per_call: int = 40,
        max_chars_per_call: int = 24_000,
        context_messages: int = 8,
        max_fact_chars: int = 2_000,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(llm, LLM):
            raise ConfigurationError("LLMExtractor needs an LLM (see deepcontext.llm.build_llm)")
        if max_messages_per_call < 1 or max_chars_per_call < 100 or context_messages < 0:
            raise ConfigurationError("LLMExtractor: bad window limits")
        self.llm = llm
        self.max_messages_per_call = max_messages_per_call
        self.max_chars_per_call = max_chars_per_call
        self.context_messages = context_messages
        self.max_fact_chars = max_fact_chars
        self.timeout = timeout
        #: items rejected since this extractor was built
        self.rejected_total = 0

    def _windows(self, messages: list[MessageIn]) -> list[list[MessageIn]]:
        windows: list[list[MessageIn]] = []
        current: list[MessageIn] = []
        size = 0
        for m in messages:
            if current and (len(current) >= self.max_messages_per_call or size + len(m.content) > self.max_chars_per_call):
                windows.append(current)
                current, size = [], 0
            current.append(m)
            size += len(m.content)
        if current:
            windows.append(current)
        return windows

    def _prompt(self, window: list[MessageIn], earlier: list[MessageIn], context: ExtractionContext) -> list[dict[str, str]]:
        parts = [f"Current time: {prompts.format_time(context.now)}"]
        if context.user_name:
            parts.append(
                f"The user's name is {context.user_name}: facts about an unnamed user turn call them {context.user_name}."
            )
        if context.summary:
            parts.append(f"Summary of the conversation so far:\n{context.summary}")
        if context.known_entities:
            parts.append("Entities already known: " + ", ".join(context.known_entities[:100]))
        if earlier:
            parts.append("Earlier messages (context only, do not cite):\n" + "\n".join(format_turn(m) for m in earlier))
        parts.append("Messages to extract from:\n" + "\n".join(format_turn(m, m.index) for m in window))
        return [
            {"role": "system", "content": prompts.EXTRACT_SYSTEM},
            {"role": "user", "content": "\n\n".join(parts)},
        ]

    async def extract(self, messages: list[MessageIn], context: ExtractionContext) -> LLMExtractionResult:
        """Facts, entities and relations of ``messages``; raises :class:`LLMError` if the LLM fails."""
        if not messages:
            return LLMExtractionResult()
        windows = self._windows(list(messages))
        calls = []
        for n, window in enumerate(windows):
            before = list(context.recent_messages)
            for prev in windows[:n]:
                before.extend(prev)
            earlier = before[-self.context_messages :] if self.context_messages else []
            calls.append(self.llm.complete_json(self._prompt(window, earlier, context), ExtractionAnswer, timeout=self.timeout))
        answers = await asyncio.gather(*calls)
        result = LLMExtractionResult()
        for window, answer in zip(windows, answers, strict=True):
            self._collect(answer, window, result)
        _merge_duplicates(result)
        if result.rejected:
            self.rejected_total += len(result.rejected)
            logger.warning(
                "LLM extraction for user %s: %d item(s) rejected: %s",
                context.user_id,
                len(result.rejected),
                "; ".join(f"{r.kind}: {r.reason}" for r in result.rejected[:10]),
            )
        return result

    def _collect(self, answer: ExtractionAnswer, window: list[MessageIn], result: LLMExtractionResult) -> None:
        valid = {m.index for m in window}
        speakers = {m.index: m.speaker for m in window}

        def cite(kind: Literal["fact", "entity", "relationship"], text: str, indices: list[int]) -> list[int] | None:
            cited = sorted({i for i in indices if i in valid})
            if not cited:
                reason = "cites no message of the batch" if not indices else f"cites unknown message(s) {indices}"
                result.rejected.append(Rejection(kind=kind, text=shorten(text, 200) or "", reason=reason, cited=indices))
                return None
            return cited

        for f in answer.facts:
            text = f.text.strip()
            if not text:
                result.rejected.append(Rejection(kind="fact", text="", reason="empty text", cited=f.source_indices))
                continue
            if len(text) > self.max_fact_chars:
                result.rejected.append(
                    Rejection(kind="fact", text=shorten(text, 200) or "", reason="text too long", cited=f.source_indices)
                )
                continue
            cited = cite("fact", text, f.source_indices)
            if cited is None:
                continue
            occurred_at, precision = parse_occurred_at(f.occurred_at)
            metadata: dict[str, Any] = {"extractor": "llm"}
            if precision:
                metadata["occurred_at_precision"] = precision
            elif f.occurred_at:
                metadata["occurred_at_text"] = f.occurred_at
            entities = list(dict.fromkeys(e.strip() for e in f.entities if e and e.strip()))
            # a compound the model did not split is split as the rules split theirs, so a later change
            # of one of its facts leaves the others
            speaker = speakers.get(cited[0], UNNAMED)
            parts = [written(p) for p in split_compound(parsed(text, speaker), speaker)]
            for part in parts:
                low = part.lower()
                result.facts.append(
                    ExtractedFact(
                        text=part,
                        memory_type=_memory_type(f.type),
                        importance=_unit(f.importance, 0.5),
                        confidence=_unit(f.confidence, 0.8),
                        entities=entities if len(parts) == 1 else [e for e in entities if e.lower() in low],
                        source_indices=cited,
                        occurred_at=occurred_at,
                        metadata=dict(metadata),
                    )
                )
        for e in answer.entities:
            name = e.name.strip()
            if not name:
                continue
            cited = cite("entity", name, e.source_indices)
            if cited is None:
                continue
            result.entities.append(ExtractedEntity(name=name, entity_type=_entity_type(e.type), source_indices=cited))
        for r in answer.relations:
            source, target, relation = r.source.strip(), r.target.strip(), _snake(r.relation)
            if not (source and target and relation):
                result.rejected.append(
                    Rejection(kind="relationship", text=f"{r.source} {r.relation} {r.target}", reason="incomplete")
                )
                continue
            cited = cite("relationship", f"{source} {relation} {target}", r.source_indices)
            if cited is None:
                continue
            result.relationships.append(
                ExtractedRelationship(source=source, target=target, relation=relation, source_indices=cited)
            )


def _merge_duplicates(result: LLMExtractionResult) -> None:
    """One fact per text and one entity per name (case-insensitive); entities named by facts or
    relations but not listed are added with type ``other``."""
    facts: dict[str, ExtractedFact] = {}
    for f in result.facts:
        key = " ".join(f.text.casefold().split())
        if key in facts:
            kept = facts[key]
            kept.source_indices = sorted(set(kept.source_indices) | set(f.source_indices))
            kept.entities = list(dict.fromkeys([*kept.entities, *f.entities]))
            kept.importance = max(kept.importance, f.importance)
        else:
            facts[key] = f
    result.facts = list(facts.values())
    entities: dict[str, ExtractedEntity] = {}
    for e in result.entities:
        key = e.name.casefold()
        if key in entities:
            kept_e = entities[key]
            kept_e.source_indices = sorted(set(kept_e.source_indices) | set(e.source_indices))
            if kept_e.entity_type is EntityType.OTHER:
                kept_e.entity_type = e.entity_type
        else:
            entities[key] = e
    mentioned: list[tuple[str, list[int]]] = [(n, f.source_indices) for f in result.facts for n in f.entities]
    mentioned += [(r.source, r.source_indices) for r in result.relationships]
    mentioned += [(r.target, r.source_indices) for r in result.relationships]
    for name, indices in mentioned:
        key = name.casefold()
        if key not in entities:
            entities[key] = ExtractedEntity(name=name, entity_type=EntityType.OTHER, source_indices=list(indices))
    result.entities = list(entities.values())
