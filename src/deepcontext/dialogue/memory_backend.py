"""The default backend: everything in process memory, node and memory ids from 0 like the seed."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from deepcontext.dialogue.backend import NewKeyMemory, NewNode
from deepcontext.dialogue.paths import would_create_cycle
from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.vocabulary import (
    DialogueConflictError,
    KeyMemory,
    LLMContext,
    LLMContextGraphNode,
    LLMContextPair,
    NodeNotFoundError,
)
from deepcontext.errors import CyclicGraphError

__all__ = ["InMemoryBackend"]


@dataclass(slots=True)
class _NodeData:
    context: LLMContextPair
    tags: list[str] = field(default_factory=list)
    summary: str = ""


class InMemoryBackend:
    """A :class:`~deepcontext.dialogue.backend.DialogueBackend` in process memory (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._topo = Topology()
        self._data: dict[int, _NodeData] = {}
        self._next_id = 0
        self._tip: int | None = None
        self._memories: dict[int, KeyMemory] = {}
        self._canonical: dict[str, int] = {}
        self._next_memory_id = 0

    # --- nodes and edges ---------------------------------------------------------------------------
    @contextmanager
    def topology(self) -> Iterator[Topology]:
        with self._lock:
            yield self._topo

    def _snapshot(self, n: int) -> LLMContextGraphNode:
        t = self._topo
        d = self._data[n]
        s = t.summarized_by.get(n)
        return LLMContextGraphNode(
            id=n,
            context=LLMContextPair(user_role=_copy(d.context.user_role), llm_role=_copy(d.context.llm_role)),
            parent_ids=set(t.parents[n]),
            child_ids=set(t.children.get(n, ())),
            is_summary=n in t.summaries,
            archived=n in t.archived,
            summarized_by={s} if s is not None else set(),
            summarized_ids=set(t.covers.get(n, ())),
            summary=d.summary,
            tags=set(d.tags),
        )

    def get_nodes(self, node_ids: Sequence[int]) -> dict[int, LLMContextGraphNode]:
        with self._lock:
            return {n: self._snapshot(n) for n in dict.fromkeys(node_ids) if n in self._data}

    def iter_nodes(self, batch: int = 500) -> Iterator[LLMContextGraphNode]:
        with self._lock:
            ids = sorted(self._data)
        for i in range(0, len(ids), batch):
            yield from self.get_nodes(ids[i : i + batch]).values()

    def tip_node_id(self) -> int | None:
        with self._lock:
            return self._tip

    def _check(self, node_ids: Sequence[int], what: str = "parent_id") -> None:
        for n in node_ids:
            if n not in self._data:
                raise NodeNotFoundError(n, what=what)

    def add_nodes(self, nodes: Sequence[NewNode], *, chain: bool = False, after_tip: bool = False) -> list[int]:
        with self._lock:
            for nn in nodes:
                self._check(nn.parent_ids)
            ids: list[int] = []
            prev: int | None = None
            for i, nn in enumerate(nodes):
                parents = list(dict.fromkeys(nn.parent_ids))
                if i == 0 and after_tip and self._tip is not None and self._tip not in parents:
                    parents.insert(0, self._tip)
                if chain and prev is not None and prev not in parents:
                    parents.insert(0, prev)
                nid = self._next_id
                self._next_id += 1
                self._data[nid] = _NodeData(context=nn.context, tags=list(dict.fromkeys(nn.tags)))
                self._topo.add_node(nid, parents)
                ids.append(nid)
                prev = nid
            if ids:
                self._tip = ids[-1]
            return ids

    def add_edge(self, child_id: int, parent_id: int) -> bool:
        with self._lock:
            self._check([child_id], "child_id")
            self._check([parent_id], "parent_id")
            if parent_id in self._topo.parents[child_id]:
                return False
            if would_create_cycle(self._topo, child_id, parent_id):
                raise CyclicGraphError(
                    f"adding edge {parent_id} -> {child_id} would create a cycle", child=child_id, parent=parent_id
                )
            self._topo.add_edge(child_id, parent_id)
            return True

    def add_summary(
        self, context: LLMContextPair, *, parent_ids: Sequence[int], summarized_ids: Sequence[int], child_ids: Sequence[int]
    ) -> int:
        with self._lock:
            t = self._topo
            for n in list(summarized_ids) + list(parent_ids) + list(child_ids):
                if n not in self._data:
                    raise DialogueConflictError(f"node {n} disappeared during compression")
            if any(n in t.archived for n in summarized_ids):
                raise DialogueConflictError("some of these nodes were compressed meanwhile")
            sid = self._next_id
            self._next_id += 1
            self._data[sid] = _NodeData(context=context)
            t.add_node(sid, list(dict.fromkeys(parent_ids)), is_summary=True)
            for c in child_ids:
                t.add_edge(c, sid)
            t.archive(summarized_ids, sid)
            return sid

    def update_node(self, node_id: int, *, tags: Sequence[str] | None = None, summary: str | None = None) -> None:
        with self._lock:
            self._check([node_id], "node_id")
            d = self._data[node_id]
            if tags is not None:
                d.tags = list(dict.fromkeys(tags))
            if summary is not None:
                d.summary = summary

    # --- key memories ------------------------------------------------------------------------------
    def add_memory(self, memory: NewKeyMemory) -> tuple[int, bool]:
        with self._lock:
            self._check(memory.source_nodes, "source node")
            key = memory.canonical_key
            if key and key in self._canonical:
                existing = self._memories[self._canonical[key]]
                existing.source_nodes.update(memory.source_nodes)
                return existing.id, False
            mid = self._next_memory_id
            self._next_memory_id += 1
            self._memories[mid] = KeyMemory(
                id=mid,
                content=memory.content,
                source_nodes=set(memory.source_nodes),
                tags=set(memory.tags),
                pinned=memory.pinned,
                packable=memory.packable,
                status=memory.status,
                turn_id=memory.turn_id,
                canonical_key=key or None,
            )
            if key:
                self._canonical[key] = mid
            return mid, True

    def get_memories(self, memory_ids: Sequence[int] | None = None) -> list[KeyMemory]:
        with self._lock:
            ids = sorted(self._memories) if memory_ids is None else sorted(set(memory_ids) & set(self._memories))
            return [_copy_memory(self._memories[i]) for i in ids]

    def set_memory_status(self, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        with self._lock:
            out = []
            for mid in sorted(self._memories):
                m = self._memories[mid]
                if m.status == from_status and m.turn_id == turn_id:
                    m.status = to_status
                    out.append(mid)
                    key = m.canonical_key
                    if to_status == "rejected" and key and self._canonical.get(key) == mid:
                        del self._canonical[key]  # a rejected memory holds no key
            return out

    def remove_memory(self, memory_id: int) -> bool:
        with self._lock:
            m = self._memories.pop(memory_id, None)
            if m is None:
                return False
            if m.canonical_key and self._canonical.get(m.canonical_key) == memory_id:
                del self._canonical[m.canonical_key]
            return True


def _copy(m: LLMContext) -> LLMContext:
    return LLMContext(role=m.role, content=m.content)


def _copy_memory(m: KeyMemory) -> KeyMemory:
    return KeyMemory(
        id=m.id,
        content=m.content,
        source_nodes=set(m.source_nodes),
        tags=set(m.tags),
        pinned=m.pinned,
        packable=m.packable,
        status=m.status,
        turn_id=m.turn_id,
        canonical_key=m.canonical_key,
    )
