"""The planner's contract: what it is shown (:class:`PlanRequest`) and what it answers (:class:`ContextPlan`).

A planner decides, before each answer, which nodes to load, which chains to compress, which key
memories to extract and which memory queries to run. The offline planner
(:mod:`deepcontext.dialogue.offline_planner`) and the LLM planner share this interface; an LLM's
JSON goes through :func:`validate_plan` before anything is applied: node ids must exist, ``"3"``
becomes ``3``, anything else that is not an integer id (``3.5``, ``true``, ``"three"``) is rejected.

The request is bounded: the candidate nodes come from retrieval and recency over a window of the
graph (:func:`select_candidates`), never from listing every node.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Protocol, runtime_checkable

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from deepcontext.dialogue.paths import ancestor_chain
from deepcontext.dialogue.vocabulary import KeyMemory
from deepcontext.errors import ValidationError
from deepcontext.text import keyword_terms

if TYPE_CHECKING:
    from deepcontext.dialogue.graph import LLMContextGraph

__all__ = [
    "ContextDecision",
    "ContextPlan",
    "MemoryToExtract",
    "PlanCandidate",
    "PlanRequest",
    "Planner",
    "select_candidates",
    "validate_plan",
]

_DIGITS = re.compile(r"\s*-?\d+\s*")


def _node_id(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"not a node id: {value!r}")  # noqa: TRY004 - pydantic wants ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    raise ValueError(f"not a node id: {value!r}")


NodeId = Annotated[int, BeforeValidator(_node_id)]


class MemoryToExtract(BaseModel):
    """A key memory the planner wants stored."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    pinned: bool = False
    packable: bool = True
    #: nodes it was read from; empty: the new message (the node this round appends)
    source_node_ids: list[NodeId] = Field(default_factory=list)

    @field_validator("content")
    @classmethod
    def _content(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("content is empty")
        return v

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    # the seed's planner handed these over as dicts: mem["content"], mem.get("tags", [])
    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default


class ContextPlan(BaseModel):
    """A planner's decision for one round (the seed's JSON shape)."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    selected_node_ids: list[NodeId] = Field(default_factory=list)
    nodes_to_pack: list[NodeId] = Field(default_factory=list)
    memories_to_extract: list[MemoryToExtract] = Field(default_factory=list)
    memory_queries: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_ids(self, info: ValidationInfo) -> ContextPlan:
        self.selected_node_ids = list(dict.fromkeys(self.selected_node_ids))
        self.nodes_to_pack = list(dict.fromkeys(self.nodes_to_pack))
        self.memory_queries = [q for q in dict.fromkeys(q.strip() for q in self.memory_queries) if q]
        known = (info.context or {}).get("node_ids") if info.context else None
        if known is not None:
            cited = [i for m in self.memories_to_extract for i in m.source_node_ids]
            missing = [i for i in [*self.selected_node_ids, *self.nodes_to_pack, *cited] if i not in known]
            if missing:
                raise ValueError(f"unknown node ids: {sorted(set(missing))}")
        return self


class ContextDecision(ContextPlan):
    """The seed's name for a plan, built as its dataclass was: positionally or by keyword,
    ``ContextDecision(reasoning, selected_node_ids, nodes_to_pack, memories_to_extract, memory_queries)``
    (memories as ``{"content", "tags"}`` dicts or :class:`MemoryToExtract`)."""

    def __init__(
        self,
        reasoning: str = "",
        selected_node_ids: Sequence[int] | None = None,
        nodes_to_pack: Sequence[int] | None = None,
        memories_to_extract: Sequence[Mapping[str, Any] | MemoryToExtract] | None = None,
        memory_queries: Sequence[str] | None = None,
        **data: Any,
    ) -> None:
        super().__init__(
            reasoning=reasoning,
            selected_node_ids=list(selected_node_ids or []),
            nodes_to_pack=list(nodes_to_pack or []),
            memories_to_extract=list(memories_to_extract or []),
            memory_queries=list(memory_queries or []),
            **data,
        )


def validate_plan(data: Mapping[str, Any] | str | ContextPlan, node_ids: Container[int] | None = None) -> ContextPlan:
    """Check a plan (a dict, a JSON string or a plan) against the graph's node ids.

    Raises :class:`~deepcontext.errors.ValidationError` listing every problem.
    """
    if isinstance(data, ContextPlan):  # possibly built without validation (model_construct): check again
        data = data.model_dump(warnings=False)
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"plan is not JSON: {exc}", field="plan") from exc
    if not isinstance(data, Mapping):
        raise ValidationError("plan must be a JSON object", field="plan")
    try:
        return ContextPlan.model_validate(dict(data), context={"node_ids": node_ids} if node_ids is not None else None)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors())
        raise ValidationError(f"invalid plan: {problems}", field="plan") from exc


@dataclass(slots=True)
class PlanCandidate:
    """A node shown to the planner (texts cut to a few hundred characters)."""

    id: int
    user: str
    assistant: str
    parent_ids: list[int]
    is_summary: bool = False
    on_chain: bool = False
    score: float = 0.0
    summarized_ids: list[int] = field(default_factory=list)


@dataclass(slots=True)
class PlanRequest:
    """Everything a planner sees for one round."""

    message: str
    #: the nodes the new turn will continue from (its parents)
    anchor_ids: list[int]
    #: the active chain of the first anchor, root -> anchor, at most ``chain_window`` nodes
    chain: list[int]
    #: the length of that chain in full (compare with ``max_context_nodes``)
    chain_length: int
    candidates: list[PlanCandidate]
    memories: list[KeyMemory]
    max_context_nodes: int
    keep_recent: int
    #: the last assistant reply on the chain (rules may extract memories from it)
    last_reply: str = ""


@runtime_checkable
class Planner(Protocol):
    async def plan(self, request: PlanRequest) -> ContextPlan:
        """Decide what to load, pack, extract and query for this round."""
        ...


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def select_candidates(
    graph: LLMContextGraph,
    anchor_ids: Sequence[int],
    message: str,
    *,
    recent: int = 6,
    window: int = 200,
    limit: int = 16,
    clip: int = 240,
    embed: Any = None,
) -> tuple[list[PlanCandidate], list[int], int]:
    """Candidate nodes for a round: the last ``recent`` nodes of the anchor's chain plus the nodes
    of a bounded window (the anchor's ancestors nearest first, then the newest nodes of other
    branches) that best match ``message`` (keyword overlap weighted by rarity; plus cosine
    similarity when ``embed``, a callable texts -> unit vectors, is given).

    Returns (candidates by id, the anchor's chain cut to ``window``, the chain's full length).
    """
    with graph.backend.topology() as topo:
        live = [a for a in anchor_ids if a in topo]
        full_chain = ancestor_chain(topo, live[0], None, "longest") if live else []
        pool: list[int] = []
        seen: set[int] = set()
        frontier = list(live)
        while frontier and len(pool) < window:  # ancestors in the active view, nearest first
            nxt: list[int] = []
            for n in frontier:
                if n in seen:
                    continue
                seen.add(n)
                pool.append(n)
                nxt.extend(topo.effective_parents(n))
            frontier = nxt
        for n in reversed(topo.node_ids()):  # the newest nodes elsewhere
            if len(pool) >= window + window // 4:
                break
            if n not in seen and n not in topo.archived:
                seen.add(n)
                pool.append(n)
    chain = full_chain[-window:]
    on_chain = set(chain)
    nodes = graph.backend.get_nodes(pool)
    texts = {
        n: " ".join([node.context.user_role.content, node.context.llm_role.content, node.summary, *node.tags])
        for n, node in nodes.items()
    }
    q_terms = set(keyword_terms(message))
    doc_terms = {n: set(keyword_terms(t)) for n, t in texts.items()}
    df: Counter[str] = Counter()
    for terms in doc_terms.values():
        df.update(terms & q_terms)
    total = max(1, len(doc_terms))
    scores: dict[int, float] = {}
    for n, terms in doc_terms.items():
        hit = terms & q_terms
        scores[n] = sum(math.log(1 + total / df[t]) for t in hit)
    top = max(scores.values(), default=0.0)
    if top > 0:
        scores = {n: s / top for n, s in scores.items()}
    if embed is not None and nodes:
        ids = list(nodes)
        vecs = embed([message] + [texts[n] for n in ids])
        for i, n in enumerate(ids):
            scores[n] = scores.get(n, 0.0) + max(0.0, float(vecs[0] @ vecs[i + 1]))

    chosen = list(dict.fromkeys(chain[-recent:] if recent else []))
    ranked = sorted((n for n in nodes if n not in chosen and scores.get(n, 0.0) > 0), key=lambda n: (-scores[n], -n))
    chosen += ranked[: max(0, limit - len(chosen))]
    out: list[PlanCandidate] = []
    for n in sorted(chosen):
        node = nodes.get(n)
        if node is None:
            continue
        out.append(
            PlanCandidate(
                id=n,
                user=_clip(node.context.user_role.content, clip),
                assistant=_clip(node.context.llm_role.content, clip),
                parent_ids=sorted(node.parent_ids),
                is_summary=node.is_summary,
                on_chain=n in on_chain,
                score=round(scores.get(n, 0.0), 4),
                summarized_ids=sorted(node.summarized_ids),
            )
        )
    return out, chain, len(full_chain)
