"""Ancestor chains at scale: no recursion limit, no path enumeration (timings live in benchmarks/)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from deepcontext.dialogue import LLMContextGraph
from deepcontext.dialogue.paths import ancestor_chain, merge_chains, would_create_cycle
from deepcontext.dialogue.topology import Topology
from tests.dialogue.helpers import open_store, pair, store_backend


def _ladder(graph: LLMContextGraph, rungs: int) -> tuple[int, list[int], list[int]]:
    """``rungs`` diamonds in a row, each with a short arm (one node) and a long arm (two nodes):
    2**rungs root -> bottom paths. Returns the bottom and the expected longest / shortest chains."""
    top = graph.add_node(pair("top", "0"))
    longest, shortest = [top], [top]
    for i in range(rungs):
        short = graph.add_node(pair(f"short {i}", "s"), parent_ids=[top])
        long1 = graph.add_node(pair(f"long {i}a", "l"), parent_ids=[top])
        long2 = graph.add_node(pair(f"long {i}b", "l"), parent_ids=[long1])
        top = graph.add_node(pair(f"bottom {i}", "b"), parent_ids=[short, long2])
        longest += [long1, long2, top]
        shortest += [short, top]
    return top, longest, shortest


@pytest.mark.slow  # one of the longest tests
def test_a_100k_deep_chain_needs_no_recursion() -> None:
    graph = LLMContextGraph()
    ids = graph.add_chain([pair(f"q{i}", f"a{i}") for i in range(100_000)])
    assert sys.getrecursionlimit() < 100_000
    tip = ids[-1]
    assert graph.get_ancestor_chain(tip, max_nodes=None) == ids
    assert graph.get_ancestor_chain(tip, max_nodes=None, strategy="shortest") == ids
    assert graph.get_ancestor_chain(tip) == ids[-8:]
    assert graph.get_ancestor_chain(tip, max_nodes=5, strategy="first") == ids[-5:]
    assert len(graph.get_all_ancestors(tip)) == 99_999
    linear = graph.build_linear_context(tip, max_nodes=2)
    assert [m.content for m in linear] == ["q99998", "a99998", "q99999", "a99999"]


def test_a_ladder_of_1000_diamonds_is_solved_exactly() -> None:
    graph = LLMContextGraph()
    bottom, longest, shortest = _ladder(graph, 1000)
    assert graph.get_ancestor_chain(bottom, max_nodes=None, strategy="longest") == longest
    assert graph.get_ancestor_chain(bottom, max_nodes=None, strategy="shortest") == shortest
    assert graph.get_ancestor_chain(bottom, max_nodes=None, strategy="first") == shortest  # short arm listed first
    assert len(longest) == 3001 and len(shortest) == 2001
    assert graph.get_ancestor_chain(bottom, max_nodes=4) == longest[-4:]
    assert len(graph.get_all_ancestors(bottom)) == 4000


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_deep_chains_and_ladders_on_the_store(kind: str, request: pytest.FixtureRequest, tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/deep.db" if kind == "sqlite" else request.getfixturevalue("pg_database")()
    store = open_store(url)
    try:
        graph = LLMContextGraph(store_backend(store))
        ids: list[int] = []
        for _ in range(3):  # 3,000 deep: three times the seed's recursion limit
            ids += graph.add_chain([pair("q", "a") for _ in range(1000)], parent_ids=ids[-1:])
        assert graph.get_ancestor_chain(ids[-1], max_nodes=None) == ids
        ladder = LLMContextGraph(store_backend(store))
        bottom, longest, shortest = _ladder(ladder, 60 if kind == "postgres" else 150)  # 2**60 paths
        assert ladder.get_ancestor_chain(bottom, max_nodes=None) == longest
        assert ladder.get_ancestor_chain(bottom, max_nodes=None, strategy="shortest") == shortest
    finally:
        store.close()


def test_merge_chains_keeps_every_chains_order() -> None:
    main = [1, 2, 5, 7]
    other = [1, 3, 4, 7]
    merged = merge_chains([main, other], priority=main)
    assert merged == [1, 3, 4, 2, 5, 7]  # other branches first, the main chain last, all orders kept
    for chain in (main, other):
        assert [n for n in merged if n in chain] == chain
    assert merge_chains([]) == []


def test_cycle_check_sees_what_a_summary_stands_for() -> None:
    t = Topology()
    t.add_node(0, [])
    t.add_node(1, [0])
    t.add_node(2, [0])  # a branch off node 0
    t.add_node(9, [], is_summary=True)
    t.archive([0], 9)
    # in the active view node 2 hangs under summary 9; 9 under 2 would be a cycle
    assert t.effective_parents(2) == [9]
    assert would_create_cycle(t, 9, 2)
    assert not would_create_cycle(t, 2, 1)


def test_corrupt_summary_links_never_loop() -> None:
    t = Topology()
    t.add_node(0, [])
    t.add_node(1, [0])
    t.archive([0], 1)
    t.archive([1], 0)  # each "summarises" the other
    assert ancestor_chain(t, 1, None, "longest") == [0, 1]  # archived target: stored history
    assert t.resolve(0) == 0


def test_chains_ignore_an_edge_that_closes_a_cycle() -> None:
    t = Topology()
    t.add_node(0, [])
    t.add_node(1, [0])
    t.add_node(2, [1])
    t.add_edge(0, 2)  # written behind the checks' back
    for strategy in ("longest", "shortest", "first"):
        chain = ancestor_chain(t, 2, None, strategy)
        assert chain[-1] == 2 and len(chain) == len(set(chain))


@pytest.fixture
def big_random_dag() -> Callable[[int], LLMContextGraph]:
    def make(n: int) -> LLMContextGraph:
        import random

        rng = random.Random(7)
        g = LLMContextGraph()
        ids = [g.add_node(pair("r", "r"))]
        for i in range(1, n):
            k = rng.choice([1, 1, 1, 2, 3])
            parents = sorted({rng.choice(ids[max(0, i - 50) :]) for _ in range(k)})
            ids.append(g.add_node(pair(str(i), "x"), parent_ids=parents))
        return g

    return make


def test_dynamic_programme_matches_brute_force_on_small_dags(big_random_dag: Callable[[int], LLMContextGraph]) -> None:
    g = big_random_dag(60)
    with g.backend.topology() as topo:
        parents = {n: list(p) for n, p in topo.parents.items()}

    def all_paths(n: int) -> list[list[int]]:
        if not parents[n]:
            return [[n]]
        return [p + [n] for q in parents[n] for p in all_paths(q)]

    for node in range(40, 60):
        paths = all_paths(node)
        longest = g.get_ancestor_chain(node, max_nodes=None)
        shortest = g.get_ancestor_chain(node, max_nodes=None, strategy="shortest")
        assert longest in paths and len(longest) == max(map(len, paths))
        assert shortest in paths and len(shortest) == min(map(len, paths))


def test_bounded_chains_are_suffixes_of_the_full_chain_on_random_dags() -> None:
    """The single-parent fast path and the general algorithm agree: a chain cut to ``max_nodes`` is
    the end of the full chain, for every node and strategy, archived nodes included."""
    import random

    from deepcontext.dialogue.paths import ancestor_chain
    from deepcontext.dialogue.topology import Topology

    rng = random.Random(7)
    for _ in range(30):
        topo = Topology()
        for n in range(60):
            k = 0 if n == 0 else rng.choice([1, 1, 1, 1, 2, 3])
            parents = rng.sample(range(max(0, n - 8), n), min(k, n)) if n else []
            topo.add_node(n, parents)
        if rng.random() < 0.5:  # some archived nodes, seen through a summary
            topo.add_node(60, [])
            topo.archive(rng.sample(range(5, 40), 4), 60)
        for node in topo.node_ids():
            for strategy in ("longest", "shortest"):
                full = ancestor_chain(topo, node, None, strategy)
                for m in (1, 2, 3, 5, 8):
                    assert ancestor_chain(topo, node, m, strategy) == full[-m:], (node, strategy, m)
