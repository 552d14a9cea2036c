"""ContextManager: one conversation round with planning, compression, key memories and an answer.

``await cm.chat(user_message, parent_ids=None, auto_plan=True)`` (the seed's API): the parents are
``parent_ids`` or the tip; with ``auto_plan`` the planner answers a bounded request with a
:class:`~deepcontext.dialogue.plan.ContextPlan`, validated against the graph (an invalid plan falls
back to "continue from the parents"); the chains in ``nodes_to_pack`` are compressed; the context is
the key memories in one system message, then the selected chains merged in DAG order; the agent
answers, the new node is appended and the round's candidate memories committed. If the agent fails,
they are rejected and nothing is appended. The agent is anything
:func:`~deepcontext.dialogue.agent.ask` accepts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from deepcontext.dialogue.agent import ask
from deepcontext.dialogue.backend import DialogueBackend
from deepcontext.dialogue.graph import LLMContextGraph
from deepcontext.dialogue.memory_store import MemoryStore
from deepcontext.dialogue.offline_planner import OfflinePlanner
from deepcontext.dialogue.paths import ancestor_chain, merge_chains
from deepcontext.dialogue.plan import (
    ContextPlan,
    Planner,
    PlanRequest,
    select_candidates,
    validate_plan,
)
from deepcontext.dialogue.rules import formula_key
from deepcontext.dialogue.vocabulary import KeyMemory, LLMContext, LLMContextPair
from deepcontext.errors import ValidationError
from deepcontext.text import content_hash, keyword_terms

__all__ = ["DEFAULT_SYSTEM_PROMPT", "ChatReport", "ContextManager"]

logger = logging.getLogger("deepcontext.dialogue")

DEFAULT_SYSTEM_PROMPT = "You are a knowledgeable assistant. Answer concisely."
MEMORY_HEADER = "Key memories from earlier in this conversation (use them in your answer):"


@dataclass(slots=True)
class ChatReport:
    """What one ``chat`` did (the seed printed this as "Runtime Applied Ops")."""

    node_id: int
    parent_ids: list[int]
    plan: ContextPlan | None = None
    plan_error: str | None = None
    #: the nodes shown to the planner (bounded by retrieval and recency, never the whole graph)
    candidate_ids: list[int] = field(default_factory=list)
    pack_triggers: list[int] = field(default_factory=list)
    summary_nodes: list[int] = field(default_factory=list)
    compressed_nodes: list[int] = field(default_factory=list)
    extracted_memories: list[int] = field(default_factory=list)
    committed_memories: list[int] = field(default_factory=list)
    memory_ids_in_context: list[int] = field(default_factory=list)
    context_node_ids: list[int] = field(default_factory=list)
    prompt_messages: list[dict[str, str]] = field(default_factory=list)


class ContextManager:
    """A conversation graph, its key memories, a planner and an agent, driven one round at a time."""

    def __init__(
        self,
        fetcher: Any,
        max_context_nodes: int = 6,
        pack_keep_recent: int = 1,
        *,
        backend: DialogueBackend | None = None,
        planner: Planner | None = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        summary_agent: Any = "fetcher",
        temperature: float = 0.7,
        max_tokens: int = 1024,
        max_retrieved_memories: int = 8,
        embed: Callable[[list[str]], Any] | None = None,
    ) -> None:
        if isinstance(max_context_nodes, bool) or not isinstance(max_context_nodes, int) or max_context_nodes < 1:
            raise ValidationError("max_context_nodes must be a positive integer", field="max_context_nodes")
        if isinstance(pack_keep_recent, bool) or not isinstance(pack_keep_recent, int) or pack_keep_recent < 0:
            raise ValidationError("pack_keep_recent must be a non-negative integer", field="pack_keep_recent")
        self.fetcher = fetcher
        self.graph = LLMContextGraph(backend)
        self.memory_store = MemoryStore(self.graph.backend)
        self.max_context_nodes = max_context_nodes
        self.pack_keep_recent = pack_keep_recent
        self.planner: Planner = planner or OfflinePlanner()
        self.system_prompt = system_prompt
        #: who writes summaries: the fetcher (default), another agent, or None for extractive ones
        self.summary_agent = fetcher if summary_agent == "fetcher" else summary_agent
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retrieved_memories = max_retrieved_memories
        #: optional texts -> unit vectors (e.g. ``embedder.embed``): candidates also ranked by similarity
        self.embed = embed
        self.last_report: ChatReport | None = None

    # ------------------------------------------------------------------------------------------------
    async def chat(self, user_message: str, parent_ids: Iterable[int] | None = None, auto_plan: bool = True) -> int:
        """Run one round and return the new node's id (see the module docstring for the steps)."""
        message = user_message
        if not isinstance(message, str) or not message.strip():
            raise ValidationError("user_message must be a non-empty string", field="user_message")
        graph = self.graph
        if parent_ids is not None:
            anchors = sorted(parent_ids) if isinstance(parent_ids, (set, frozenset)) else list(dict.fromkeys(parent_ids))
            for p in anchors:
                graph.get_node(p)  # NodeNotFoundError (a KeyError) before anything happens
        else:
            tip = graph.tip_node_id()
            anchors = [] if tip is None else [tip]
        report = ChatReport(node_id=-1, parent_ids=list(anchors))
        round_id = len(graph)

        plan: ContextPlan | None = None
        if auto_plan and round_id > 0:
            plan = await self._plan(message, anchors, report)
            report.plan = plan
            await self._pack(plan, report)
            self._extract(plan, round_id, report)

        selected = list(dict.fromkeys([*anchors, *(plan.selected_node_ids if plan else [])]))
        queries = plan.memory_queries if plan else []
        prompt = self._build_context(selected, anchors, queries, report)
        report.prompt_messages = prompt
        try:
            answer = await ask(
                self.fetcher,
                message,
                system_prompt=self.system_prompt,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                prev_messages=prompt,
            )
        except BaseException:
            self.memory_store.reject_candidates(round_id)
            raise
        pair = LLMContextPair(LLMContext("user", message), LLMContext("assistant", answer))
        if parent_ids is None:
            node_id = graph.append(pair)  # continues the tip as it is at write time
        else:
            node_id = graph.add_node(pair, parent_ids=anchors)
        report.node_id = node_id
        for mid in report.extracted_memories:  # read from the new message: the new node is their source
            mem = self.memory_store.get_memory(mid)
            if mem is not None and mem.canonical_key and not mem.source_nodes:
                self.memory_store.add_memory(mem.content, source_nodes={node_id}, canonical_key=mem.canonical_key)
        report.committed_memories = self.memory_store.commit_candidates(round_id)
        self.last_report = report
        logger.debug("dialogue round: %s", report)
        return node_id

    # ------------------------------------------------------------------------------------------------
    async def _plan(self, message: str, anchors: list[int], report: ChatReport) -> ContextPlan:
        candidates, chain, chain_length = select_candidates(self.graph, anchors, message, embed=self.embed)
        report.candidate_ids = [c.id for c in candidates]
        last_reply = ""
        if anchors:
            node = self.graph.backend.get_nodes([anchors[0]]).get(anchors[0])
            last_reply = node.context.llm_role.content if node is not None and not node.is_summary else ""
        memories = self._relevant_memories(keyword_terms(message))
        request = PlanRequest(
            message=message,
            anchor_ids=anchors,
            chain=chain,
            chain_length=chain_length,
            candidates=candidates,
            memories=memories,
            max_context_nodes=self.max_context_nodes,
            keep_recent=self.pack_keep_recent,
            last_reply=last_reply,
        )
        try:
            raw = await self.planner.plan(request)
            fell_back = getattr(self.planner, "last_error", None)  # an LLM planner that used its fallback
            if fell_back:
                report.plan_error = f"fallback: {fell_back}"
            with self.graph.backend.topology() as topo:
                known = set(topo.parents)
            return validate_plan(raw, known)
        except ValidationError as exc:
            report.plan_error = str(exc)
            logger.warning("dialogue plan rejected, continuing from the parents: %s", exc)
            return ContextPlan(reasoning=f"fallback: {exc}", selected_node_ids=anchors)

    async def _pack(self, plan: ContextPlan, report: ChatReport) -> None:
        for nid in plan.nodes_to_pack:
            with self.graph.backend.topology() as topo:
                if nid not in topo:
                    continue
                target = topo.resolve(nid)  # an archived trigger packs from the summary standing for it
            sid = await self.graph.compress_ancestors(
                self.summary_agent, target, max_nodes=self.max_context_nodes + 4, keep_recent=self.pack_keep_recent
            )
            if sid is not None:
                report.pack_triggers.append(nid)
                report.summary_nodes.append(sid)
                report.compressed_nodes += sorted(self.graph.get_node(sid).summarized_ids)

    def _extract(self, plan: ContextPlan, round_id: int, report: ChatReport) -> None:
        for m in plan.memories_to_extract:
            if m.pinned or "formula" in m.tags or "公式" in m.tags:
                key = "formula:" + formula_key(m.content)
            else:
                key = "text:" + content_hash(m.content)
            known = self.memory_store.find_canonical(key)
            if known is not None:
                continue
            mid = self.memory_store.add_memory(
                m.content,
                source_nodes=set(m.source_node_ids),
                tags=set(m.tags),
                pinned=m.pinned,
                packable=m.packable,
                canonical_key=key,
                turn_id=round_id,
                status="candidate",
            )
            report.extracted_memories.append(mid)

    # ------------------------------------------------------------------------------------------------
    def _relevant_memories(self, queries: list[str]) -> list[KeyMemory]:
        """Pinned memories, then those matching a query (content or tag), rejected ones left out."""
        everything = [m for m in self.memory_store.get_all_memories() if m.status != "rejected"]
        pinned = [m for m in everything if m.pinned]
        chosen = {m.id for m in pinned}
        found: list[KeyMemory] = []
        lowered = [q.casefold() for q in queries if q.strip()]
        for m in everything:
            if m.id in chosen:
                continue
            text = m.content.casefold()
            if any(q in text or any(q in t.casefold() for t in m.tags) for q in lowered):
                found.append(m)
                chosen.add(m.id)
        return pinned + found[: self.max_retrieved_memories]

    def _build_context(
        self, selected: list[int], anchors: list[int], queries: list[str], report: ChatReport
    ) -> list[dict[str, str]]:
        memories = self._relevant_memories(queries)
        report.memory_ids_in_context = [m.id for m in memories]
        out: list[dict[str, str]] = []
        if memories:
            lines = [MEMORY_HEADER] + [f"- {m.content}" for m in memories]
            out.append({"role": "system", "content": "\n".join(lines)})
        with self.graph.backend.topology() as topo:
            chains = [ancestor_chain(topo, topo.resolve(n), self.max_context_nodes, "longest") for n in selected if n in topo]
            main = chains[0] if chains and anchors else []
        order = merge_chains(chains, priority=main)
        report.context_node_ids = order
        nodes = self.graph.backend.get_nodes(order)
        for n in order:
            if n in nodes:
                out.extend(m.to_dict() for m in nodes[n].context.messages())
        return out
