"""The store-backed backend: a conversation graph persisted as the conversation's turns.

The conversation record *is* the DAG: ``DeepContext.add`` stores each message as a row of ``turns``
chained after the conversation's tip, and this backend reads and writes the same rows (per
``user_id`` and ``conversation_id``), so a graph survives a restart and plain ``add`` chains are
readable as nodes. A node is one or two turns (a message and its reply); a summary node is a turn
of kind ``summary`` covering archived turns; no row or edge is ever deleted (mapping:
:mod:`deepcontext.dialogue.turnmap`). The rows are the store's
(:class:`~deepcontext.store.ConversationRows`); key memories are rows of its ``memories``.

Every write is one transaction that first locks the conversation row and re-reads the structure
under that lock; reads use a per-conversation cache checked against the conversation row.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from deepcontext.clock import Clock, SystemClock
from deepcontext.dialogue.backend import NewKeyMemory, NewNode
from deepcontext.dialogue.paths import would_create_cycle
from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.turnmap import TurnGraph
from deepcontext.dialogue.vocabulary import (
    SUMMARY_LABEL,
    DialogueConflictError,
    KeyMemory,
    LLMContext,
    LLMContextGraphNode,
    LLMContextPair,
    NodeNotFoundError,
)
from deepcontext.errors import CyclicGraphError
from deepcontext.store import PART_KEY, REV_KEY, ConversationWrite, KeyMemoryRow, NewKeyMemoryRow, Stamp, Store, TurnRow

__all__ = ["PART_KEY", "REV_KEY", "StoreDialogueBackend"]


@dataclass(slots=True)
class _Write:
    """An open write and the cache synced inside it."""

    w: ConversationWrite
    g: TurnGraph

    @property
    def handle(self) -> Any:
        return self.w.handle


class StoreDialogueBackend:
    """A :class:`~deepcontext.dialogue.backend.DialogueBackend` over a deepcontext SQL store.

    ``store`` is a migrated store (SQLite or PostgreSQL); the graph and key memories of
    (``user_id``, ``conversation_id``) live in its tables.
    """

    def __init__(
        self,
        store: Store,
        *,
        user_id: str,
        conversation_id: str = "default",
        clock: Clock | None = None,
        embed: Callable[[list[str]], Any] | None = None,
    ) -> None:
        from deepcontext.services.validation import check_id

        check_id(user_id, "user_id")  # the same rules as DeepContext.add
        check_id(conversation_id, "conversation_id")
        self.store = store
        self.rows = store.conversation_rows(user_id, conversation_id)
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.clock: Clock = clock or SystemClock()
        #: texts -> unit vectors of the store's size (an embedder's ``embed``): key memories get an
        #: embedding, so the engine's vector search finds them; None: keyword search only
        self.embed = embed
        self._lock = threading.RLock()
        self._graph: TurnGraph | None = None
        self._stamp: Stamp | None = None

    def _sync(self, conn: Any, stamp: Stamp | None = None, *, have_stamp: bool = False) -> TurnGraph:
        """Bring the cache up to the database state seen by ``conn`` (a handle of ``self.rows``)."""
        if not have_stamp:
            stamp = self.rows.read_stamp(conn)
        if stamp is None:
            self._graph, self._stamp = TurnGraph(), None
            return self._graph
        g = self._graph
        if g is not None and stamp == self._stamp:
            return g
        if g is not None and self._stamp is not None and stamp[2] == self._stamp[2]:
            try:
                ok = g.append(*self.rows.load(conn, g.max_id))
            except (KeyError, IndexError, ValueError, RuntimeError):  # half-applied: reload below
                ok = False
            if ok and len(g.rows) == stamp[0]:
                self._stamp = stamp
                return g
        with _gc_paused():  # a full load makes ~10 containers per turn: the cyclic GC only slows it down
            g = TurnGraph.build(*self.rows.load(conn, 0))
        self._graph, self._stamp = g, stamp
        return g

    def _invalidate(self) -> None:
        self._graph, self._stamp = None, None

    @contextmanager
    def topology(self) -> Iterator[Topology]:
        with self._lock:
            with self.rows.reading() as conn:
                g = self._sync(conn)
            yield g.topo

    @contextmanager
    def _writing(self) -> Iterator[_Write]:
        """A write transaction holding the user's and the conversation's locks, with the cache
        synced inside it. Cache updates for the write are applied by the caller after the block
        (after commit)."""
        with self.rows.writing(self.clock.now()) as w:
            yield _Write(w, self._sync(w.handle, w.stamp, have_stamp=True))

    # ------------------------------------------------------------------------------------------------
    # nodes and edges
    # ------------------------------------------------------------------------------------------------
    def tip_node_id(self) -> int | None:
        with self._lock:
            with self.rows.reading() as conn:
                g = self._sync(conn)
            tip = self._stamp[1] if self._stamp else None
            return None if tip is None else g.node_of.get(int(tip))

    def get_nodes(self, node_ids: Sequence[int]) -> dict[int, LLMContextGraphNode]:
        with self._lock:
            with self.rows.reading() as conn:
                g = self._sync(conn)
                ids = [n for n in dict.fromkeys(node_ids) if n in g.members]
                turns = self.rows.node_turns(conn, g.member_turns(ids))
            topo = g.topo
            out: dict[int, LLMContextGraphNode] = {}
            for n in ids:
                members = [turns[m] for m in g.members[n] if m in turns]
                if not members:
                    continue
                first = members[0]
                s = topo.summarized_by.get(n)
                out[n] = LLMContextGraphNode(
                    id=n,
                    context=_pair(members),
                    parent_ids=set(topo.parents[n]),
                    child_ids=set(topo.children.get(n, ())),
                    is_summary=n in topo.summaries,
                    archived=n in topo.archived,
                    summarized_by={s} if s is not None else set(),
                    summarized_ids=set(topo.covers.get(n, ())),
                    summary=first.summary,
                    tags=set(first.tags),
                )
            return out

    def node_turn_ids(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """The turn ids of each node (first turn first); unknown nodes are left out."""
        with self._lock:
            with self.rows.reading() as conn:
                g = self._sync(conn)
            return {n: list(g.members[n]) for n in node_ids if n in g.members}

    def iter_nodes(self, batch: int = 500) -> Iterator[LLMContextGraphNode]:
        with self.topology() as topo:
            ids = topo.node_ids()
        for start in range(0, len(ids), batch):
            yield from self.get_nodes(ids[start : start + batch]).values()

    def add_nodes(self, nodes: Sequence[NewNode], *, chain: bool = False, after_tip: bool = False) -> list[int]:
        if not nodes:
            return []
        with self._lock:
            with self._writing() as tx:
                g, stamp, now = tx.g, tx.w.stamp, tx.w.now
                for nn in nodes:
                    for p in nn.parent_ids:
                        if p not in g.members:
                            raise NodeNotFoundError(p, what="parent_id")
                # every turn in one multi-row INSERT ... RETURNING, in conversation order
                turns: list[tuple[str, str, list[str], str]] = []
                spans: list[tuple[int, int]] = []  # per node: (index of its first turn, number of turns)
                for nn in nodes:
                    u, a = nn.context.user_role, nn.context.llm_role
                    halves = [h for h in (u, a) if h.content] or [u]
                    spans.append((len(turns), len(halves)))
                    for k, h in enumerate(halves):
                        tags = list(dict.fromkeys(nn.tags)) if k == 0 else []
                        turns.append((h.role, h.content, tags, "first" if k == 0 else "reply"))
                turn_ids = self.rows.insert_turns(tx.handle, now, turns)
                rows: list[TurnRow] = []
                edges: list[tuple[int, int, int]] = []
                ids: list[int] = []
                tails: dict[int, int] = {}
                tip = g.node_of.get(int(stamp[1])) if (after_tip and stamp[1] is not None) else None
                for i, (nn, (at, count)) in enumerate(zip(nodes, spans, strict=True)):
                    first, last = turn_ids[at], turn_ids[at + count - 1]
                    parents = list(dict.fromkeys(nn.parent_ids))
                    if i == 0 and tip is not None and tip not in parents:
                        parents.insert(0, tip)
                    if chain and ids and ids[-1] not in parents:
                        parents.insert(0, ids[-1])
                    edges += [(first, tails.get(p) or g.tail(p), k) for k, p in enumerate(parents)]
                    rows.append(TurnRow(first, turns[at][0], "message", False, None, "first"))
                    if count == 2:
                        edges.append((last, first, 0))
                        rows.append(TurnRow(last, turns[at + 1][0], "message", False, None, "reply"))
                    tails[first] = last
                    ids.append(first)
                self.rows.insert_edges(tx.handle, edges)
                new_stamp = self.rows.set_conversation(tx.handle, now, added=len(rows), tip=rows[-1].id, stamp=stamp)
            if g is self._graph and g.append(rows, [(c, p) for c, p, _ in edges]):
                self._stamp = new_stamp
            else:
                self._invalidate()
            return ids

    def add_edge(self, child_id: int, parent_id: int) -> bool:
        with self._lock:
            with self._writing() as tx:
                g, stamp, now = tx.g, tx.w.stamp, tx.w.now
                if child_id not in g.members:
                    raise NodeNotFoundError(child_id, what="child_id")
                if parent_id not in g.members:
                    raise NodeNotFoundError(parent_id, what="parent_id")
                if parent_id in g.topo.parents[child_id]:
                    return False
                if would_create_cycle(g.topo, child_id, parent_id):
                    raise CyclicGraphError(
                        f"adding edge {parent_id} -> {child_id} would create a cycle", child=child_id, parent=parent_id
                    )
                c, p = g.first(child_id), g.tail(parent_id)
                if p not in g.tparents[c]:
                    self.rows.insert_edges(tx.handle, [(c, p, len(g.tparents[c]))])
                new_stamp = self.rows.set_conversation(tx.handle, now, added=0, bump_rev=True, stamp=stamp)
            try:
                g.add_turn_edge(c, p)
                self._stamp = new_stamp
            except (KeyError, IndexError, ValueError, RuntimeError):  # the next read reloads
                self._invalidate()
            return True

    def add_summary(
        self, context: LLMContextPair, *, parent_ids: Sequence[int], summarized_ids: Sequence[int], child_ids: Sequence[int]
    ) -> int:
        with self._lock:
            with self._writing() as tx:
                g, stamp, now = tx.g, tx.w.stamp, tx.w.now
                for n in [*summarized_ids, *parent_ids, *child_ids]:
                    if n not in g.members:
                        raise DialogueConflictError(f"node {n} disappeared during compression")
                if any(n in g.topo.archived for n in summarized_ids):
                    raise DialogueConflictError("some of these nodes were compressed meanwhile")
                covered = g.member_turns(summarized_ids)
                parents = list(dict.fromkeys(parent_ids))
                s = self.rows.insert_summary(tx.handle, now, context.llm_role.content, covered)
                parent_turns = [g.tail(p) for p in parents]
                child_turns = [g.first(c) for c in dict.fromkeys(child_ids)]
                edges = [(s, p, k) for k, p in enumerate(parent_turns)]
                edges += [(c, s, len(g.tparents[c])) for c in child_turns]
                self.rows.insert_edges(tx.handle, edges)
                new_stamp = self.rows.set_conversation(tx.handle, now, added=1, bump_rev=True, stamp=stamp)
            try:
                g.add_summary(TurnRow(s, "system", "summary", False, None, "first"), parent_turns, child_turns, covered)
                self._stamp = new_stamp
            except (KeyError, IndexError, ValueError, RuntimeError):  # the next read reloads
                self._invalidate()
            return s

    def update_node(self, node_id: int, *, tags: Sequence[str] | None = None, summary: str | None = None) -> None:
        with self._lock, self._writing() as tx:
            if node_id not in tx.g.members:
                raise NodeNotFoundError(node_id, what="node_id")
            self.rows.update_turn(tx.handle, node_id, tags=tags, summary=summary)

    # ------------------------------------------------------------------------------------------------
    # key memories: memory rows sourced from the turns of their nodes
    # ------------------------------------------------------------------------------------------------
    def add_memory(self, memory: NewKeyMemory) -> tuple[int, bool]:
        vector = None
        if self.embed is not None:  # before the transaction: no lock is held while a model runs
            vector = self.embed([memory.content])[0]
        with self._lock, self._writing() as tx:
            for n in memory.source_nodes:
                if n not in tx.g.members:
                    raise NodeNotFoundError(n, what="source node")
            row = NewKeyMemoryRow(
                content=memory.content, source_turns=tx.g.member_turns(memory.source_nodes), tags=list(memory.tags),
                pinned=memory.pinned, packable=memory.packable, canonical_key=memory.canonical_key,
                turn_id=memory.turn_id, status=memory.status,
            )  # fmt: skip
            return self.rows.add_key_memory(tx.w, row, vector)

    def get_memories(self, memory_ids: Sequence[int] | None = None) -> list[KeyMemory]:
        with self._lock, self.rows.reading() as conn:
            g = self._sync(conn)
            return [_key_memory(r, g) for r in self.rows.key_memories(conn, memory_ids)]

    def set_memory_status(self, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        with self._lock, self._writing() as tx:
            return self.rows.set_key_memory_status(tx.w, turn_id=turn_id, from_status=from_status, to_status=to_status)

    def remove_memory(self, memory_id: int) -> bool:
        with self._lock, self._writing() as tx:
            return self.rows.remove_key_memory(tx.w, memory_id)


def _key_memory(r: KeyMemoryRow, g: TurnGraph) -> KeyMemory:
    """A key memory row as the Memory Graph's key memory: its source turns as their nodes."""
    nodes = {n for t in r.source_turns if (n := g.node_of.get(t)) is not None}
    return KeyMemory(
        id=r.id, content=r.content, tags=set(r.tags), pinned=r.pinned, packable=r.packable, status=r.status,
        turn_id=r.turn_id, canonical_key=r.canonical_key, source_nodes=nodes,
    )  # fmt: skip


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building big acyclic structures (it is restored,
    and left alone if it was already off)."""
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _pair(members: Sequence[Any]) -> LLMContextPair:
    """The message pair of a node from its turn rows (first turn first)."""
    first = members[0]
    if len(members) >= 2:
        reply = members[1]
        return LLMContextPair(
            user_role=LLMContext(role=first.role, content=first.content),
            llm_role=LLMContext(role=reply.role, content=reply.content),
        )
    if first.kind == "summary":
        return LLMContextPair(
            user_role=LLMContext(role="user", content=SUMMARY_LABEL),
            llm_role=LLMContext(role="assistant", content=first.content),
        )
    if first.role == "assistant":
        return LLMContextPair(
            user_role=LLMContext(role="user", content=""), llm_role=LLMContext(role="assistant", content=first.content)
        )
    return LLMContextPair(
        user_role=LLMContext(role=first.role, content=first.content), llm_role=LLMContext(role="assistant", content="")
    )
