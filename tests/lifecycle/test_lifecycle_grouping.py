"""Consolidation logic without a database: union-find grouping, contradictions, the extractive merger."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from deepcontext.lifecycle.consolidate import (
    GroupItem,
    Statement,
    UnionFind,
    conflict,
    extractive_merge,
    features,
    group_memories,
    join_sentences,
)

T = datetime(2025, 1, 1, tzinfo=UTC)


def unit(i: int, dim: int = 8, tilt: float = 0.0) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    v[(i + 1) % dim] = tilt
    return v / np.linalg.norm(v)


def test_union_find() -> None:
    uf = UnionFind(6)
    assert uf.union(0, 1) and uf.union(1, 2) and not uf.union(0, 2)
    uf.union(4, 5)
    assert uf.groups() == [[0, 1, 2], [3], [4, 5]]


def test_groups_by_shared_entities_and_similarity() -> None:
    items = [
        GroupItem("semantic", [1, 10], unit(0), 1),  # 0: user + Pixel
        GroupItem("semantic", [1, 10], unit(1), 2),  # 1: user + Pixel
        GroupItem("semantic", [1, 20], unit(2), 3),  # 2: user + Lisbon
        GroupItem("semantic", [1], unit(2, tilt=0.1), 4),  # 3: user only, near 2's vector
        GroupItem("semantic", [1, 30], unit(4), 5),  # 4: user + Acme
        GroupItem("episodic", [10], unit(0), 6),  # 5: Pixel, but another type
    ]
    # entity 1 (the user) is a hub: it joins nothing by itself
    assert sorted(group_memories(items, similarity=0.9, hubs={1})) == [[0, 1], [2, 3], [4], [5]]
    # without the similarity leg, 3 stays alone
    assert sorted(group_memories(items, similarity=1.1, hubs={1})) == [[0, 1], [2], [3], [4], [5]]
    # without hubs everything of one type sharing entity 1 is one group
    assert sorted(group_memories(items, similarity=1.1)) == [[0, 1, 2, 3, 4], [5]]
    # or hubs by frequency: entity 1 is in 5 of 5 semantic memories (more than half, more than 3)
    assert sorted(group_memories(items, similarity=1.1, hub_fraction=0.5)) == [[0, 1], [2], [3], [4], [5]]


def test_large_groups_are_cut_in_chronological_chunks() -> None:
    items = [GroupItem("semantic", [100 + i, 101 + i], None, when=10 - i) for i in range(5)]  # a chain
    assert group_memories(items, similarity=0.99, max_group=2) == [[4, 3], [2, 1], [0]]
    with pytest.raises(ValueError):
        group_memories(items, similarity=0.9, max_group=1)


NAMES = ["Maya", "Lena", "Lisbon", "Porto", "Acme", "Northwind Labs", "Pixel", "Berlin"]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("Maya lives in Lisbon", "Maya lives in Porto", ("value", True)),
        ("Maya is 31", "Maya is 32", ("value", True)),
        ("Maya eats meat", "Maya does not eat meat", ("negation", True)),
        ("Maya lives in Lisbon", "Maya no longer lives in Lisbon", ("negation", True)),
        ("The meeting is on Monday", "The meeting is on Tuesday", ("value", True)),
        ("Maya works at Northwind Labs in Lisbon", "Maya works at Acme in Porto", ("value", True)),
        ("Maya prefers window seats", "Maya prefers aisle seats", ("frame", False)),
        ("Maya lives in Lisbon", "Maya's home is in Lisbon", None),
        ("Maya works at Acme", "Lena works at Acme", None),  # other subject
        ("Maya has a dog", "Maya has a cat", None),
        ("Maya works at Acme", "Maya lives in Porto", None),
        ("Maya has a dog named Pixel", "Pixel is a border collie", None),
    ],
)
def test_contradictions(a: str, b: str, expected: tuple[str, bool] | None) -> None:
    c = conflict(features(a, NAMES), features(b, NAMES))
    assert (None if c is None else (c.kind, c.strong)) == expected


def test_extractive_merge_keeps_the_informative_drops_duplicates_keeps_contradictions_apart() -> None:
    s = [
        Statement("Maya lives in Lisbon", T, names=["Maya", "Lisbon"]),
        Statement("Maya adopted a dog named Pixel", T + timedelta(days=1), names=["Maya", "Pixel"]),
        Statement("Maya adopted a dog", T + timedelta(days=2), names=["Maya"]),  # covered by 1
        Statement("Maya lives in Porto", T + timedelta(days=3), names=["Maya", "Porto"]),
        Statement("Pixel loves the beach", T + timedelta(days=4), names=["Pixel"]),
    ]
    facts = extractive_merge(s)
    assert [(f.text, f.sources) for f in facts] == [
        ("Maya adopted a dog named Pixel. Pixel loves the beach.", [1, 2, 4]),
        ("Maya lives in Lisbon", [0]),
        ("Maya lives in Porto", [3]),
    ]
    # every input is covered exactly once
    assert sorted(i for f in facts for i in f.sources) == list(range(len(s)))


def test_extractive_merge_uses_vectors_for_paraphrases() -> None:
    v = unit(0)
    s = [
        Statement("Maya's favourite coffee is a cortado with oat milk and a biscuit", T, vector=v),
        Statement("Maya likes cortados with oat milk best", T + timedelta(days=1), vector=v * 0.99 + unit(1) * 0.01),
    ]
    facts = extractive_merge(s, dedup_threshold=0.95)
    assert len(facts) == 1 and facts[0].sources == [0, 1]
    assert facts[0].text == "Maya's favourite coffee is a cortado with oat milk and a biscuit"  # the more informative
    assert len(extractive_merge(s, dedup_threshold=1.01)) == 1  # kept both, as one fact
    assert extractive_merge(s, dedup_threshold=1.01)[0].text.count(".") == 2
    assert extractive_merge([]) == []


def test_join_sentences() -> None:
    assert join_sentences(["a b", "c!", "  d  e "]) == "a b. c! d e."
