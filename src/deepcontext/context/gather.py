"""The candidates of each part of a context, rendered as they appear in the text.

- pinned: the user's active, unexpired memories with ``pinned`` set (key memories of the
  conversation graph that must go into every context), this conversation's first, then by
  importance, newest first;
- memories: the hybrid search's results for the query, with their dates; a result counts as
  relevant when its intent score (the share of the query's terms its text contains, scored like tier
  sections) reaches ``min_intent``, or its embedding is close enough to the query's (cosine >=
  ``min_similarity``): one common word, such as the user's name, is not enough;
- tiers: every entry of the user's deepcq tiers (a state section, a note key, the reference data, a
  cache entry, a history turn), scored by the query package's intent scoring (its name and keywords
  count, as in deepcq); included at or above ``min_intent`` (default: the schema's
  ``confidence_threshold``, and ``free_text_threshold`` for cache and history entries);
- conversation: the nodes of the conversation's active path (summaries included), newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.context.packing import Candidate
from deepcontext.query.intent import Source, plan_for, schema_source, score_groups
from deepcontext.query.result import ScoreExplanation
from deepcontext.query.schema import TIER_NAMES, MemorySchema
from deepcontext.query.tiers import (
    AppState,
    History,
    LongTermStore,
    MemoryBackend,
    ReferenceData,
    SessionCache,
)
from deepcontext.retrieve.search import Hit
from deepcontext.types import Memory, MemoryTier

__all__ = [
    "PINNED_LIMIT",
    "conversation_candidates",
    "memory_candidates",
    "memory_line",
    "pinned_candidates",
    "pinned_memories",
    "tier_candidates",
]

#: at most this many pinned memories are read
PINNED_LIMIT = 200
_FREE_TEXT = ("cache", "history")
_UNBOUNDED = 1_000_000_000


# --- pinned ---------------------------------------------------------------------------------------
def pinned_memories(store: Any, user_id: str, now: datetime, limit: int = PINNED_LIMIT) -> list[Memory]:
    """Active, unexpired pinned memories of the user, by importance then newest first."""
    found: list[Memory] = store.pinned_memories(user_id, now, limit)
    return found


def _day(when: datetime | None) -> str | None:
    return when.strftime("%Y-%m-%d") if when is not None else None


def memory_line(text: str, said_at: datetime | None, occurred_at: datetime | None, created_at: datetime | None) -> str:
    """``- [said 2025-05-01, event 2025-06-10] text``: when it was said (else stored) and, when
    known and another day, when it happens."""
    said = _day(said_at)
    label = f"said {said}" if said else f"stored {_day(created_at)}" if created_at else ""
    event = _day(occurred_at)
    if event and event != said:
        label = f"{label}, event {event}" if label else f"event {event}"
    flat = " ".join(text.split())
    return f"- [{label}] {flat}" if label else f"- {flat}"


def _memory_meta(m: Memory) -> dict[str, Any]:
    return {"memory_id": m.id, "said_at": m.said_at, "occurred_at": m.occurred_at}


def pinned_candidates(memories: Sequence[Memory], conversation_id: str | None) -> list[Candidate]:
    """Pinned memories, this conversation's first (stable otherwise)."""
    ordered = sorted(memories, key=lambda m: 0 if conversation_id and m.conversation_id == conversation_id else 1)
    return [
        Candidate(
            part="pinned",
            id=f"memory:{m.id}",
            text=memory_line(m.text, m.said_at, m.occurred_at, m.created_at),
            score=round(m.importance, 4),
            why=f"pinned memory (importance {m.importance:.2f})",
            order=(i,),
            meta=_memory_meta(m),
        )
        for i, m in enumerate(ordered)
    ]


# --- retrieved memories ---------------------------------------------------------------------------
def similarities(embedder: Any, query_vector: np.ndarray, texts: list[str]) -> list[float]:
    """Cosine of each text with the query (vectors are normalised by the embedder)."""
    if not texts:
        return []
    vecs = embedder.embed(texts)
    return [float(x) for x in np.asarray(vecs, dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)]


def memory_intent(query: str, hits: Sequence[Hit], schema: MemorySchema) -> dict[int, ScoreExplanation]:
    """The intent score of each hit's text: the share of the query's terms it contains (stemmed,
    synonyms of the schema's vocabulary, CJK aware), as for tier sections."""
    groups = {str(h.memory.id): [Source("memory", 1.0, h.memory.text)] for h in hits}
    scored = score_groups(plan_for(query, schema), groups, schema)
    return {h.memory.id: scored[str(h.memory.id)] for h in hits}


def memory_candidates(
    hits: Sequence[Hit],
    intent: dict[int, ScoreExplanation],
    sims: dict[int, float],
    min_intent: float,
    min_similarity: float,
) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """(relevant candidates in priority order, [(irrelevant candidate, why)]).

    A hit is relevant when its intent score reaches ``min_intent`` or its cosine with the query
    reaches ``min_similarity`` (``sims``: computed for the hits below ``min_intent``). Priority is
    the search rank, except that a memory derived from a turn (a fact, an event with its date)
    moves ahead of that turn's verbatim memory, which then counts as a duplicate.
    """
    relevant: list[Candidate] = []
    irrelevant: list[tuple[Candidate, str]] = []
    for rank, h in enumerate(hits, start=1):
        m = h.memory
        legs = ", ".join(f"{leg} #{r}" for leg, r in sorted(h.legs.items()))
        e = intent[m.id]
        sim = sims.get(m.id)
        matched = ", ".join(e.matched_tokens + e.matched_anchors) or "nothing"
        evidence = f"intent {e.score:.2f} (matched: {matched})" + (f", similarity {sim:.2f}" if sim is not None else "")
        c = Candidate(
            part="memories",
            id=f"memory:{m.id}",
            text=memory_line(m.text, m.said_at, m.occurred_at, m.created_at),
            score=round(h.score, 6),
            why=f"search rank {rank} ({legs}); {evidence}",
            order=(rank,),
            meta={
                **_memory_meta(m),
                "turn_ids": [s.turn_id for s in m.sources],
                "verbatim": m.tier == MemoryTier.WORKING,
            },
        )
        if e.score >= min_intent or (sim is not None and sim >= min_similarity):
            relevant.append(c)
        else:
            shown = f"{sim:.2f}" if sim is not None else "not computed"
            irrelevant.append(
                (c, f"intent {e.score:.2f} < {min_intent:.2f} (matched: {matched}) and similarity {shown} < {min_similarity:.2f}")
            )
    return _derived_first(relevant), irrelevant


def _derived_first(cands: list[Candidate]) -> list[Candidate]:
    """Move each derived memory ahead of the first verbatim memory of the same turns."""
    out: list[Candidate] = []
    moved: set[str] = set()
    for i, c in enumerate(cands):
        if c.id in moved:
            continue
        if c.meta["verbatim"]:
            turns = set(c.meta["turn_ids"])
            for d in cands[i + 1 :]:
                if d.id not in moved and not d.meta["verbatim"] and turns & set(d.meta["turn_ids"]):
                    out.append(d)
                    moved.add(d.id)
        out.append(c)
    return out


def is_duplicate_memory(c: Candidate, chosen: dict[str, list[Candidate]]) -> str | None:
    """Shown already: as a pinned memory, as a turn of the conversation part, or (a verbatim turn)
    through a memory derived from it."""
    if any(p.id == c.id for p in chosen.get("pinned", ())):
        return "already among the pinned memories"
    if not c.meta.get("verbatim"):
        return None
    turns = set(c.meta.get("turn_ids") or ())
    if not turns:
        return None
    shown = {t for n in chosen.get("conversation", ()) for t in n.meta.get("turn_ids", ())}
    if turns <= shown:
        return "its turn is already in the conversation part"
    for d in chosen.get("memories", ()):
        if not d.meta.get("verbatim") and turns & set(d.meta.get("turn_ids") or ()):
            return f"a memory derived from its turn is shown ({d.id})"
    return None


# --- tiers ----------------------------------------------------------------------------------------
def _tier_entries(snapshot: MemoryBackend, prefix: str) -> list[tuple[str, str, str, str]]:
    """``(tier, key, rendered text, scored text)`` of every entry, tier by tier."""
    ns = {t: prefix + t for t in TIER_NAMES}
    state = AppState(snapshot, ns["state"])
    cache = SessionCache(_UNBOUNDED, backend=snapshot, namespace=ns["cache"])
    history = History(_UNBOUNDED, backend=snapshot, namespace=ns["history"])
    notes = LongTermStore(backend=snapshot, namespace=ns["notes"])
    reference = ReferenceData(backend=snapshot, namespace=ns["reference"])
    out: list[tuple[str, str, str, str]] = []
    for key, text in state.entries():
        out.append(("state", key, text.strip(), text))
    for key, text in notes.entries():
        out.append(("notes", key, text.strip(), text))
    for key, text in reference.entries():
        out.append(("reference", key, text.strip(), text))
    for (key, text), (_, value) in zip(cache.entries(), cache.items(), strict=True):
        out.append(("cache", key, text.strip(), f"{key}\n{value}"))
    turns = history.turns()
    for i, (key, text) in enumerate(history.entries()):
        previous = f"{turns[i - 1].text}\n" if i else ""  # a reply is read with the message it answers
        out.append(("history", key, text.strip(), previous + turns[i].text))
    return [e for e in out if e[2] and e[3].strip()]  # empty entries say nothing


def tier_candidates(
    query: str, snapshot: MemoryBackend, schema: MemorySchema, threshold: float | None, prefix: str
) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """(relevant tier entries by score, [(irrelevant entry, why)])."""
    entries = _tier_entries(snapshot, prefix)
    if not entries:
        return [], []
    weights = schema.tier_weights or {}
    groups: dict[str, list[Source]] = {}
    for i, (tier, key, _rendered, scored) in enumerate(entries):
        src = Source(tier, weights.get(tier, 1.0), scored)
        groups[str(i)] = [src] if tier in _FREE_TEXT else [schema_source(key, schema), src]
    explained = score_groups(plan_for(query, schema), groups, schema)
    structured_t = schema.confidence_threshold if threshold is None else threshold
    free_t = (
        threshold
        if threshold is not None
        else schema.free_text_threshold
        if schema.free_text_threshold is not None
        else schema.confidence_threshold
    )
    relevant: list[Candidate] = []
    irrelevant: list[tuple[Candidate, str]] = []
    tier_rank = {t: n for n, t in enumerate(TIER_NAMES)}
    for i, (tier, key, rendered, _scored) in enumerate(entries):
        e = explained[str(i)]
        bar = free_t if tier in _FREE_TEXT else structured_t
        text = rendered
        if tier == "state" and not text.lstrip().lower().startswith(schema.header(key).lower()):
            text = f"{schema.header(key)}\n{text}"  # a state entry stored without its header line
        matched = ", ".join(e.matched_tokens + e.matched_anchors) or "nothing"
        c = Candidate(
            part="tiers",
            id=f"{tier}:{key}",
            text=text,
            score=e.score,
            why=f"intent score {e.score:.2f} >= {bar:.2f} (matched: {matched})",
            order=(tier_rank[tier], i),
            meta={"tier": tier, "key": key},
        )
        if e.score >= bar:
            relevant.append(c)
        else:
            irrelevant.append((c, f"intent score {e.score:.2f} < {bar:.2f} (matched: {matched})"))
    relevant.sort(key=lambda c: (-(c.score or 0.0), c.order))
    return relevant, irrelevant


# --- conversation ---------------------------------------------------------------------------------
def conversation_candidates(path: Any) -> list[Candidate]:
    """The path's nodes, newest first (rendered oldest first)."""
    nodes = list(getattr(path, "nodes", []) or [])
    total = len(nodes)
    out: list[Candidate] = []
    for pos, node in enumerate(nodes):
        lines = []
        for role, content in node.messages:
            flat = content.strip()
            if role == "summary":
                lines.append(f"(summary of earlier turns) {flat}")
            else:
                lines.append(f"{role}: {flat}")
        if not lines:
            continue
        age = total - pos  # 1 = the newest
        kind = "summary of earlier rounds" if node.is_summary else "round"
        out.append(
            Candidate(
                part="conversation",
                id=f"node:{node.id}",
                text="\n".join(lines),
                score=None,
                why=f"conversation path: {kind}, {age} from the end",
                order=(pos,),
                meta={"node_id": node.id, "turn_ids": list(node.turn_ids)},
            )
        )
    out.reverse()
    return out
