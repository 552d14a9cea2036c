"""Path algorithms on a :class:`~deepcontext.dialogue.topology.Topology`: linear time, no recursion.

- :func:`ancestor_chain`: one root -> node path. ``longest`` / ``shortest`` are a dynamic programme
  over a topological order of the node's ancestor set (each node and edge looked at once; paths are
  never enumerated), ``first`` follows the first parent. While the nodes before ``node_id`` have a
  single parent each, every strategy gives the same suffix: that walk answers directly, so the last
  8 rounds of a 100,000-node conversation cost 8 steps, not 100,000. A live node's chain uses the active view
  (archived nodes replaced by their summaries); an archived node's chain is its original history.
- :func:`all_ancestors`, :func:`reaches`, :func:`would_create_cycle`, :func:`merge_chains`.

Ties are broken by parent order (the order the edges were made in), so results are deterministic.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from deepcontext.dialogue.topology import Topology
from deepcontext.errors import ValidationError

__all__ = ["STRATEGIES", "all_ancestors", "ancestor_chain", "merge_chains", "reaches", "would_create_cycle"]

STRATEGIES = ("longest", "shortest", "first")


def _parent_fn(topo: Topology, node_id: int) -> Callable[[int], Sequence[int]]:
    if node_id in topo.archived:
        parents = topo.parents
        return lambda n: parents.get(n, ())
    if not topo.archived:
        parents = topo.parents
        return lambda n: parents.get(n, ())
    return topo.effective_parents


def _topological_ancestors(target: int, parents_of: Callable[[int], Sequence[int]]) -> tuple[list[int], dict[int, Sequence[int]]]:
    """The ancestors of ``target`` (and itself), each after all of its parents (iterative DFS
    post-order). Returns the order and the parent lists seen. An edge closing a cycle (impossible
    in a valid graph) is ignored rather than followed."""
    plist: dict[int, Sequence[int]] = {target: parents_of(target)}
    state: dict[int, int] = {target: 1}  # 1 on the stack, 2 done
    order: list[int] = []
    stack: list[tuple[int, int]] = [(target, 0)]
    while stack:
        node, i = stack[-1]
        ps = plist[node]
        pushed = False
        while i < len(ps):
            p = ps[i]
            i += 1
            if p not in state:
                stack[-1] = (node, i)
                state[p] = 1
                plist[p] = parents_of(p)
                stack.append((p, 0))
                pushed = True
                break
        if not pushed:
            stack.pop()
            state[node] = 2
            order.append(node)
    return order, plist


def ancestor_chain(topo: Topology, node_id: int, max_nodes: int | None = 8, strategy: str = "longest") -> list[int]:
    """One path root -> ``node_id`` (both ends included), cut to its last ``max_nodes`` nodes.

    ``longest`` (default) takes a longest path, ``shortest`` a shortest one, ``first`` follows the
    first parent at each step. The caller checks that ``node_id`` exists.
    """
    if strategy not in STRATEGIES:
        raise ValidationError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}", field="strategy")
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValidationError("max_nodes must be a positive integer or None", field="max_nodes")
    parents_of = _parent_fn(topo, node_id)

    if strategy != "first":
        # Fast path: while each node has exactly one parent, every path to ``node_id`` ends with the
        # same nodes, whatever the strategy. A walk of ``max_nodes`` such steps (or to a root) is the
        # answer without looking at the rest of the graph; at a merge, the general algorithm runs.
        suffix = [node_id]
        seen_walk = {node_id}
        unique = True
        n = node_id
        while max_nodes is None or len(suffix) < max_nodes:
            ps = parents_of(n)
            if not ps:
                break
            if len(ps) > 1 or ps[0] in seen_walk:
                unique = False
                break
            n = ps[0]
            seen_walk.add(n)
            suffix.append(n)
        if unique:
            suffix.reverse()
            return suffix

    if strategy == "first":
        walk = [node_id]
        seen = {node_id}
        n = node_id
        while max_nodes is None or len(walk) < max_nodes:
            nxt = next((p for p in parents_of(n) if p not in seen), None)
            if nxt is None:
                break
            walk.append(nxt)
            seen.add(nxt)
            n = nxt
        walk.reverse()
        return walk

    order, plist = _topological_ancestors(node_id, parents_of)
    longest = strategy == "longest"
    dist: dict[int, int] = {}
    pred: dict[int, int | None] = {}
    for v in order:
        best: int | None = None
        best_d = 0
        for p in plist[v]:
            d = dist.get(p)  # None: not finished before v (an edge closing a cycle): ignored
            if d is None:
                continue
            if best is None or (d > best_d if longest else d < best_d):
                best, best_d = p, d
        dist[v] = best_d + 1
        pred[v] = best
    path: list[int] = []
    cur: int | None = node_id
    while cur is not None:
        path.append(cur)
        cur = pred[cur]
    path.reverse()
    if max_nodes is not None and len(path) > max_nodes:
        path = path[-max_nodes:]
    return path


def all_ancestors(topo: Topology, node_id: int) -> set[int]:
    """Every node with a stored path to ``node_id`` (archived ones included), itself excluded."""
    parents = topo.parents
    out: set[int] = set()
    stack = list(parents.get(node_id, ()))
    while stack:
        p = stack.pop()
        if p in out:
            continue
        out.add(p)
        stack.extend(parents.get(p, ()))
    out.discard(node_id)
    return out


def reaches(topo: Topology, start: int, target: int) -> bool:
    """Whether ``target`` is reachable from ``start`` going to children, where a summary also leads
    to the nodes it covers (it stands for them in the active view)."""
    if start == target:
        return True
    children, covers = topo.children, topo.covers
    seen = {start}
    stack = [start]
    while stack:
        n = stack.pop()
        for c in children.get(n, ()):
            if c == target:
                return True
            if c not in seen:
                seen.add(c)
                stack.append(c)
        for c in covers.get(n, ()):
            if c == target:
                return True
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return False


def would_create_cycle(topo: Topology, child_id: int, parent_id: int) -> bool:
    """Whether the edge parent -> child would close a cycle (in the stored graph or the active view)."""
    return reaches(topo, child_id, parent_id)


def merge_chains(chains: Sequence[Sequence[int]], priority: Sequence[int] = ()) -> list[int]:
    """Merge root -> node chains into one sequence where every chain's order is kept.

    Consecutive nodes of a chain are ancestor -> descendant in the DAG, so the merge is a
    topological order of their union (Kahn's algorithm). Among nodes free to go next, nodes off
    ``priority`` (the main chain) come first, by id, so background from other branches precedes
    the main chain, whose nodes keep their order and end the sequence.
    """
    rank = {n: i for i, n in enumerate(priority)}
    succ: dict[int, list[int]] = {}
    indeg: dict[int, int] = {}
    for chain in chains:
        prev: int | None = None
        for n in chain:
            indeg.setdefault(n, 0)
            succ.setdefault(n, [])
            if prev is not None and prev != n and n not in succ[prev]:
                succ[prev].append(n)
                indeg[n] += 1
            prev = n

    def key(n: int) -> tuple[int, int]:
        r = rank.get(n)
        return (0, n) if r is None else (1, r)

    ready = [key(n) + (n,) for n, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        *_, n = heapq.heappop(ready)
        out.append(n)
        for c in succ[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, key(c) + (c,))
    if len(out) < len(indeg):  # inconsistent chains (cannot happen on a DAG): keep the rest by key
        done = set(out)
        out += sorted((n for n in indeg if n not in done), key=key)
    return out
