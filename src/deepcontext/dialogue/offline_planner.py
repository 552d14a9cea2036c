"""The planner used when no LLM plans: retrieval and recency decide, rules extract.

- ``selected_node_ids``: the anchors (their chains are loaded) plus the best-matching candidates
  that are not on the anchor's chain (at most ``max_extra``, above ``min_score``);
- ``nodes_to_pack``: the first anchor when its chain is longer than the context budget
  (``max_context_nodes``) and long enough to compress;
- ``memories_to_extract``: :func:`~deepcontext.dialogue.rules.extract_key_memories` over the new
  message (source: the node this round appends) and the last assistant reply (source: the anchor);
- ``memory_queries``: the message's first keywords.
"""

from __future__ import annotations

from deepcontext.dialogue.plan import ContextPlan, MemoryToExtract, PlanRequest
from deepcontext.dialogue.rules import extract_key_memories
from deepcontext.text import keyword_terms

__all__ = ["OfflinePlanner"]


class OfflinePlanner:
    """A deterministic :class:`~deepcontext.dialogue.plan.Planner` without a model."""

    def __init__(self, *, max_extra: int = 2, min_score: float = 0.34, max_queries: int = 6) -> None:
        self.max_extra = max_extra
        self.min_score = min_score
        self.max_queries = max_queries

    async def plan(self, request: PlanRequest) -> ContextPlan:
        on_chain = set(request.chain)
        extra = [
            c.id
            for c in sorted(request.candidates, key=lambda c: (-c.score, -c.id))
            if c.id not in on_chain and c.score >= self.min_score and c.id not in request.anchor_ids
        ][: self.max_extra]
        selected = list(dict.fromkeys([*request.anchor_ids, *extra]))

        pack: list[int] = []
        if request.anchor_ids and request.chain_length > max(request.max_context_nodes, request.keep_recent + 1):
            pack = [request.anchor_ids[0]]

        memories = [
            MemoryToExtract(content=m.content, tags=m.tags, pinned=m.pinned, packable=m.packable)
            for m in extract_key_memories(request.message, from_user=True)
        ]
        if request.last_reply:
            memories += [
                MemoryToExtract(
                    content=m.content,
                    tags=m.tags,
                    pinned=m.pinned,
                    packable=m.packable,
                    source_node_ids=request.anchor_ids[:1],
                )
                for m in extract_key_memories(request.last_reply, from_user=False)
            ]
        queries = keyword_terms(request.message)[: self.max_queries]

        why = [f"continue from {request.anchor_ids or 'a new root'}"]
        if extra:
            why.append(f"load related nodes {extra}")
        if pack:
            why.append(f"chain of {request.chain_length} nodes exceeds the budget of {request.max_context_nodes}: pack it")
        if memories:
            why.append(f"{len(memories)} key memories found by rules")
        return ContextPlan(
            reasoning="; ".join(why),
            selected_node_ids=selected,
            nodes_to_pack=pack,
            memories_to_extract=memories,
            memory_queries=queries,
        )
