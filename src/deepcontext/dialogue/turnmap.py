"""How a conversation's turns (one message per row) group into Memory Graph nodes (message pairs).

The same rules for a full build and for appends, so every process sees the same nodes: a node is a
*first* turn and optionally its *reply*, with the first turn's id. A turn is the reply of ``u`` when
its metadata says so (``dialogue_part = "reply"``, ``u`` its only parent) or, without a marker, when
it is an assistant message whose only parent is a lone user message ``u`` whose only child it is.
Summary turns are single-turn nodes. Node edges are turn edges between nodes (parent's last turn to
child's first). A node is archived when its first turn is; its summary is the node of that turn's
``summarized_by``. Parents in other conversations are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deepcontext.dialogue.topology import Topology
from deepcontext.store import TurnRow

__all__ = ["TurnGraph", "TurnRow"]


def _ascending(d: Iterable[int]) -> bool:
    prev = None
    for k in d:
        if prev is not None and k <= prev:
            return False
        prev = k
    return True


class TurnGraph:
    """Turn-level structure of one conversation, its grouping into nodes and the node-level topology."""

    def __init__(self) -> None:
        self.rows: dict[int, TurnRow] = {}
        self.tparents: dict[int, list[int]] = {}
        self.tchildren: dict[int, list[int]] = {}
        self.node_of: dict[int, int] = {}
        self.members: dict[int, list[int]] = {}
        self.topo = Topology()
        self.max_id = 0

    # --- reading -----------------------------------------------------------------------------------
    def first(self, node_id: int) -> int:
        return node_id

    def tail(self, node_id: int) -> int:
        return self.members[node_id][-1]

    def member_turns(self, node_ids: Iterable[int]) -> list[int]:
        return [t for n in node_ids for t in self.members.get(n, ())]

    def nodes_of_turns(self, turn_ids: Iterable[int]) -> set[int]:
        return {self.node_of[t] for t in turn_ids if t in self.node_of}

    # --- building ----------------------------------------------------------------------------------
    @classmethod
    def build(cls, rows: Sequence[TurnRow], edges: Sequence[tuple[int, int]]) -> TurnGraph:
        """From every turn of the conversation and the edges (child, parent) whose child is one of
        them, in (child, position) order."""
        g = cls()
        ordered = rows if all(rows[i].id < rows[i + 1].id for i in range(len(rows) - 1)) else sorted(rows, key=lambda r: r.id)
        g.rows = {r.id: r for r in ordered}
        tparents: dict[int, list[int]] = {t: [] for t in g.rows}
        tchildren: dict[int, list[int]] = {t: [] for t in g.rows}
        for child, parent in edges:
            ps = tparents.get(child)
            if ps is not None and parent in tchildren and parent not in ps:
                ps.append(parent)
                tchildren[parent].append(child)
        g.tparents, g.tchildren = tparents, tchildren
        g.max_id = ordered[-1].id if ordered else 0
        g.regroup()
        return g

    def regroup(self) -> None:
        """Recompute the nodes and the node-level topology from the turn-level data (one pass in id
        order; the rules of :meth:`_reply_of`, inlined: this runs over every turn on a full load)."""
        rows, tparents, tchildren = self.rows, self.tparents, self.tchildren
        node_of: dict[int, int] = {}
        members: dict[int, list[int]] = {}
        for t in sorted(rows) if not _ascending(rows) else rows:
            r = rows[t]
            u = None
            if r.kind == "message" and r.part != "first":
                ps = tparents[t]
                if len(ps) == 1:
                    p = ps[0]
                    if node_of.get(p) == p and len(members[p]) == 1:
                        rp = rows[p]
                        if rp.kind == "message" and (
                            r.part == "reply" or (r.role == "assistant" and rp.role == "user" and len(tchildren[p]) == 1)
                        ):
                            u = p
            if u is None:
                node_of[t] = t
                members[t] = [t]
            else:
                node_of[t] = u
                members[u].append(t)
        self.node_of, self.members = node_of, members
        topo = Topology()
        parents, children = topo.parents, topo.children
        for n, ms in members.items():
            out: list[int] = []
            for m in ms:
                for p in tparents[m]:
                    q = node_of[p]
                    if q != n and q not in out:
                        out.append(q)
            parents[n] = out
            children.setdefault(n, [])
            for q in out:
                children.setdefault(q, []).append(n)
            r = rows[n]
            if r.kind == "summary":
                topo.summaries.add(n)
        for n in members:
            if rows[n].archived:
                self._archive_from_rows(topo, n)
        self.topo = topo

    def _reply_of(self, t: int) -> int | None:
        """The first turn of the node ``t`` completes as its reply, or None."""
        r = self.rows[t]
        if r.kind != "message" or r.part == "first":
            return None
        ps = self.tparents[t]
        if len(ps) != 1:
            return None
        u = ps[0]
        if self.node_of.get(u) != u or len(self.members[u]) != 1:
            return None
        ru = self.rows[u]
        if ru.kind != "message":
            return None
        if r.part == "reply":
            return u
        if r.role == "assistant" and ru.role == "user" and self.tchildren[u] == [t]:
            return u
        return None

    def _node_parents(self, n: int) -> list[int]:
        out: list[int] = []
        for m in self.members[n]:
            for p in self.tparents[m]:
                q = self.node_of[p]
                if q != n and q not in out:
                    out.append(q)
        return out

    def _archive_from_rows(self, topo: Topology, n: int) -> None:
        r = self.rows[n]
        if not r.archived:
            return
        s = self.node_of.get(r.summarized_by) if r.summarized_by is not None else None
        if s is None or s == n:
            topo.archived.add(n)
        else:
            topo.archive([n], s)

    # --- incremental changes -----------------------------------------------------------------------
    def append(self, rows: Sequence[TurnRow], edges: Sequence[tuple[int, int]]) -> bool:
        """Add new turns (ids above every known one) and their parent edges (child, parent), in
        (child, position) order. Returns False when the change cannot be applied incrementally
        (the structure may then be half-updated: rebuild it from the database)."""
        by_child: dict[int, list[int]] = {}
        for child, parent in edges:
            by_child.setdefault(child, []).append(parent)
        new = sorted(rows, key=lambda r: r.id)
        for r in new:  # turn level first, so the grouping below sees final children lists
            t = r.id
            if t <= self.max_id or r.archived:
                return False
            ps: list[int] = []
            for p in by_child.get(t, ()):
                if p in self.rows:
                    if p not in ps:
                        ps.append(p)
                elif p > t:
                    return False  # an edge to a later turn: only an explicit add_edge makes those
            self.rows[t] = r
            self.tparents[t] = ps
            self.tchildren[t] = []
            self.max_id = t
            for p in ps:
                self.tchildren[p].append(t)
        for r in new:
            for p in self.tparents[r.id]:
                # an inferred pair whose first turn gains a second child is no longer a pair
                members = self.members.get(p)
                if members and len(members) == 2 and self.rows[members[1]].part is None and len(self.tchildren[p]) > 1:
                    self.regroup()
                    return True
        for r in new:
            t = r.id
            u = self._reply_of(t)
            if u is not None:
                self.node_of[t] = u
                self.members[u].append(t)
            else:
                self.node_of[t] = t
                self.members[t] = [t]
                self.topo.add_node(t, self._node_parents(t), is_summary=r.kind == "summary")
        return True

    def add_turn_edge(self, child: int, parent: int) -> None:
        """An edge between two known turns (explicit ``add_edge``): regroups."""
        if parent not in self.tparents[child]:
            self.tparents[child].append(parent)
            self.tchildren[parent].append(child)
        self.regroup()

    def add_summary(
        self, row: TurnRow, parent_turns: Sequence[int], child_turns: Sequence[int], archived_turns: Sequence[int]
    ) -> None:
        """A summary turn written by this process, its edges, and the turns it archived."""
        ok = self.append([row], [(row.id, p) for p in parent_turns])
        if not ok:
            raise RuntimeError("summary turn out of order")  # callers reload on any exception
        s = row.id
        for c in child_turns:
            if s not in self.tparents[c]:
                self.tparents[c].append(s)
                self.tchildren[s].append(c)
                self.topo.add_edge(self.node_of[c], s)
        nodes: list[int] = []
        for t in archived_turns:
            self.rows[t] = self.rows[t]._replace(archived=True, summarized_by=s)
            n = self.node_of[t]
            if n == t:
                nodes.append(n)
        self.topo.archive(nodes, s)
