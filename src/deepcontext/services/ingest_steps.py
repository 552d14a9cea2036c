"""The steps of ingest between extraction and the write: candidates, exact duplicates, embedding,
nearest stored memories, near-duplicates in the batch, and the plan's memories, changes and graph.
Classification is in :mod:`deepcontext.services.ingest_classify`."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.extract.interface import Decision, ExistingMemory, ExtractedFact, ExtractionResult, MessageIn
from deepcontext.extract.slots import Slot
from deepcontext.language.standing import HARD_KINDS, STANDING_KEY, admits, standing_kind
from deepcontext.language.standing_model import StandingModel
from deepcontext.language.unnamed import parsed, written
from deepcontext.services.updates import Conflict, slot_metadata, slots_of
from deepcontext.settings import DeepContextSettings
from deepcontext.store.interface import AddPlan, EntityUpsert, MemoryChange, MemoryFilters, NewMemory, RelationUpsert, Store
from deepcontext.text import STOPWORDS, content_hash, entity_norm, word_tokens
from deepcontext.types import EntityType, HistoryEvent, MemoryTier, MemoryType

__all__ = [
    "MUTATIONS",
    "Candidate",
    "Counts",
    "build_candidates",
    "drop_exact_duplicates",
    "embed",
    "find_neighbours",
    "mark_standing",
    "merge_near_duplicates",
    "plan_graph",
    "plan_memories",
    "referenced",
    "turn_importance",
    "turn_memory_text",
]

log = logging.getLogger("deepcontext.ingest")

#: classifier actions that change an existing memory (at most one fact of an add may change a memory)
MUTATIONS = frozenset({"UPDATE", "REPLACE", "DELETE"})
#: rows of the in-batch similarity matrix computed at a time
_DEDUP_BLOCK = 512

#: what an add did to existing memories: noop, update, replace, delete
Counts = dict[str, int]


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
    #: the user's message a turn memory stands for (read again once it is embedded)
    user_message: MessageIn | None = None


def turn_memory_text(msg: MessageIn, user_name: str | None = None) -> str:
    """How a message reads as a memory of its own: ``Speaker: content`` (an unnamed user's turn
    under the user's display name when there is one)."""
    speaker = msg.name or (user_name if msg.role == "user" and user_name else msg.speaker)
    return f"{speaker}: {msg.content.strip()}"


def turn_importance(msg: MessageIn, *, binding: bool = False) -> float:
    """A message's importance as a raw memory: low for filler, higher for substantial user turns.

    A short turn that states a standing fact binding every decision (an allergy, a diet, a
    constraint, an instruction: "I get seasick easily.") is not filler: it counts as the shortest
    substantial turn. A short liking ("I love it!") stays filler.
    """
    n = len([t for t in word_tokens(msg.content) if t not in STOPWORDS])
    if n < 3:
        if not binding:
            return 0.1
        n = 3
    base = 0.35 if msg.role == "user" else 0.3
    return min(0.5, base + 0.01 * min(n, 15))


def referenced(plan: AddPlan) -> set[int]:
    """Ids of existing memories a plan changes or links to."""
    ids = {nm.supersedes for nm in plan.memories if nm.supersedes is not None}
    ids |= {o for nm in plan.memories for o in nm.also_supersedes}
    return ids | {ch.memory_id for ch in plan.changes}


def build_candidates(
    msgs: list[MessageIn],
    result: ExtractionResult,
    metadata: dict[str, Any],
    user_name: str | None,
    *,
    turn_memories: bool,
) -> list[Candidate]:
    """One candidate per extracted fact, after one turn memory per user / assistant message."""
    out: list[Candidate] = []
    by_msg: dict[int, list[str]] = {}
    for e in result.entities:
        for i in e.source_indices:
            by_msg.setdefault(i, []).append(e.name)
    if turn_memories:
        for m in msgs:
            if m.role not in ("user", "assistant"):
                continue
            kind = standing_kind(m.content) if m.role == "user" else None
            out.append(
                Candidate(
                    text=turn_memory_text(m, user_name),
                    memory_type=MemoryType.EPISODIC,
                    tier=MemoryTier.WORKING,
                    importance=turn_importance(m, binding=kind in HARD_KINDS),
                    confidence=1.0,
                    sources=[m.index],
                    entities=list(dict.fromkeys(by_msg.get(m.index, []))),
                    said_at=m.said_at,
                    is_turn=True,
                    metadata={**metadata, STANDING_KEY: kind} if kind else dict(metadata),
                    user_message=m if m.role == "user" else None,
                )
            )
    for f in result.facts:
        speaker = str(f.metadata.get("speaker") or msgs[f.source_indices[0]].speaker)
        slots = slots_of(f.text.strip(), speaker)
        kind = standing_kind(parsed(f.text, speaker)) if f.memory_type is not MemoryType.PROCEDURAL else None
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


async def drop_exact_duplicates(store: Store, plan: AddPlan, candidates: list[Candidate], counts: Counts) -> list[Candidate]:
    """Exact duplicates: within the batch their provenance merges; one already stored becomes a NOOP
    with the new turns as provenance. Returns the candidates left."""
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
    stored = await asyncio.to_thread(store.find_active_by_hash, plan.user_id, list(unique), plan.now, scope=scope)
    fresh: list[Candidate] = []
    for h, c in unique.items():
        if h in stored:
            plan.changes.append(
                MemoryChange(memory_id=stored[h], action=HistoryEvent.NOOP, reason="seen again", source_turn_indices=c.sources)
            )
            counts["noop"] += 1
        else:
            fresh.append(c)
    return fresh


async def embed(embedder: Embedder, fresh: list[Candidate]) -> np.ndarray:
    """Embed the candidates in one batch (each keeps its vector); returns the vectors."""
    vecs = await asyncio.to_thread(embedder.embed, [c.text for c in fresh])
    for c, v in zip(fresh, vecs, strict=True):
        c.vector = v
    return vecs


def mark_standing(model: StandingModel | None, fresh: list[Candidate]) -> None:
    """The user's turns and the facts in which the rules found no standing fact, read by the
    embedding model (chat states them in words no rule lists; a fact is one statement of a longer
    message); a binding kind lifts a short turn's importance."""
    todo = [
        c for c in fresh
        if STANDING_KEY not in c.metadata
        and (c.user_message is not None or (not c.is_turn and c.memory_type is not MemoryType.PROCEDURAL))
    ]  # fmt: skip
    if model is None or not todo:
        return
    for c, kind in zip(todo, model.kinds_of(np.stack([c.vector for c in todo])), strict=True):  # type: ignore[misc]
        said = c.user_message.content if c.user_message is not None else c.text
        if kind is not None and admits(said, kind):
            c.metadata = {**c.metadata, STANDING_KEY: kind}
            if kind in HARD_KINDS and c.user_message is not None:
                c.importance = turn_importance(c.user_message, binding=True)


async def find_neighbours(store: Store, plan: AddPlan, fresh: list[Candidate], vecs: np.ndarray, k: int) -> None:
    """Each candidate's ``k`` nearest stored memories, in one batch per kind: facts meet facts
    (short and long term); raw turns only look for connections."""
    agents = (plan.agent_id,) if plan.agent_id is not None else None
    runs = (plan.run_id,) if plan.run_id is not None else None
    fact_filter = MemoryFilters(tiers=(MemoryTier.SHORT_TERM, MemoryTier.LONG_TERM), agent_ids=agents, run_ids=runs)
    near: list[list[tuple[int, float]]] = [[] for _ in fresh]
    for is_turn, flt in ((False, fact_filter), (True, MemoryFilters(agent_ids=agents, run_ids=runs))):
        idx = [i for i, c in enumerate(fresh) if c.is_turn is is_turn]
        if idx:
            rows = await asyncio.to_thread(store.vector_search_batch, plan.user_id, vecs[idx], k, flt, plan.now)
            for i, row in zip(idx, rows, strict=True):
                near[i] = row
    ids = sorted({mid for row in near for mid, _ in row})
    found = await asyncio.to_thread(store.get_memories, plan.user_id, ids, details=False) if ids else []
    texts = {m.id: m for m in found}
    for c, row in zip(fresh, near, strict=True):
        # read from the store, so not validated again (a few thousand per batch)
        c.neighbours = [
            ExistingMemory.model_construct(
                id=mid, text=texts[mid].text, memory_type=texts[mid].memory_type, similarity=sim, said_at=texts[mid].said_at
            )
            for mid, sim in row
            if mid in texts
        ]


def merge_near_duplicates(facts: list[Candidate], threshold: float) -> tuple[list[Candidate], int]:
    """Facts of one batch at least ``threshold`` similar to an earlier kept fact are merged into the
    first such fact (sources and entities). Returns the kept facts and how many were merged. Only
    the pairs above the threshold are visited: distinct facts cost one matrix product."""
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


@dataclass(slots=True)
class _Writer:
    """Turns candidates into the plan's new memories (shared fields in one place)."""

    settings: DeepContextSettings
    source: str
    expires_at: datetime | None
    conversation_id: str

    def new(self, c: Candidate, **kw: Any) -> NewMemory:
        s = self.settings
        return NewMemory(
            text=kw.pop("text", c.text),
            content_hash=kw.pop("content_hash", c.hash),
            memory_type=c.memory_type,
            tier=c.tier,
            importance=c.importance,
            confidence=c.confidence,
            embedding=c.vector,
            source="turn" if c.is_turn else self.source,
            said_at=c.said_at,
            occurred_at=c.occurred_at,
            valid_from=c.occurred_at or c.said_at,
            expires_at=self.expires_at,
            conversation_id=self.conversation_id,
            metadata=c.metadata,
            source_turn_indices=c.sources,
            entity_names=[n for e in c.entities if (n := entity_norm(e))],
            links=[(n.id, n.similarity) for n in c.neighbours if n.similarity >= s.connection_similarity_threshold][
                : s.max_connections_per_memory
            ],
            **kw,
        )


async def plan_memories(
    embedder: Embedder,
    plan: AddPlan,
    fresh: list[Candidate],
    kept: list[Candidate],
    decisions: list[Decision],
    counts: Counts,
    *,
    settings: DeepContextSettings,
    source: str,
    expires_at: datetime | None,
    conversation_id: str,
) -> None:
    """The plan's new memories and changes: every fresh turn memory, then each kept fact as its
    decision says (a changed text is embedded again)."""
    writer = _Writer(settings, source, expires_at, conversation_id)
    reembed: list[tuple[NewMemory, str]] = []
    #: existing memory id -> the new version superseding it in this plan (None: deleted)
    changed: dict[int, NewMemory | None] = {}
    claimed = {d.memory_id for d in decisions if d.action in MUTATIONS and d.memory_id is not None}
    for c in fresh:
        if c.is_turn:
            plan.memories.append(writer.new(c))
    noops: list[tuple[Candidate, Decision]] = []
    for c, d in zip(kept, decisions, strict=True):
        action = d.action
        if action == "ADD":
            plan.memories.append(writer.new(c, reason=d.reason))
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
            text = written((d.text or c.text).strip())  # a merge an LLM wrote says "the user" too
            nm = writer.new(c, text=text, content_hash=content_hash(text), supersedes=d.memory_id, event=event, reason=d.reason)
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
        vecs = await asyncio.to_thread(embedder.embed, [t for _, t in reembed])
        for (nm, _), v in zip(reembed, vecs, strict=True):
            nm.embedding = v


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


def plan_graph(plan: AddPlan, result: ExtractionResult, candidates: list[Candidate]) -> None:
    """The plan's entities (extracted, and named by candidates or relations) and relations."""
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
