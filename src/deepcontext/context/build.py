"""Assembling a context: gather the four parts at once, fit them to the budget, render the text.

The text is the parts in the order pinned, memories, tiers, conversation, each under a ``##``
header line, items one per line::

    ## Relevant memories
    - [said 2025-05-01, event 2025-06-10] Ana flies to Lisbon on June 10
    ## Conversation so far (oldest first)
    user: Can you book the hotel?

Within a part: priority order, tier order (state, notes, reference, cache, history), or oldest
first; always by data (ranks, ids, positions), never by timing: the same data gives the same text.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from deepcontext.context import gather
from deepcontext.context.packing import Candidate, PackResult, PartSpec, pack
from deepcontext.context.results import (
    PARTS,
    ContextItem,
    ContextPart,
    ContextResult,
    ContextShares,
    LeftOutItem,
)
from deepcontext.context.tierstore import TIER_PREFIX, load_tier_snapshot
from deepcontext.context.tokens import TokenCounter
from deepcontext.query.schema import MemorySchema
from deepcontext.retrieve.config import SearchConfig
from deepcontext.retrieve.search import hybrid_search
from deepcontext.services.validation import parse_filters
from deepcontext.store.interface import MemoryFilters

if TYPE_CHECKING:
    from deepcontext.context.assembly import ContextService

__all__ = ["TITLES", "build_context"]

#: the header line of each part
TITLES: dict[str, str] = {
    "pinned": "Pinned memories",
    "memories": "Relevant memories",
    "tiers": "Working memory (sections relevant to the query)",
    "conversation": "Conversation so far (oldest first)",
}
#: left-out items reported per part and cause at most (the counts are always complete)
MAX_REPORTED = 50
_PREVIEW = 200


def _header(name: str) -> str:
    return f"\n## {TITLES[name]}\n"


async def build_context(
    ctx: ContextService,
    query: str,
    user_id: str,
    conversation_id: str | None,
    *,
    budget: int,
    shares: ContextShares,
    schema: MemorySchema | None,
    min_intent: float | None,
    memory_limit: int,
    min_similarity: float,
    max_nodes: int,
    track_access: bool = True,
    filters: MemoryFilters | None = None,
) -> ContextResult:
    """The context (inputs validated by :meth:`ContextService.context`)."""
    weights = shares.normalised()
    now = ctx.clock.now()
    store, embedder = ctx.store, ctx.embedder
    schema = schema or MemorySchema(sections=["context"])
    filters = filters if filters is not None else parse_filters()

    async def none() -> None:
        return None

    qvec = await asyncio.to_thread(embedder.embed_one, query) if weights["memories"] > 0 else None
    # ungrouped: a turn and the facts derived from it are separate candidates (see gather); no
    # neighbour turns: one that only its neighbour lifts fails the relevance check below, after
    # taking the place of a result that might have passed it
    config = SearchConfig.from_settings(ctx.settings).model_copy(update={"group_by_source": False, "neighbour_turns": False})
    pinned, hits, snapshot, path = await asyncio.gather(
        asyncio.to_thread(gather.pinned_memories, store, user_id, now) if weights["pinned"] > 0 else none(),
        asyncio.to_thread(hybrid_search, store, user_id, query, qvec, limit=memory_limit, filters=filters, config=config, now=now)
        if qvec is not None
        else none(),
        asyncio.to_thread(load_tier_snapshot, store, user_id) if weights["tiers"] > 0 else none(),
        ctx.dialogue.path(user_id, conversation_id, max_nodes=max_nodes)
        if conversation_id is not None and weights["conversation"] > 0
        else none(),
    )
    if pinned and (filters.agent_ids is not None or filters.run_ids is not None):  # only the asked scopes
        pinned = [
            m for m in pinned
            if (filters.agent_ids is None or m.agent_id in filters.agent_ids)
            and (filters.run_ids is None or m.run_id in filters.run_ids)
        ]  # fmt: skip

    irrelevant: list[tuple[Candidate, str]] = []
    memories: list[Candidate] = []
    if hits:
        intent = await asyncio.to_thread(gather.memory_intent, query, hits, schema)
        bar = schema.confidence_threshold if min_intent is None else min_intent
        unsure = [h for h in hits if intent[h.memory.id].score < bar]
        # the vector leg's cosine where it found the memory (ungrouped: the memory's own); embedded
        # here only for the others
        sims = {h.memory.id: h.similarity for h in unsure if h.similarity is not None}
        missing = [h for h in unsure if h.similarity is None]
        if missing and qvec is not None:
            values = await asyncio.to_thread(gather.similarities, embedder, qvec, [h.memory.text for h in missing])
            sims.update({h.memory.id: s for h, s in zip(missing, values, strict=True)})
        memories, bad = gather.memory_candidates(hits, intent, sims, bar, min_similarity)
        pinned_ids = {f"memory:{m.id}" for m in pinned or []}
        irrelevant += [(c, why) for c, why in bad if c.id not in pinned_ids]  # the pinned part has them
    tiers: list[Candidate] = []
    if snapshot is not None:
        tiers, bad = await asyncio.to_thread(gather.tier_candidates, query, snapshot, schema, min_intent, TIER_PREFIX)
        irrelevant += bad

    counter = TokenCounter(embedder)
    specs = [
        PartSpec("pinned", TITLES["pinned"], gather.pinned_candidates(pinned or [], conversation_id)),
        PartSpec("memories", TITLES["memories"], memories, duplicate=gather.is_duplicate_memory),
        PartSpec("tiers", TITLES["tiers"], tiers),
        PartSpec("conversation", TITLES["conversation"], gather.conversation_candidates(path), contiguous=True),
    ]
    packed = await asyncio.to_thread(_pack, specs, budget, weights, counter)
    text, text_tokens = await asyncio.to_thread(_render, packed, counter)

    chosen_ids = [int(c.meta["memory_id"]) for p in ("pinned", "memories") for c in packed.chosen[p]]
    if chosen_ids and track_access and not store.read_only:
        ctx.tasks.spawn(asyncio.to_thread(store.bump_access, user_id, chosen_ids, now))

    return ContextResult(
        query=query,
        user_id=user_id,
        conversation_id=conversation_id,
        budget_tokens=budget,
        total_tokens=packed.total,
        text_tokens=text_tokens,
        token_counter=counter.description,
        text=text,
        parts=_parts(specs, packed, weights, irrelevant),
        left_out=_left_out(packed, irrelevant),
    )


def _pack(specs: list[PartSpec], budget: int, weights: dict[str, float], counter: TokenCounter) -> PackResult:
    for spec in specs:
        spec.header_tokens = counter.count(_header(spec.name))
    return pack(specs, budget, weights, counter)


def _render(packed: PackResult, counter: TokenCounter) -> tuple[str, int]:
    pieces: list[str] = []
    for name in PARTS:
        items = sorted(packed.chosen.get(name, []), key=lambda c: c.order)
        if not items:
            continue
        pieces.append(_header(name))
        pieces.extend(c.text + "\n" for c in items)
    text = "".join(pieces).strip("\n")
    return text, counter.count(text)


def _item(c: Candidate) -> ContextItem:
    return ContextItem(
        part=c.part,  # type: ignore[arg-type]
        id=c.id,
        text=c.text,
        tokens=c.tokens,
        score=c.score,
        why=c.why,
        clipped=c.clipped,
        memory_id=c.meta.get("memory_id"),
        said_at=c.meta.get("said_at"),
        occurred_at=c.meta.get("occurred_at"),
        tier=c.meta.get("tier"),
        key=c.meta.get("key"),
        node_id=c.meta.get("node_id"),
        turn_ids=list(c.meta.get("turn_ids") or []),
    )


def _parts(
    specs: list[PartSpec], packed: PackResult, weights: dict[str, float], irrelevant: list[tuple[Candidate, str]]
) -> list[ContextPart]:
    by_name = {s.name: s for s in specs}
    out: list[ContextPart] = []
    for name in PARTS:
        counts: dict[str, int] = {}
        for c, cause, _ in packed.left_out:
            if c.part == name:
                counts[cause] = counts.get(cause, 0) + 1
        n_irrelevant = sum(1 for c, _ in irrelevant if c.part == name)
        if n_irrelevant:
            counts["relevance"] = n_irrelevant
        items = sorted(packed.chosen.get(name, []), key=lambda c: c.order)
        out.append(
            ContextPart(
                name=name,  # type: ignore[arg-type]
                title=TITLES[name],
                share=weights[name],
                allotted_tokens=packed.allotted.get(name, 0),
                tokens=packed.used.get(name, 0),
                header_tokens=by_name[name].header_tokens if items else 0,
                items=[_item(c) for c in items],
                left_out=dict(sorted(counts.items())),
            )
        )
    return out


def _left_out(packed: PackResult, irrelevant: list[tuple[Candidate, str]]) -> list[LeftOutItem]:
    """Left-out items, part by part: budget, duplicates, then relevance (each in priority order)."""
    rows = [(c, cause, why) for c, cause, why in packed.left_out]
    rows += [(c, "relevance", why) for c, why in irrelevant]
    reported: dict[tuple[str, str], int] = {}
    out: list[LeftOutItem] = []
    rank = {p: i for i, p in enumerate(PARTS)}
    causes = {"budget": 0, "duplicate": 1, "relevance": 2}
    for c, cause, why in sorted(rows, key=lambda r: (rank[r[0].part], causes[r[1]])):
        n = reported.get((c.part, cause), 0)
        if n >= MAX_REPORTED:
            continue
        reported[(c.part, cause)] = n + 1
        flat = " ".join(c.text.split())
        out.append(
            LeftOutItem(
                part=c.part,  # type: ignore[arg-type]
                id=c.id,
                preview=flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…",
                tokens=c.tokens if cause != "relevance" else None,
                score=c.score,
                cause=cause,  # type: ignore[arg-type]
                why=why,
                memory_id=c.meta.get("memory_id"),
                tier=c.meta.get("tier"),
                key=c.meta.get("key"),
                node_id=c.meta.get("node_id"),
            )
        )
    return out
