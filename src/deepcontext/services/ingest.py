"""Ingest: messages -> turns + memories + graph, as one transaction.

Pipeline (nothing is written until the last step; no transaction is open while the extractor,
the embedder or an LLM works):

1. validate the messages (``ValidationError`` before anything else);
2. extract candidate facts, entities and relations (rules offline, an LLM when configured);
3. add one *turn memory* per message (working tier, the message verbatim with its speaker), so the
   raw turn stays searchable whatever the extractor found;
4. drop exact duplicates (content hash: already stored -> NOOP with the new turn as provenance);
5. embed the rest in one batch; find each candidate's nearest stored memories in one batch;
6. classify facts against those neighbours: ADD / UPDATE / REPLACE / DELETE / NOOP (offline: NOOP
   above ``dedup_threshold`` cosine, else ADD; with an LLM classifier its answer is validated: ids
   must be among the neighbours shown, else the offline rule decides);
7. write everything with :meth:`Store.apply_add` in one transaction.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.embed.base import Embedder
from deepcontext.extract.base import (
    Classifier,
    Decision,
    ExistingMemory,
    ExtractedFact,
    ExtractionContext,
    ExtractionResult,
    Extractor,
    MessageIn,
)
from deepcontext.settings import DeepContextSettings
from deepcontext.store.base import (
    AddOutcome,
    AddPlan,
    EntityUpsert,
    MemoryChange,
    MemoryFilters,
    NewMemory,
    NewTurn,
    RelationUpsert,
    Store,
)
from deepcontext.text import STOPWORDS, content_hash, entity_norm, word_tokens
from deepcontext.types import (
    AddResponse,
    EntityType,
    HistoryEvent,
    MemoryTier,
    MemoryType,
    ToolAction,
)

__all__ = ["Candidate", "IngestService", "offline_decision", "turn_importance", "turn_memory_text"]

log = logging.getLogger("deepcontext.ingest")

_NEIGHBOURS = 5


def turn_memory_text(msg: MessageIn) -> str:
    """How a message reads as a memory of its own: ``Speaker: content``."""
    return f"{msg.speaker}: {msg.content.strip()}"


def turn_importance(msg: MessageIn) -> float:
    """A message's importance as a raw memory: low for filler, higher for substantial user turns."""
    content_words = [t for t in word_tokens(msg.content) if t not in STOPWORDS]
    if len(content_words) < 3:
        return 0.1
    base = 0.35 if msg.role == "user" else 0.3
    return min(0.5, base + 0.01 * min(len(content_words), 15))


def offline_decision(candidate: ExtractedFact, neighbours: list[ExistingMemory], threshold: float) -> Decision:
    """Without an LLM: a candidate at least ``threshold`` similar to a stored memory is NOOP."""
    for n in neighbours:
        if n.similarity >= threshold:
            return Decision(action="NOOP", memory_id=n.id, reason=f"duplicate of memory {n.id} (cosine {n.similarity:.3f})")
    return Decision(action="ADD")


@dataclass(slots=True)
class Candidate:
    text: str
    memory_type: MemoryType
    tier: MemoryTier
    importance: float
    confidence: float
    sources: list[int]  # message indices
    entities: list[str] = field(default_factory=list)
    occurred_at: datetime | None = None
    said_at: datetime | None = None
    is_turn: bool = False
    fact: ExtractedFact | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    hash: str = ""
    vector: np.ndarray | None = None
    neighbours: list[ExistingMemory] = field(default_factory=list)


class IngestService:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        settings: DeepContextSettings,
        *,
        classifier: Classifier | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.classifier = classifier
        self.settings = settings

    async def _db(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    # ------------------------------------------------------------------------------------------
    async def add(
        self,
        msgs: list[MessageIn],
        *,
        user_id: str,
        conversation_id: str,
        now: datetime,
        metadata: dict[str, Any],
        expires_at: datetime | None,
        infer: bool = True,
        actor: str = "system",
    ) -> AddResponse:
        context = ExtractionContext(user_id=user_id, conversation_id=conversation_id, now=now)
        result = await self.extractor.extract(msgs, context) if infer else ExtractionResult()
        result = self._sane(result, len(msgs))
        candidates = self._candidates(msgs, result, metadata)
        plan = AddPlan(user_id=user_id, conversation_id=conversation_id, now=now, actor=actor)
        plan.turns = [
            NewTurn(
                role=m.role,
                content=m.content,
                content_hash=content_hash(m.content, m.role, m.name or ""),
                said_at=m.said_at,
                name=m.name,
                metadata=dict(m.metadata),
            )
            for m in msgs
        ]
        counts = await self._plan_memories(plan, candidates, context, expires_at, conversation_id)
        self._plan_graph(plan, result, candidates)
        outcome: AddOutcome = await self._db(self.store.apply_add, plan)
        return self._response(plan, outcome, result, counts, conversation_id)

    # ------------------------------------------------------------------------------------------
    @staticmethod
    def _sane(result: ExtractionResult, n: int) -> ExtractionResult:
        """Drop extracted items that cite no real message (an extractor bug or an LLM invention)."""
        facts = []
        for f in result.facts:
            src = [i for i in f.source_indices if 0 <= i < n]
            if not src or not f.text.strip():
                log.warning("dropping extracted fact citing no message: %r", f.text[:80])
                continue
            facts.append(f.model_copy(update={"source_indices": src}))
        return ExtractionResult(facts=facts, entities=result.entities, relationships=result.relationships)

    def _candidates(self, msgs: list[MessageIn], result: ExtractionResult, metadata: dict[str, Any]) -> list[Candidate]:
        out: list[Candidate] = []
        by_msg: dict[int, list[str]] = {}
        for e in result.entities:
            for i in e.source_indices:
                by_msg.setdefault(i, []).append(e.name)
        if self.settings.store_turn_memories:
            for m in msgs:
                if m.role not in ("user", "assistant"):
                    continue
                out.append(
                    Candidate(
                        text=turn_memory_text(m),
                        memory_type=MemoryType.EPISODIC,
                        tier=MemoryTier.WORKING,
                        importance=turn_importance(m),
                        confidence=1.0,
                        sources=[m.index],
                        entities=list(dict.fromkeys(by_msg.get(m.index, []))),
                        said_at=m.said_at,
                        is_turn=True,
                        metadata=dict(metadata),
                    )
                )
        for f in result.facts:
            out.append(
                Candidate(
                    text=f.text.strip(),
                    memory_type=f.memory_type,
                    tier=MemoryTier.SHORT_TERM,
                    importance=f.importance,
                    confidence=f.confidence,
                    sources=list(dict.fromkeys(f.source_indices)),
                    entities=list(dict.fromkeys(f.entities)),
                    occurred_at=f.occurred_at,
                    said_at=max(msgs[i].said_at for i in f.source_indices),
                    fact=f,
                    metadata={**metadata, **f.metadata},
                )
            )
        for c in out:
            c.hash = content_hash(c.text)
        return out

    async def _plan_memories(
        self,
        plan: AddPlan,
        candidates: list[Candidate],
        context: ExtractionContext,
        expires_at: datetime | None,
        conversation_id: str,
    ) -> dict[str, int]:
        counts = {"noop": 0, "update": 0, "replace": 0, "delete": 0}
        s = self.settings
        now = plan.now

        # exact duplicates: within the batch (merge provenance) and already stored (NOOP)
        unique: dict[str, Candidate] = {}
        for c in candidates:
            first = unique.get(c.hash)
            if first is None:
                unique[c.hash] = c
            else:
                first.sources = list(dict.fromkeys(first.sources + c.sources))
                first.entities = list(dict.fromkeys(first.entities + c.entities))
        stored = await self._db(self.store.find_active_by_hash, plan.user_id, list(unique), now)
        fresh: list[Candidate] = []
        for h, c in unique.items():
            if h in stored:
                plan.changes.append(
                    MemoryChange(memory_id=stored[h], action=HistoryEvent.NOOP, reason="seen again", source_turn_indices=c.sources)
                )
                counts["noop"] += 1
            else:
                fresh.append(c)
        if not fresh:
            return counts

        # embed, then nearest stored memories for every candidate in one batch
        vecs = await asyncio.to_thread(self.embedder.embed, [c.text for c in fresh])
        for c, v in zip(fresh, vecs, strict=True):
            c.vector = v
        k = max(_NEIGHBOURS, s.max_connections_per_memory)
        # facts meet facts (short and long term); raw turns only look for connections
        fact_filter = MemoryFilters(tiers=(MemoryTier.SHORT_TERM, MemoryTier.LONG_TERM))
        near: list[list[tuple[int, float]]] = [[] for _ in fresh]
        for is_turn, flt in ((False, fact_filter), (True, MemoryFilters())):
            idx = [i for i, c in enumerate(fresh) if c.is_turn is is_turn]
            if idx:
                rows = await self._db(self.store.vector_search_batch, plan.user_id, vecs[idx], k, flt, now)
                for i, row in zip(idx, rows, strict=True):
                    near[i] = row
        ids = sorted({mid for row in near for mid, _ in row})
        texts = {m.id: m for m in await self._db(self.store.get_memories, plan.user_id, ids, details=False)} if ids else {}
        for c, row in zip(fresh, near, strict=True):
            c.neighbours = [
                ExistingMemory(
                    id=mid, text=texts[mid].text, memory_type=texts[mid].memory_type, similarity=sim, said_at=texts[mid].said_at
                )
                for mid, sim in row
                if mid in texts
            ]

        # near-duplicates inside the batch (facts only): keep the first, merge provenance
        facts = [c for c in fresh if not c.is_turn]
        kept: list[Candidate] = []
        if facts:
            fm = np.stack([c.vector for c in facts])  # type: ignore[misc]
            sims = fm @ fm.T
            for j, c in enumerate(facts):
                dup_of = next((i for i in range(j) if facts[i] in kept and sims[i, j] >= s.dedup_threshold), None)
                if dup_of is None:
                    kept.append(c)
                else:
                    facts[dup_of].sources = list(dict.fromkeys(facts[dup_of].sources + c.sources))
                    facts[dup_of].entities = list(dict.fromkeys(facts[dup_of].entities + c.entities))
                    counts["noop"] += 1

        decisions = await self._classify(kept, context)
        reembed: list[tuple[NewMemory, str]] = []

        def new_memory(c: Candidate, **kw: Any) -> NewMemory:
            return NewMemory(
                text=kw.pop("text", c.text),
                content_hash=kw.pop("content_hash", c.hash),
                memory_type=c.memory_type,
                tier=c.tier,
                importance=c.importance,
                confidence=c.confidence,
                embedding=c.vector,
                source="turn" if c.is_turn else self.extractor.name,
                said_at=c.said_at,
                occurred_at=c.occurred_at,
                valid_from=c.occurred_at or c.said_at,
                expires_at=expires_at,
                conversation_id=conversation_id,
                metadata=c.metadata,
                source_turn_indices=c.sources,
                entity_names=[entity_norm(e) for e in c.entities if entity_norm(e)],
                links=[
                    (n.id, n.similarity)
                    for n in c.neighbours
                    if n.similarity >= s.connection_similarity_threshold
                ][: s.max_connections_per_memory],
                **kw,
            )

        for c in fresh:
            if c.is_turn:
                plan.memories.append(new_memory(c))
        for c, d in zip(kept, decisions, strict=True):
            action = d.action
            if action == "ADD":
                plan.memories.append(new_memory(c, reason=d.reason))
            elif action == "NOOP":
                counts["noop"] += 1
                if d.memory_id is not None:
                    plan.changes.append(
                        MemoryChange(memory_id=d.memory_id, action=HistoryEvent.NOOP, reason=d.reason, source_turn_indices=c.sources)
                    )
            elif action == "DELETE":
                counts["delete"] += 1
                assert d.memory_id is not None
                plan.changes.append(
                    MemoryChange(memory_id=d.memory_id, action=HistoryEvent.DELETE, reason=d.reason, source_turn_indices=c.sources)
                )
            else:  # UPDATE / REPLACE: a new version supersedes the old one
                event = HistoryEvent.UPDATE if action == "UPDATE" else HistoryEvent.REPLACE
                counts["update" if action == "UPDATE" else "replace"] += 1
                text = (d.text or c.text).strip()
                nm = new_memory(c, text=text, content_hash=content_hash(text), supersedes=d.memory_id, event=event, reason=d.reason)
                nm.links = [(i, sim) for i, sim in nm.links if i != d.memory_id]
                if text != c.text:
                    reembed.append((nm, text))
                plan.memories.append(nm)
        if reembed:
            vecs2 = await asyncio.to_thread(self.embedder.embed, [t for _, t in reembed])
            for (nm, _), v in zip(reembed, vecs2, strict=True):
                nm.embedding = v
        return counts

    async def _classify(self, kept: list[Candidate], context: ExtractionContext) -> list[Decision]:
        threshold = self.settings.dedup_threshold
        offline = [offline_decision(c.fact or ExtractedFact(text=c.text), c.neighbours, threshold) for c in kept]
        if self.classifier is None or not kept:
            return offline
        proposals = await self.classifier.classify([c.fact or ExtractedFact(text=c.text) for c in kept], [c.neighbours for c in kept], context)
        if len(proposals) != len(kept):
            log.warning("classifier returned %d decisions for %d candidates; using the offline rule", len(proposals), len(kept))
            return offline
        out: list[Decision] = []
        claimed: set[int] = set()
        for c, d, fallback in zip(kept, proposals, offline, strict=True):
            out.append(self._validated(c, d, fallback, claimed))
        return out

    @staticmethod
    def _validated(c: Candidate, d: Decision, fallback: Decision, claimed: set[int]) -> Decision:
        """An LLM decision is applied only if it names one of the neighbours shown for this candidate
        (and no other candidate of the batch already claimed that memory)."""
        try:
            action = ToolAction(str(d.action).upper()).value
        except ValueError:
            return fallback.model_copy(update={"reason": f"rejected unknown action {d.action!r}; {fallback.reason or 'offline rule'}"})
        shown = {n.id for n in c.neighbours}
        if action == "ADD":
            return Decision(action="ADD", reason=d.reason)
        if action == "NOOP" and d.memory_id is None:
            return Decision(action="NOOP", reason=d.reason)
        if d.memory_id is None or d.memory_id not in shown or d.memory_id in claimed:
            why = "no id" if d.memory_id is None else f"id {d.memory_id} was not among the candidates shown"
            if d.memory_id in claimed:
                why = f"memory {d.memory_id} already changed by another fact of this add"
            return fallback.model_copy(update={"reason": f"rejected {action} ({why}); {fallback.reason or 'offline rule'}"})
        claimed.add(d.memory_id)
        return Decision(action=action, memory_id=d.memory_id, text=d.text, reason=d.reason)

    def _plan_graph(self, plan: AddPlan, result: ExtractionResult, candidates: list[Candidate]) -> None:
        ents: dict[str, EntityUpsert] = {}
        for e in result.entities:
            norm = entity_norm(e.name)
            if norm and norm not in ents:
                ents[norm] = EntityUpsert(name=e.name.strip(), norm_name=norm, entity_type=e.entity_type, attributes=e.attributes)
        names = [n for c in candidates for n in c.entities] + [x for r in result.relationships for x in (r.source, r.target)]
        for name in names:
            norm = entity_norm(name)
            if norm and norm not in ents:
                ents[norm] = EntityUpsert(name=name.strip(), norm_name=norm, entity_type=EntityType.OTHER)
        plan.entities = list(ents.values())
        plan.relations = [
            RelationUpsert(
                source_norm=entity_norm(r.source),
                target_norm=entity_norm(r.target),
                relation=r.relation.strip().lower().replace(" ", "_")[:128],
                properties=r.properties,
            )
            for r in result.relationships
            if entity_norm(r.source) and entity_norm(r.target) and r.relation.strip()
        ]

    @staticmethod
    def _response(
        plan: AddPlan, outcome: AddOutcome, result: ExtractionResult, counts: dict[str, int], conversation_id: str
    ) -> AddResponse:
        r = AddResponse(conversation_id=conversation_id, turn_ids=outcome.turn_ids)
        for f in result.facts:
            {
                MemoryType.SEMANTIC: r.semantic_facts,
                MemoryType.EPISODIC: r.episodic_facts,
                MemoryType.PROCEDURAL: r.procedural_facts,
            }[f.memory_type].append(f.text)
        r.entities_found = [e.name for e in plan.entities]
        r.relationships_found = len(plan.relations)
        for nm, mid, ins in zip(plan.memories, outcome.memory_ids, outcome.inserted, strict=True):
            if not ins:
                r.memories_unchanged += 1
                continue
            r.memory_ids.append(mid)
            if nm.event is HistoryEvent.UPDATE:
                r.memories_updated += 1
            elif nm.event is HistoryEvent.REPLACE:
                r.memories_replaced += 1
            else:
                r.memories_added += 1
        r.memories_deleted = counts["delete"]
        r.memories_unchanged += counts["noop"]
        return r
