"""LLMContextGraph: the conversation as a DAG of message pairs (the Memory Graph seed's API).

- Ancestor chains are computed in linear time without recursion (any depth, any number of merges).
- Chains of a live node skip archived nodes, also across merges: an archived parent is seen as the
  summary that covers it (:mod:`deepcontext.dialogue.topology`), so a summary always comes first.
- Compression never deletes or unlinks anything: the summary becomes an extra parent of the first
  kept node and the compressed nodes are marked ``archived`` / ``summarized_by``. Nodes a key
  memory marked ``packable=False`` are never compressed. Without a model (or when it fails) the
  summary is extractive.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from deepcontext.dialogue.agent import ask
from deepcontext.dialogue.backend import DialogueBackend, NewNode
from deepcontext.dialogue.paths import all_ancestors, ancestor_chain
from deepcontext.dialogue.summarize import extractive_summary
from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.vocabulary import (
    SUMMARY_LABEL,
    DialogueConflictError,
    LLMContext,
    LLMContextGraphNode,
    LLMContextPair,
    NodeNotFoundError,
)
from deepcontext.errors import LLMError, ValidationError

__all__ = ["DEFAULT_SUMMARY_PROMPT", "DEFAULT_SUMMARY_SYSTEM_PROMPT", "LLMContextGraph", "NodesView"]

logger = logging.getLogger("deepcontext.dialogue")

DEFAULT_SUMMARY_SYSTEM_PROMPT = "You summarise conversations. Write a concise summary that keeps every important fact."
DEFAULT_SUMMARY_PROMPT = (
    "Summarise the following conversation rounds densely. Keep the key facts, conclusions, user "
    "requirements and answers, so that the conversation can continue from the summary alone.\n\n"
)


def _ids(parent_ids: Iterable[int] | None, what: str = "parent_ids") -> list[int]:
    """Parent ids as a list: a set is sorted (the seed passed sets), a sequence keeps its order."""
    if parent_ids is None:
        return []
    if isinstance(parent_ids, (str, bytes)):
        raise ValidationError(f"{what} must be a collection of node ids", field=what)
    items = sorted(parent_ids) if isinstance(parent_ids, (set, frozenset)) else list(parent_ids)
    for p in items:
        if isinstance(p, bool) or not isinstance(p, int):
            raise ValidationError(f"{what} must hold integer node ids, got {p!r}", field=what)
    return list(dict.fromkeys(items))


def _node_id(node_id: Any, what: str = "node_id") -> int:
    if isinstance(node_id, bool) or not isinstance(node_id, int):
        raise NodeNotFoundError(node_id, what=what.replace("_id", ""))
    return node_id


def _longest_run(seq: Sequence[int], excluded: set[int]) -> tuple[int, int]:
    """The [start, end) bounds of the longest run of ``seq`` without ``excluded`` nodes (the oldest
    among equals)."""
    best = (0, 0)
    start = 0
    for i, n in enumerate([*seq, None]):
        if n is None or n in excluded:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = i + 1
    return best


def _run_parents(topo: Topology, run: Sequence[int]) -> list[int]:
    """The parents a summary of ``run`` (a segment of a chain) takes: every live parent of a run
    node that is outside the run, so a branch merging into the run stays an ancestor of what
    follows; except parents that descend from the run themselves (they would close a cycle)."""
    inside = set(run)
    out: list[int] = []
    for i, n in enumerate(run):
        for p in topo.effective_parents(n):
            if p in inside or p in out:
                continue
            if i > 0 and all_ancestors(topo, p) & inside:
                continue
            out.append(p)
    return out


class NodesView(Mapping[int, LLMContextGraphNode]):
    """``graph.nodes``: read-only mapping id -> node snapshot, read through the backend."""

    def __init__(self, backend: DialogueBackend) -> None:
        self._backend = backend

    def __getitem__(self, node_id: int) -> LLMContextGraphNode:
        found = self._backend.get_nodes([node_id]) if isinstance(node_id, int) else {}
        if node_id not in found:
            raise NodeNotFoundError(node_id)
        return found[node_id]

    def __contains__(self, node_id: object) -> bool:
        with self._backend.topology() as topo:
            return node_id in topo

    def __iter__(self) -> Iterator[int]:
        with self._backend.topology() as topo:
            ids = topo.node_ids()
        return iter(ids)

    def __len__(self) -> int:
        with self._backend.topology() as topo:
            return len(topo)


class LLMContextGraph:
    """A conversation DAG. ``LLMContextGraph()`` keeps it in memory (ids from 0, like the seed);
    ``LLMContextGraph(StoreDialogueBackend(store, user_id=..., conversation_id=...))`` keeps it in
    the deepcontext database."""

    def __init__(self, backend: DialogueBackend | None = None) -> None:
        if backend is None:
            from deepcontext.dialogue.memory_backend import InMemoryBackend

            backend = InMemoryBackend()
        self.backend: DialogueBackend = backend
        self.nodes = NodesView(backend)

    # --- reading -----------------------------------------------------------------------------------
    @property
    def root_ids(self) -> set[int]:
        """Nodes without parents."""
        with self.backend.topology() as topo:
            return topo.roots()

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def get_node(self, node_id: int) -> LLMContextGraphNode:
        """A snapshot of one node. Raises :class:`NodeNotFoundError` (a ``KeyError``)."""
        return self.nodes[node_id]

    def tip_node_id(self) -> int | None:
        """The node the conversation continues from (the last one appended), None when empty."""
        return self.backend.tip_node_id()

    def get_ancestor_chain(self, node_id: int, max_nodes: int | None = 8, strategy: str = "longest") -> list[int]:
        """A path root -> ``node_id`` (both included), cut to its last ``max_nodes`` nodes.

        ``strategy``: ``"longest"`` (default), ``"shortest"`` or ``"first"`` (first parent at each
        step; parents given as a set are taken in ascending order). For a live node, archived
        nodes are replaced by their summaries; for an archived node, the original history.
        Raises :class:`NodeNotFoundError` (a ``KeyError``), ``ValidationError`` (a ``ValueError``).
        """
        nid = _node_id(node_id)
        with self.backend.topology() as topo:
            if nid not in topo:
                raise NodeNotFoundError(nid)
            return ancestor_chain(topo, nid, max_nodes, strategy)

    def get_all_ancestors(self, node_id: int) -> set[int]:
        """Every node with a stored path to ``node_id`` (archived nodes and summaries included)."""
        nid = _node_id(node_id)
        with self.backend.topology() as topo:
            if nid not in topo:
                raise NodeNotFoundError(nid)
            return all_ancestors(topo, nid)

    def build_linear_context(self, node_id: int, max_nodes: int | None = 8) -> list[LLMContext]:
        """The longest chain to ``node_id`` flattened into chat messages (user, assistant, ...),
        empty halves left out."""
        chain = self.get_ancestor_chain(node_id, max_nodes)
        nodes = self.backend.get_nodes(chain)
        out: list[LLMContext] = []
        for nid in chain:
            out.extend(nodes[nid].context.messages())
        return out

    # --- writing -----------------------------------------------------------------------------------
    def add_node(self, context: LLMContextPair, parent_ids: Iterable[int] | None = None) -> int:
        """Add a node; no parents makes a new root. Returns its id.

        Raises :class:`NodeNotFoundError` (a ``KeyError``) for an unknown parent; nothing is written.
        """
        self._check_context(context)
        return self.backend.add_nodes([NewNode(context=context, parent_ids=_ids(parent_ids))])[0]

    def append(self, context: LLMContextPair) -> int:
        """Add a node continuing the conversation's current tip (a root if the graph is empty).

        The tip is read and extended in one transaction: concurrent appenders form one chain.
        """
        self._check_context(context)
        return self.backend.add_nodes([NewNode(context=context)], after_tip=True)[0]

    def add_chain(self, contexts: Sequence[LLMContextPair], parent_ids: Iterable[int] | None = None) -> list[int]:
        """Add a linear run of nodes in one transaction (the first one under ``parent_ids``)."""
        for c in contexts:
            self._check_context(c)
        first = _ids(parent_ids)
        nodes = [NewNode(context=c, parent_ids=first if i == 0 else []) for i, c in enumerate(contexts)]
        return self.backend.add_nodes(nodes, chain=True) if nodes else []

    def add_edge(self, child_id: int, parent_id: int) -> None:
        """Add ``parent_id`` as a parent of ``child_id``.

        Raises :class:`NodeNotFoundError` (a ``KeyError``) or :class:`~deepcontext.errors.CyclicGraphError`
        (a ``ValueError``) when the edge would close a cycle.
        """
        self.backend.add_edge(_node_id(child_id, "child_id"), _node_id(parent_id, "parent_id"))

    def set_node_tags(self, node_id: int, tags: Iterable[str]) -> None:
        """Replace a node's tags."""
        tag_list = list(tags)
        if not all(isinstance(t, str) for t in tag_list):
            raise ValidationError("tags must be strings", field="tags")
        self.backend.update_node(_node_id(node_id), tags=tag_list)

    def set_node_summary(self, node_id: int, summary: str) -> None:
        """Set a node's short summary text (for retrieval and planning prompts)."""
        if not isinstance(summary, str):
            raise ValidationError("summary must be a string", field="summary")
        self.backend.update_node(_node_id(node_id), summary=summary)

    @staticmethod
    def _check_context(context: Any) -> None:
        if not isinstance(context, LLMContextPair):
            raise ValidationError("context must be an LLMContextPair", field="context")

    # --- compression -------------------------------------------------------------------------------
    def protected_node_ids(self) -> set[int]:
        """Nodes that key memories marked ``packable=False`` (and not rejected) keep out of compression."""
        out: set[int] = set()
        for m in self.backend.get_memories():
            if not m.packable and m.status != "rejected":
                out |= m.source_nodes
        return out

    async def compress_ancestors(
        self,
        agent: Any,
        node_id: int,
        max_nodes: int | None = 8,
        keep_recent: int = 2,
        summary_system_prompt: str | None = None,
    ) -> int | None:
        """Fold the older part of ``node_id``'s chain into a new summary node; returns its id.

        The longest chain (at most ``max_nodes``) keeps its last ``keep_recent`` nodes; the older
        ones are summarised by ``agent`` (an extractive summary when ``agent`` is None), archived
        (``summarized_by`` = the summary) and kept. Nodes protected by a key memory
        (``packable=False``) stay live: then the longest run of unprotected older nodes is
        compressed. The summary gets the run's outside parents (those of its first node, and any
        branch merging into it) and becomes a parent of the node after the run, so chains read
        ... -> summary -> kept nodes. Returns None when there is not enough to
        compress (fewer than two nodes) or when another writer compressed these nodes meanwhile.
        """
        nid = _node_id(node_id)
        if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
            raise ValidationError("keep_recent must be a non-negative integer", field="keep_recent")
        with self.backend.topology() as topo:
            if nid not in topo:
                raise NodeNotFoundError(nid)
            if nid in topo.archived:
                raise ValidationError(f"node {nid} is archived; compress from a live node", field="node_id")
            chain = ancestor_chain(topo, nid, max_nodes, "longest")
        if len(chain) <= keep_recent + 1:
            return None
        head = len(chain) - keep_recent  # chain[:head] may be compressed
        protected = self.protected_node_ids()
        start, end = _longest_run(chain[:head], protected)
        if end - start < 2:
            return None
        old = chain[start:end]
        after = chain[end : end + 1]  # the node that follows the compressed run, if any

        nodes = self.backend.get_nodes(old)
        text = await self._summarise([nodes[n] for n in old if n in nodes], agent, summary_system_prompt)
        with self.backend.topology() as topo:
            if any(n not in topo or n in topo.archived for n in old):
                return None
            parents = _run_parents(topo, old)
        summary = LLMContextPair(
            user_role=LLMContext(role="user", content=SUMMARY_LABEL),
            llm_role=LLMContext(role="assistant", content=text),
        )
        try:
            return self.backend.add_summary(summary, parent_ids=parents, summarized_ids=old, child_ids=after)
        except DialogueConflictError:
            return None

    @staticmethod
    async def _summarise(nodes: Sequence[LLMContextGraphNode], agent: Any, system_prompt: str | None) -> str:
        messages: list[tuple[str, str]] = []
        for n in nodes:
            if n.is_summary:
                messages.append(("summary", n.context.llm_role.content))
            else:
                messages.extend((m.role, m.content) for m in n.context.messages())
        fallback = extractive_summary([("assistant" if r == "summary" else r, c) for r, c in messages])
        if agent is None:
            return fallback
        lines = [f"{'Summary' if r == 'summary' else r.capitalize()}: {c}" for r, c in messages]
        try:
            text = await ask(
                agent,
                DEFAULT_SUMMARY_PROMPT + "\n".join(lines),
                system_prompt=system_prompt or DEFAULT_SUMMARY_SYSTEM_PROMPT,
                temperature=0.3,
                max_tokens=2048,
            )
        except LLMError as exc:  # the model failed (after its retries): an extractive summary instead
            logger.warning("summary model failed (%s); using an extractive summary", exc)
            return fallback
        return text.strip() or fallback
