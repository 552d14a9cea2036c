"""The store-backed backend: a conversation graph persisted as the conversation's turns.

The conversation record *is* the DAG: ``DeepContext.add`` stores each message as a row of ``turns``
chained after the conversation's tip, and this backend reads and writes the same rows (per
``user_id`` and ``conversation_id``), so a graph survives a restart and plain ``add`` chains are
readable as nodes. A node is one or two turns (a message and its reply); a summary node is a turn
of kind ``summary`` covering archived turns; no row or edge is ever deleted (mapping:
:mod:`deepcontext.dialogue.turnmap`; key memories: :mod:`deepcontext.dialogue.sqlmemories`).

Every write is one transaction that first locks the conversation row and re-reads the structure
under that lock; reads use a per-conversation cache checked against the conversation row.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, insert, select, update

from deepcontext.clock import Clock, SystemClock
from deepcontext.dialogue import sqlmemories, sqlturns
from deepcontext.dialogue.backend import NewKeyMemory, NewNode
from deepcontext.dialogue.paths import would_create_cycle
from deepcontext.dialogue.sqlturns import NODE_SUMMARY_KEY, PART_KEY, REV_KEY
from deepcontext.dialogue.sqltx import Stamp, WriteTx
from deepcontext.dialogue.topology import Topology
from deepcontext.dialogue.turnmap import TurnGraph, TurnRow
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
from deepcontext.store.sqlparts import chunks
from deepcontext.text import content_hash

__all__ = ["PART_KEY", "REV_KEY", "StoreDialogueBackend"]


class StoreDialogueBackend:
    """A :class:`~deepcontext.dialogue.backend.DialogueBackend` over a deepcontext SQL store.

    ``store`` is a migrated :class:`~deepcontext.store.sql.SQLStore` (SQLite or PostgreSQL); the
    graph and key memories of (``user_id``, ``conversation_id``) live in its tables.
    """

    def __init__(
        self,
        store: Any,
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
        self.t = store.t
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.clock: Clock = clock or SystemClock()
        #: texts -> unit vectors of the store's size (an embedder's ``embed``): key memories get an
        #: embedding, so the engine's vector search finds them; None: keyword search only
        self.embed = embed
        self._lock = threading.RLock()
        self._graph: TurnGraph | None = None
        self._stamp: Stamp | None = None

    def _sync(self, conn: Connection, stamp: Stamp | None = None, *, have_stamp: bool = False) -> TurnGraph:
        """Bring the cache up to the database state seen by ``conn``."""
        if not have_stamp:
            stamp = sqlturns.read_stamp(self, conn)
        if stamp is None:
            self._graph, self._stamp = TurnGraph(), None
            return self._graph
        g = self._graph
        if g is not None and stamp == self._stamp:
            return g
        if g is not None and self._stamp is not None and stamp[2] == self._stamp[2]:
            try:
                ok = g.append(*sqlturns.load(self, conn, g.max_id))
            except (KeyError, IndexError, ValueError, RuntimeError):  # half-applied: reload below
                ok = False
            if ok and len(g.rows) == stamp[0]:
                self._stamp = stamp
                return g
        with _gc_paused():  # a full load makes ~10 containers per turn: the cyclic GC only slows it down
            g = TurnGraph.build(*sqlturns.load(self, conn, 0))
        self._graph, self._stamp = g, stamp
        return g

    def _invalidate(self) -> None:
        self._graph, self._stamp = None, None

    @contextmanager
    def topology(self) -> Iterator[Topology]:
        with self._lock:
            with self.store.connection() as conn:
                g = self._sync(conn)
            yield g.topo

    @contextmanager
    def _writing(self) -> Iterator[WriteTx]:
        """A write transaction holding the user's and the conversation's locks, with the cache
        synced inside it. Cache updates for the write are applied by the caller after the block
        (after commit).

        Lock order as in the engine's own writes: the ``users`` row first (``bump_user`` upserts
        and, on PostgreSQL, locks it), then the conversation row (``FOR UPDATE``), so a dialogue
        write and a ``DeepContext.add`` of the same user never deadlock.
        """
        now = self.clock.now()
        with self.store.transaction() as conn:
            rev = self.store.bump_user(conn, self.user_id, now)
            stamp = sqlturns.read_stamp(self, conn, for_update=True)
            if stamp is None:
                cv = self.t.conversations
                conn.execute(
                    self.store.upsert(cv)
                    .values(
                        user_id=self.user_id,
                        conversation_id=self.conversation_id,
                        tip_turn_id=None,
                        turn_count=0,
                        created_at=now,
                        updated_at=now,
                        metadata={},
                    )
                    .on_conflict_do_nothing(index_elements=[cv.c.user_id, cv.c.conversation_id])
                )
                stamp = sqlturns.read_stamp(self, conn, for_update=True)
                assert stamp is not None
            g = self._sync(conn, stamp, have_stamp=True)
            yield WriteTx(conn, g, stamp, now, rev)

    # ------------------------------------------------------------------------------------------------
    # nodes and edges
    # ------------------------------------------------------------------------------------------------
    def tip_node_id(self) -> int | None:
        with self._lock:
            with self.store.connection() as conn:
                g = self._sync(conn)
            tip = self._stamp[1] if self._stamp else None
            return None if tip is None else g.node_of.get(int(tip))

    def get_nodes(self, node_ids: Sequence[int]) -> dict[int, LLMContextGraphNode]:
        tt = self.t.turns
        with self._lock:
            with self.store.connection() as conn:
                g = self._sync(conn)
                ids = [n for n in dict.fromkeys(node_ids) if n in g.members]
                turns: dict[int, Any] = {}
                for chunk in chunks(g.member_turns(ids)):
                    for r in conn.execute(
                        select(tt.c.id, tt.c.role, tt.c.kind, tt.c.content, tt.c.tags, tt.c.metadata).where(
                            tt.c.user_id == self.user_id, tt.c.id.in_(list(chunk))
                        )
                    ):
                        turns[int(r.id)] = r
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
                    summary=str((first.metadata or {}).get(NODE_SUMMARY_KEY, "")),
                    tags=set(first.tags or ()),
                )
            return out

    def node_turn_ids(self, node_ids: Sequence[int]) -> dict[int, list[int]]:
        """The turn ids of each node (first turn first); unknown nodes are left out."""
        with self._lock:
            with self.store.connection() as conn:
                g = self._sync(conn)
            return {n: list(g.members[n]) for n in node_ids if n in g.members}

    def iter_nodes(self, batch: int = 500) -> Iterator[LLMContextGraphNode]:
        with self.topology() as topo:
            ids = topo.node_ids()
        for chunk in chunks(ids, batch):
            yield from self.get_nodes(chunk).values()

    def add_nodes(self, nodes: Sequence[NewNode], *, chain: bool = False, after_tip: bool = False) -> list[int]:
        if not nodes:
            return []
        tt = self.t.turns
        with self._lock:
            with self._writing() as tx:
                g, stamp, now = tx.g, tx.stamp, tx.now
                for nn in nodes:
                    for p in nn.parent_ids:
                        if p not in g.members:
                            raise NodeNotFoundError(p, what="parent_id")
                # every turn in one multi-row INSERT ... RETURNING, in conversation order
                values: list[dict[str, Any]] = []
                spans: list[tuple[int, int]] = []  # per node: (index of its first turn, number of turns)
                for nn in nodes:
                    u, a = nn.context.user_role, nn.context.llm_role
                    halves = [h for h in (u, a) if h.content] or [u]
                    spans.append((len(values), len(halves)))
                    for k, h in enumerate(halves):
                        values.append(
                            {
                                "user_id": self.user_id,
                                "conversation_id": self.conversation_id,
                                "role": h.role,
                                "name": None,
                                "content": h.content,
                                "content_hash": content_hash(h.content),
                                "kind": "message",
                                "said_at": now,
                                "created_at": now,
                                "archived": False,
                                "summary_of": [],
                                "tags": list(dict.fromkeys(nn.tags)) if k == 0 else [],
                                "metadata": {PART_KEY: "first" if k == 0 else "reply"},
                            }
                        )
                turn_ids = [
                    int(i) for i in tx.conn.execute(insert(tt).returning(tt.c.id, sort_by_parameter_order=True), values).scalars()
                ]
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
                    rows.append(TurnRow(first, values[at]["role"], "message", False, None, "first"))
                    if count == 2:
                        edges.append((last, first, 0))
                        rows.append(TurnRow(last, values[at + 1]["role"], "message", False, None, "reply"))
                    tails[first] = last
                    ids.append(first)
                sqlturns.insert_edges(self, tx.conn, edges)
                new_stamp = sqlturns.set_conversation(self, tx.conn, now, added=len(rows), tip=rows[-1].id, stamp=stamp)
            if g is self._graph and g.append(rows, [(c, p) for c, p, _ in edges]):
                self._stamp = new_stamp
            else:
                self._invalidate()
            return ids

    def add_edge(self, child_id: int, parent_id: int) -> bool:
        with self._lock:
            with self._writing() as tx:
                conn, g, stamp, now = tx.conn, tx.g, tx.stamp, tx.now
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
                    sqlturns.insert_edges(self, conn, [(c, p, len(g.tparents[c]))])
                new_stamp = sqlturns.set_conversation(self, conn, now, added=0, bump_rev=True, stamp=stamp)
            try:
                g.add_turn_edge(c, p)
                self._stamp = new_stamp
            except (KeyError, IndexError, ValueError, RuntimeError):  # the next read reloads
                self._invalidate()
            return True

    def add_summary(
        self, context: LLMContextPair, *, parent_ids: Sequence[int], summarized_ids: Sequence[int], child_ids: Sequence[int]
    ) -> int:
        tt = self.t.turns
        with self._lock:
            with self._writing() as tx:
                conn, g, stamp, now = tx.conn, tx.g, tx.stamp, tx.now
                for n in [*summarized_ids, *parent_ids, *child_ids]:
                    if n not in g.members:
                        raise DialogueConflictError(f"node {n} disappeared during compression")
                if any(n in g.topo.archived for n in summarized_ids):
                    raise DialogueConflictError("some of these nodes were compressed meanwhile")
                covered = g.member_turns(summarized_ids)
                parents = list(dict.fromkeys(parent_ids))
                s = sqlturns.insert_turn(
                    self, conn, now, role="system", content=context.llm_role.content, kind="summary", summary_of=covered
                )
                parent_turns = [g.tail(p) for p in parents]
                child_turns = [g.first(c) for c in dict.fromkeys(child_ids)]
                edges = [(s, p, k) for k, p in enumerate(parent_turns)]
                edges += [(c, s, len(g.tparents[c])) for c in child_turns]
                sqlturns.insert_edges(self, conn, edges)
                for chunk in chunks(covered):
                    conn.execute(
                        update(tt)
                        .where(tt.c.user_id == self.user_id, tt.c.id.in_(list(chunk)))
                        .values(archived=True, summarized_by=s)
                    )
                new_stamp = sqlturns.set_conversation(self, conn, now, added=1, bump_rev=True, stamp=stamp)
            try:
                g.add_summary(TurnRow(s, "system", "summary", False, None, "first"), parent_turns, child_turns, covered)
                self._stamp = new_stamp
            except (KeyError, IndexError, ValueError, RuntimeError):  # the next read reloads
                self._invalidate()
            return s

    def update_node(self, node_id: int, *, tags: Sequence[str] | None = None, summary: str | None = None) -> None:
        tt = self.t.turns
        with self._lock, self._writing() as tx:
            conn, g = tx.conn, tx.g
            if node_id not in g.members:
                raise NodeNotFoundError(node_id, what="node_id")
            values: dict[str, Any] = {}
            if tags is not None:
                values["tags"] = list(dict.fromkeys(tags))
            if summary is not None:
                meta = conn.execute(select(tt.c.metadata).where(tt.c.id == node_id)).scalar_one() or {}
                values["metadata"] = {**meta, NODE_SUMMARY_KEY: summary}
            if values:
                conn.execute(update(tt).where(tt.c.user_id == self.user_id, tt.c.id == node_id).values(**values))

    # ------------------------------------------------------------------------------------------------
    # key memories (SQL in deepcontext.dialogue.sqlmemories)
    # ------------------------------------------------------------------------------------------------
    def add_memory(self, memory: NewKeyMemory) -> tuple[int, bool]:
        vector = None
        if self.embed is not None:  # before the transaction: no lock is held while a model runs
            vector = self.embed([memory.content])[0]
        with self._lock, self._writing() as tx:
            for n in memory.source_nodes:
                if n not in tx.g.members:
                    raise NodeNotFoundError(n, what="source node")
            return sqlmemories.add(self, tx, memory, embedding=vector)

    def get_memories(self, memory_ids: Sequence[int] | None = None) -> list[KeyMemory]:
        with self._lock, self.store.connection() as conn:
            g = self._sync(conn)
            return sqlmemories.load(self, conn, g, memory_ids)

    def set_memory_status(self, *, turn_id: int, from_status: str, to_status: str) -> list[int]:
        with self._lock, self._writing() as tx:
            return sqlmemories.set_status(self, tx, turn_id=turn_id, from_status=from_status, to_status=to_status)

    def remove_memory(self, memory_id: int) -> bool:
        with self._lock, self._writing() as tx:
            return sqlmemories.remove(self, tx, memory_id)


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
