"""The shape of a conversation DAG at node level: parents, children, archive flags, summary links.

Both backends keep one :class:`Topology` per conversation (the in-memory backend as its storage,
the store-backed backend as a cache kept in sync with the database); the path algorithms of
:mod:`deepcontext.dialogue.paths` only read it.

The *active view*: a live (not archived) node sees an archived parent ``p`` as the summary that
stands for it (``resolve(p)``: follow ``summarized_by`` until a live node). So a branch whose
ancestors were compressed hangs under their summary, and a chain never runs through archived
nodes. An archived node keeps its stored edges, so the original history stays reachable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["Topology"]


class Topology:
    """Node-level structure of one conversation. Parent lists keep the order edges were made in."""

    __slots__ = ("archived", "children", "covers", "parents", "summaries", "summarized_by")

    def __init__(self) -> None:
        self.parents: dict[int, list[int]] = {}
        self.children: dict[int, list[int]] = {}
        self.archived: set[int] = set()
        #: archived node -> the summary node that covers it
        self.summarized_by: dict[int, int] = {}
        #: summary node -> the nodes it covers directly
        self.covers: dict[int, list[int]] = {}
        self.summaries: set[int] = set()

    # --- reading ---------------------------------------------------------------------------------
    def __contains__(self, node_id: object) -> bool:
        return node_id in self.parents

    def __len__(self) -> int:
        return len(self.parents)

    def node_ids(self) -> list[int]:
        """Every node id, ascending (ids grow with time in both backends)."""
        return sorted(self.parents)

    def roots(self) -> set[int]:
        return {n for n, ps in self.parents.items() if not ps}

    def is_live(self, node_id: int) -> bool:
        return node_id not in self.archived

    def resolve(self, node_id: int) -> int:
        """The live node standing for ``node_id``: itself, or the summary covering it (followed
        through summaries of summaries). An archived node without a summary stands for itself."""
        n = node_id
        seen = 0
        while n in self.archived:
            s = self.summarized_by.get(n)
            if s is None or s not in self.parents:
                return n
            n = s
            seen += 1
            if seen > len(self.parents):  # corrupt summary links: never loop forever
                return node_id
        return n

    def effective_parents(self, node_id: int) -> list[int]:
        """Parents in the active view: archived parents replaced by their summaries, no duplicates."""
        ps = self.parents.get(node_id, ())
        if not self.archived:
            return list(ps)
        out: list[int] = []
        for p in ps:
            q = self.resolve(p) if p in self.archived else p
            if q != node_id and q not in out:
                out.append(q)
        return out

    # --- writing ---------------------------------------------------------------------------------
    def add_node(self, node_id: int, parent_ids: Sequence[int], *, is_summary: bool = False) -> None:
        self.parents[node_id] = list(parent_ids)
        self.children.setdefault(node_id, [])
        for p in parent_ids:
            self.children.setdefault(p, []).append(node_id)
        if is_summary:
            self.summaries.add(node_id)

    def add_edge(self, child_id: int, parent_id: int) -> None:
        if parent_id in self.parents[child_id]:
            return
        self.parents[child_id].append(parent_id)
        self.children.setdefault(parent_id, []).append(child_id)

    def archive(self, node_ids: Iterable[int], summary_id: int) -> None:
        covered = self.covers.setdefault(summary_id, [])
        for n in node_ids:
            self.archived.add(n)
            self.summarized_by[n] = summary_id
            covered.append(n)

    def copy(self) -> Topology:
        t = Topology()
        t.parents = {k: list(v) for k, v in self.parents.items()}
        t.children = {k: list(v) for k, v in self.children.items()}
        t.archived = set(self.archived)
        t.summarized_by = dict(self.summarized_by)
        t.covers = {k: list(v) for k, v in self.covers.items()}
        t.summaries = set(self.summaries)
        return t
