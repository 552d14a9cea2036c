"""Ingest: messages -> turns + memories + graph, as one transaction.

Pipeline (nothing is written until the last step; no transaction is open while the extractor,
the embedder or an LLM works):

1. validate the messages (``ValidationError`` before anything else);
2. extract candidate facts, entities and relations (rules offline, an LLM when configured; the LLM
   is also shown the conversation's running summary and its last turns);
3. add one *turn memory* per message (working tier, the message verbatim with its speaker), so the
   raw turn stays searchable whatever the extractor found;
4. drop exact duplicates (content hash: already stored -> NOOP with the new turn as provenance);
5. embed the rest in one batch; find each candidate's nearest stored memories in one batch;
6. classify facts against those neighbours: ADD / UPDATE / REPLACE / DELETE / NOOP (offline: NOOP
   above ``dedup_threshold`` cosine, else ADD; with an LLM classifier its answer is validated: ids
   must be among the neighbours shown for that candidate, a memory is changed by at most one fact
   of the add, else the offline rule decides);
7. write everything with :meth:`Store.apply_add` in one transaction. The store re-checks inside it
   that every memory the plan changes is still an active memory of the user; if another writer
   changed one meanwhile, the add is planned again from step 4 (the extraction is kept).

LLM failures (after the router's retries, fallback backends and the one JSON repair) raise the
:class:`~deepcontext.errors.LLMError` before anything is written, unless ``offline_fallback`` is on:
then a failed extraction is redone by the offline extractor and a failed classification is decided
by the offline rule.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from collections.abc import Sequence
from typing import Any

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import (
    LLMError,
    MemoryNotFoundError,
    ValidationError,
    WriteConflictError,
)
from deepcontext.extract.slots import Slot
from deepcontext.extract.standing import STANDING_KEY, standing_kind
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
from deepcontext.services.updates import SLOT_PREFIX, Conflict, conflicts, slot_metadata, slots_of
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
from deepcontext.store.ttlcache import TTLCache
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
#: earlier turns read for an offline extraction whose batch opens with a pronoun ("She ...")
_REFERENT_TURNS = 3
#: how often an add is planned before a conflict with concurrent writers is reported
_PLAN_ATTEMPTS = 3
#: classifier actions that change an existing memory (at most one fact of an add may change a memory)
_MUTATIONS = frozenset({"UPDATE", "REPLACE", "DELETE"})
#: rows of the in-batch similarity matrix computed at a time
_DEDUP_BLOCK = 512


def _referenced(plan: AddPlan) -> set[int]:
    """Ids of existing memories a plan changes or links to."""
    ids = {nm.supersedes for nm in plan.memories if nm.supersedes is not None}
    ids |= {o for nm in plan.memories for o in nm.also_supersedes}
    return ids | {ch.memory_id for ch in plan.changes}


def _redirect_noops(plan: AddPlan, changed: dict[int, NewMemory | None]) -> None:
    """NOOPs on memories this same add supersedes or deletes: the store applies changes after the
    new versions, when those memories are no longer active. A NOOP's turns become provenance of the
    new version (UPDATE / REPLACE); a NOOP on a memory the add deletes is dropped (its turn is kept)."""
    kept: list[MemoryChange] = []
    for ch in plan.changes:
        if ch.action is not HistoryEvent.NOOP or ch.memory_id not in changed:
            kept.append(ch)
            continue
        target = changed[ch.memory_id]
        if target is not None:
            target.source_turn_indices = list(dict.fromkeys(target.source_turn_indices + ch.source_turn_indices))
            target.source_turn_ids = list(dict.fromkeys(target.source_turn_ids + ch.source_turn_ids))
        else:
            log.info("NOOP on memory %s dropped: the same add deletes it", ch.memory_id)
    plan.changes = kept


def _merge_near_duplicates(facts: list[Candidate], threshold: float) -> tuple[list[Candidate], int]:
    """Facts of one batch at least ``threshold`` similar to an earlier kept fact are merged into the
    first such fact (sources and entities). Returns the kept facts and how many were merged.
    Only the pairs above the threshold are visited, so a batch of distinct facts costs one matrix
    product (run it off the event loop)."""
    if not facts:
        return [], 0
    fm = np.stack([c.vector for c in facts])  # type: ignore[misc]
    earlier: dict[int, list[int]] = {}  # fact -> the earlier facts close to it, in order
    for start in range(0, len(facts), _DEDUP_BLOCK):  # blocks of rows bound the memory
        block = fm[start : start + _DEDUP_BLOCK] @ fm.T >= threshold
        rows, cols = np.nonzero(np.triu(block, k=start + 1))
        for i, j in zip((rows + start).tolist(), cols.tolist(), strict=True):
            earlier.setdefault(j, []).append(i)
    kept = np.ones(len(facts), dtype=bool)
    for j in sorted(earlier):
        dup_of = next((i for i in earlier[j] if kept[i]), None)
        if dup_of is None:
            continue
        kept[j] = False
        first, c = facts[dup_of], facts[j]
        first.sources = list(dict.fromkeys(first.sources + c.sources))
        first.entities = list(dict.fromkeys(first.entities + c.entities))
    return [c for c, k in zip(facts, kept, strict=True) if k], int((~kept).sum())


def turn_memory_text(msg: MessageIn, user_name: str | None = None) -> str:
    """How a message reads as a memory of its own: ``Speaker: content`` (an unnamed user's turn
    under the user's display name when there is one)."""
    speaker = msg.name or (user_name if msg.role == "user" and user_name else msg.speaker)
    return f"{speaker}: {msg.content.strip()}"


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
    slots: list[Slot] = field(default_factory=list)
    #: stored memories holding another value of one of its slots (superseded offline)
    conflicts: list[Conflict] = field(default_factory=list)


class IngestService:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        settings: DeepContextSettings,
        *,
        classifier: Classifier | None = None,
        offline_extractor: Extractor | None = None,
        offline_fallback: bool = False,
        context_turns: int = 0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.extractor = extractor
        self.classifier = classifier
        self.settings = settings
        #: used instead of ``extractor`` when it raises an LLMError and ``offline_fallback`` is on
        self.offline_extractor = offline_extractor
        self.offline_fallback = offline_fallback
        #: earlier turns of the conversation (and its summary) shown to the extractor; 0: none
        self.context_turns = context_turns
        # display names (see user_name); a name set by another process is seen within the minute
        self._names: TTLCache[str] = TTLCache(60.0, max_entries=10_000)

    async def user_name(self, user_id: str, msgs: Sequence[MessageIn] = ()) -> str | None:
        """The user's display name: the one set, else the first name on the user's turns (stored, or
        in ``msgs``), else None."""
        name = self._names.get(user_id)
        if name is None:
            name = await self._db(self.store.user_name, user_id) or ""
            self._names.put(user_id, name)
        if not name:
            name = next((m.name for m in msgs if m.role == "user" and m.name), "") or ""
            if name:
                self._names.put(user_id, name)
        return name or None

    def name_changed(self, user_id: str, name: str) -> None:
        self._names.put(user_id, name)

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
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> AddResponse:
        context = ExtractionContext(user_id=user_id, conversation_id=conversation_id, now=now)
        extractor, classifier = self.extractor, self.classifier
        context.user_name = await self.user_name(user_id, msgs)
        if infer:
            if self.context_turns > 0:
                await self._load_context(context)
            elif msgs and extractor.wants_context(msgs):
                await self._load_context(context, _REFERENT_TURNS)
            try:
                result = await extractor.extract(msgs, context)
            except LLMError as exc:
                if not (self.offline_fallback and self.offline_extractor is not None):
                    raise
                log.warning("LLM extraction failed (%s); this add uses the offline extractor", exc)
                extractor, classifier = self.offline_extractor, None
                result = await extractor.extract(msgs, context)
        else:
            result = ExtractionResult()
        result = self._sane(result, len(msgs))
        for attempt in range(1, _PLAN_ATTEMPTS + 1):
            candidates = await asyncio.to_thread(self._candidates, msgs, result, metadata, context.user_name)
            plan = AddPlan(
                user_id=user_id, conversation_id=conversation_id, now=now, actor=actor, agent_id=agent_id, run_id=run_id
            )
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
            counts = await self._plan_memories(
                plan, candidates, context, expires_at, conversation_id, source=extractor.name, classifier=classifier
            )
            await asyncio.to_thread(self._plan_graph, plan, result, candidates)
            try:
                outcome: AddOutcome = await self._db(self.store.apply_add, plan)
            except MemoryNotFoundError as exc:
                if exc.memory_id not in _referenced(plan):
                    raise
                if attempt == _PLAN_ATTEMPTS:
                    raise WriteConflictError(
                        f"add for user {user_id!r}: memory {exc.memory_id} was changed by another writer while "
                        f"this add was being planned, {attempt} times in a row; nothing was written, retry the add",
                        user_id=user_id,
                    ) from exc
                log.info("memory %s changed while an add was planned; planning again", exc.memory_id)
                continue
            return self._response(plan, outcome, result, counts, conversation_id)
        raise AssertionError("unreachable")  # pragma: no cover

    async def derive(
        self,
        msgs: list[MessageIn],
        *,
        user_id: str,
        conversation_id: str,
        now: datetime,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        actor: str = "system",
    ) -> AddResponse:
        """Derive memories from turns that are stored already (``msgs[i].turn_id`` set; the
        dialogue writes its nodes as turns itself). The same steps as :meth:`add` from extraction
        on, with provenance to those turn ids; no turn is inserted. ``turn_ids`` of the response
        are the given ones."""
        turn_ids = [m.turn_id for m in msgs]
        if not msgs or any(t is None for t in turn_ids):
            raise ValidationError("derive needs messages of stored turns (turn_id set)", field="messages")
        ids = [int(t) for t in turn_ids if t is not None]
        msgs = [replace(m, index=i) for i, m in enumerate(msgs)]
        metadata = dict(metadata or {})
        context = ExtractionContext(user_id=user_id, conversation_id=conversation_id, now=now)
        extractor, classifier = self.extractor, self.classifier
        context.user_name = await self.user_name(user_id, msgs)
        if self.context_turns > 0:  # earlier turns only: the ones derived here are stored already
            await self._load_context(context)
            context.recent_messages = [
                m for m in context.recent_messages if m.turn_id is not None and m.turn_id < min(ids)
            ]
        try:
            result = await extractor.extract(msgs, context)
        except LLMError as exc:
            if not (self.offline_fallback and self.offline_extractor is not None):
                raise
            log.warning("LLM extraction failed (%s); this derive uses the offline extractor", exc)
            extractor, classifier = self.offline_extractor, None
            result = await extractor.extract(msgs, context)
        result = self._sane(result, len(msgs))
        for attempt in range(1, _PLAN_ATTEMPTS + 1):
            candidates = await asyncio.to_thread(self._candidates, msgs, result, metadata, context.user_name)
            plan = AddPlan(user_id=user_id, conversation_id=conversation_id, now=now, actor=actor)
            counts = await self._plan_memories(
                plan, candidates, context, expires_at, conversation_id, source=extractor.name, classifier=classifier
            )
            await asyncio.to_thread(self._plan_graph, plan, result, candidates)
            items: list[NewMemory | MemoryChange] = [*plan.memories, *plan.changes]
            for item in items:  # message indices -> the stored turns
                item.source_turn_ids = list(dict.fromkeys([*item.source_turn_ids, *(ids[i] for i in item.source_turn_indices)]))
                item.source_turn_indices = []
            try:
                outcome: AddOutcome = await self._db(self.store.apply_add, plan)
            except MemoryNotFoundError as exc:
                if exc.memory_id not in _referenced(plan):
                    raise
                if attempt == _PLAN_ATTEMPTS:
                    raise WriteConflictError(
                        f"derive for user {user_id!r}: memory {exc.memory_id} was changed by another writer while "
                        f"it was being planned, {attempt} times in a row; nothing was written, retry",
                        user_id=user_id,
                    ) from exc
                log.info("memory %s changed while a derive was planned; planning again", exc.memory_id)
                continue
            response = self._response(plan, outcome, result, counts, conversation_id)
            response.turn_ids = ids
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    async def _load_context(self, context: ExtractionContext, turns_wanted: int | None = None) -> None:
        """Fill the context with the conversation's summary and its last turns (before this add)."""
        from deepcontext.store.summaries import load_context

        summary, turns = await self._db(
            load_context, self.store, context.user_id, context.conversation_id, turns_wanted or self.context_turns
        )
        context.summary = summary
        context.recent_messages = [
            MessageIn(
                index=-len(turns) + i,  # before the batch: never citable
                role=t.role,
                content=t.content,
                said_at=t.said_at,
                name=t.name,
                turn_id=t.id,
            )
            for i, t in enumerate(turns)
        ]

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

    def _candidates(self, msgs: list[MessageIn], result: ExtractionResult, metadata: dict[str, Any],
                    user_name: str | None = None) -> list[Candidate]:
        out: list[Candidate] = []
        by_msg: dict[int, list[str]] = {}
        for e in result.entities:
            for i in e.source_indices:
                by_msg.setdefault(i, []).append(e.name)
        if self.settings.store_turn_memories:
            for m in msgs:
                if m.role not in ("user", "assistant"):
                    continue
                kind = standing_kind(m.content) if m.role == "user" else None
                out.append(
                    Candidate(
                        text=turn_memory_text(m, user_name),
                        memory_type=MemoryType.EPISODIC,
                        tier=MemoryTier.WORKING,
                        importance=turn_importance(m),
                        confidence=1.0,
                        sources=[m.index],
                        entities=list(dict.fromkeys(by_msg.get(m.index, []))),
                        said_at=m.said_at,
                        is_turn=True,
                        metadata={**metadata, STANDING_KEY: kind} if kind else dict(metadata),
                    )
                )
        for f in result.facts:
            speaker = str(f.metadata.get("speaker") or msgs[f.source_indices[0]].speaker)
            slots = slots_of(f.text.strip(), speaker)
            kind = standing_kind(f.text) if f.memory_type is not MemoryType.PROCEDURAL else None
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
                    metadata={**metadata, **f.metadata, **slot_metadata(slots), **({STANDING_KEY: kind} if kind else {})},
                    slots=slots,
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
        *,
        source: str,
        classifier: Classifier | None,
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
        # duplicates and neighbours are looked for among the memories the add's agent and run (when
        # given) would find in a search
        scope = (plan.agent_id, plan.run_id)
        stored = await self._db(self.store.find_active_by_hash, plan.user_id, list(unique), now, scope=scope)
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
        agents = (plan.agent_id,) if plan.agent_id is not None else None
        runs = (plan.run_id,) if plan.run_id is not None else None
        fact_filter = MemoryFilters(tiers=(MemoryTier.SHORT_TERM, MemoryTier.LONG_TERM), agent_ids=agents, run_ids=runs)
        near: list[list[tuple[int, float]]] = [[] for _ in fresh]
        for is_turn, flt in ((False, fact_filter), (True, MemoryFilters(agent_ids=agents, run_ids=runs))):
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
        kept, merged = await asyncio.to_thread(_merge_near_duplicates, [c for c in fresh if not c.is_turn], s.dedup_threshold)
        counts["noop"] += merged

        await self._find_conflicts(plan, kept, show=classifier is not None)
        decisions = await self._classify(kept, context, classifier)
        if classifier is None:
            decisions = self._supersede(kept, decisions)
        reembed: list[tuple[NewMemory, str]] = []
        #: existing memory id -> the new version superseding it in this plan (None: deleted)
        changed: dict[int, NewMemory | None] = {}

        def new_memory(c: Candidate, **kw: Any) -> NewMemory:
            return NewMemory(
                text=kw.pop("text", c.text),
                content_hash=kw.pop("content_hash", c.hash),
                memory_type=c.memory_type,
                tier=c.tier,
                importance=c.importance,
                confidence=c.confidence,
                embedding=c.vector,
                source="turn" if c.is_turn else source,
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

        claimed = {d.memory_id for d in decisions if d.action in _MUTATIONS and d.memory_id is not None}
        for c in fresh:
            if c.is_turn:
                plan.memories.append(new_memory(c))
        noops: list[tuple[Candidate, Decision]] = []
        for c, d in zip(kept, decisions, strict=True):
            action = d.action
            if action == "ADD":
                plan.memories.append(new_memory(c, reason=d.reason))
            elif action == "NOOP":
                noops.append((c, d))
            elif action == "DELETE":
                counts["delete"] += 1
                assert d.memory_id is not None
                changed[d.memory_id] = None
                plan.changes.append(
                    MemoryChange(memory_id=d.memory_id, action=HistoryEvent.DELETE, reason=d.reason, source_turn_indices=c.sources)
                )
            else:  # UPDATE / REPLACE: a new version supersedes the old one
                assert d.memory_id is not None
                event = HistoryEvent.UPDATE if action == "UPDATE" else HistoryEvent.REPLACE
                counts["update" if action == "UPDATE" else "replace"] += 1
                text = (d.text or c.text).strip()
                nm = new_memory(c, text=text, content_hash=content_hash(text), supersedes=d.memory_id, event=event, reason=d.reason)
                if any(x.memory.id == d.memory_id for x in c.conflicts):  # the same slot said again earlier
                    nm.also_supersedes = [x.memory.id for x in c.conflicts if x.memory.id not in claimed]
                    claimed.update(nm.also_supersedes)
                nm.links = [(i, sim) for i, sim in nm.links if i not in (d.memory_id, *nm.also_supersedes)]
                for other in nm.also_supersedes:
                    changed[other] = nm
                if text != c.text:
                    reembed.append((nm, text))
                changed[d.memory_id] = nm
                plan.memories.append(nm)
        for c, d in noops:
            counts["noop"] += 1
            if d.memory_id is not None:
                plan.changes.append(
                    MemoryChange(memory_id=d.memory_id, action=HistoryEvent.NOOP, reason=d.reason, source_turn_indices=c.sources)
                )
        if changed:
            _redirect_noops(plan, changed)
        if reembed:
            vecs2 = await asyncio.to_thread(self.embedder.embed, [t for _, t in reembed])
            for (nm, _), v in zip(reembed, vecs2, strict=True):
                nm.embedding = v
        return counts

    async def _find_conflicts(self, plan: AddPlan, kept: list[Candidate], *, show: bool) -> None:
        """Stored memories holding another value of a slot each candidate states (one read for the add).
        With a classifier they are shown to it beside the nearest memories."""
        with_slots = [c for c in kept if c.slots]
        if not with_slots:
            return
        keys = list(dict.fromkeys(SLOT_PREFIX + s.key for c in with_slots for s in c.slots))
        stored = await self._db(
            self.store.find_active_by_metadata_keys, plan.user_id, keys, plan.now, scope=(plan.agent_id, plan.run_id)
        )
        if not stored:
            return
        for c in with_slots:
            c.conflicts = conflicts(c.slots, stored, c.said_at)
        if not show:
            return
        extra = [x.memory for c in with_slots for x in c.conflicts]
        shown = {x.memory.id for c in with_slots for x in c.conflicts}
        vecs = await asyncio.to_thread(self.embedder.embed, [m.text for m in extra]) if extra else None
        sims = {m.id: v for m, v in zip(extra, vecs if vecs is not None else [], strict=True)}
        for c in with_slots:
            have = {n.id for n in c.neighbours}
            for x in c.conflicts:
                m = x.memory
                if m.id in have or m.id not in shown:
                    continue
                sim = float(np.dot(c.vector, sims[m.id])) if c.vector is not None else 0.0
                c.neighbours.append(
                    ExistingMemory(id=m.id, text=m.text, memory_type=m.memory_type, similarity=sim, said_at=m.said_at)
                )

    @staticmethod
    def _supersede(kept: list[Candidate], decisions: list[Decision]) -> list[Decision]:
        """Offline: a new fact stating another value of a single-valued fact (where someone lives, their
        job, relationship status, habitual drink...) replaces the stored memories holding the old value.
        Each memory is changed by at most one fact of the add."""
        claimed = {d.memory_id for d in decisions if d.action in _MUTATIONS and d.memory_id is not None}
        out: list[Decision] = []
        for c, d in zip(kept, decisions, strict=True):
            free = [x for x in c.conflicts if x.memory.id not in claimed]
            if d.action != "ADD" or not free:
                out.append(d)
                c.conflicts = []
                continue
            c.conflicts = free
            claimed.update(x.memory.id for x in free)
            out.append(Decision(action="REPLACE", memory_id=free[0].memory.id, reason=free[0].reason))
        return out

    async def _classify(
        self, kept: list[Candidate], context: ExtractionContext, classifier: Classifier | None
    ) -> list[Decision]:
        threshold = self.settings.dedup_threshold
        offline = [offline_decision(c.fact or ExtractedFact(text=c.text), c.neighbours, threshold) for c in kept]
        if classifier is None or not any(c.neighbours for c in kept):
            return offline
        facts = [c.fact or ExtractedFact(text=c.text) for c in kept]
        try:
            proposals = await classifier.classify(facts, [c.neighbours for c in kept], context)
        except LLMError as exc:
            if not self.offline_fallback:
                raise
            log.warning("LLM classification failed (%s); the offline rule decides this add", exc)
            return offline
        if len(proposals) != len(kept):
            log.warning("classifier returned %d decisions for %d candidates; using the offline rule", len(proposals), len(kept))
            return offline
        checked = [self._validated(c, d, fb) for c, d, fb in zip(kept, proposals, offline, strict=True)]
        # a memory is changed (UPDATE / REPLACE / DELETE) by at most one fact of the add: the first
        out: list[Decision] = []
        claimed: set[int] = set()
        for d, fb in zip(checked, offline, strict=True):
            target = d.memory_id
            if d.action in _MUTATIONS and target is not None:
                if target in claimed:
                    d = fb.model_copy(
                        update={
                            "reason": f"rejected {d.action}: memory {target} is already changed by another "
                            f"fact of this add; {fb.reason or 'offline rule'}"
                        }
                    )
                else:
                    claimed.add(target)
            out.append(d)
        return out

    @staticmethod
    def _validated(c: Candidate, d: Decision, fallback: Decision) -> Decision:
        """An LLM decision is applied only if its action is known and, for UPDATE / REPLACE / DELETE
        / NOOP, it names one of the neighbours shown for this candidate (stored memories of this
        user); otherwise the offline rule decides, and says why in the reason."""
        try:
            action = ToolAction(str(d.action).strip().upper()).value
        except ValueError:
            return fallback.model_copy(update={"reason": f"rejected unknown action {d.action!r}; {fallback.reason or 'offline rule'}"})
        shown = {n.id for n in c.neighbours}
        if action == "ADD":
            return Decision(action="ADD", reason=d.reason)
        if action == "NOOP" and d.memory_id is None:
            return Decision(action="NOOP", reason=d.reason)
        if d.memory_id is None or d.memory_id not in shown:
            why = "no id" if d.memory_id is None else f"id {d.memory_id} was not among the memories shown"
            return fallback.model_copy(update={"reason": f"rejected {action} ({why}); {fallback.reason or 'offline rule'}"})
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
