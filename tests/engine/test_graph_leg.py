"""The graph leg's hops: a second hop is followed where the first leaves room among the leg's
entities, and not read where the first fills them (on both backends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deepcontext.retrieve.search import MAX_GRAPH_ENTITIES, graph_leg
from deepcontext.store import EntityUpsert, RelationUpsert, Store
from deepcontext.store.interface import DEFAULT_FILTERS
from deepcontext.types import EntityType
from tests.store_helpers import axis, later, memory, open_test_store, plan


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def _graph(store: Store, friends: int) -> dict[str, int]:
    """Ana knows ``friends`` people, each named in three memories; the first of them is close to
    Zed (a relation said ten times), named once, whom only the second hop reaches. Zed weighs more
    than any friend (a rare entity, a strong tie) despite the extra hop."""
    names = ["ana", "zed", *(f"friend{i}" for i in range(friends))]
    ents = [EntityUpsert(n.title(), n, EntityType.PERSON) for n in names]
    mems = [
        memory("Ana moved to Porto", vec=axis(0), entity_names=["ana"]),
        memory("Zed plays the cello", vec=axis(1), entity_names=["zed"]),
    ]
    mems += [
        memory(f"Friend{i} {what}", vec=axis(2 + i, tilt=j), entity_names=[f"friend{i}"])
        for i in range(friends)
        for j, what in enumerate(["runs marathons", "bakes bread", "fixes bikes"])
    ]
    rels = [RelationUpsert("ana", f"friend{i}", "knows") for i in range(friends)]
    store.apply_add(plan("u", memories=mems, entities=ents, relations=rels))
    for i in range(10):
        store.apply_add(
            plan(
                "u",
                memories=[memory(f"note {i}", vec=axis(40 + i))],
                entities=ents,
                relations=[RelationUpsert("friend0", "zed", "knows")],
            )
        )
    return {m.text: m.id for m in store.iter_memories("u")}


def _leg(store: Store, depth: int) -> list[int]:
    return graph_leg(store, "u", "What does Ana do?", 50, depth, DEFAULT_FILTERS, later(1))


def test_a_second_hop_is_followed_where_the_first_leaves_room(store: Store) -> None:
    ids = _graph(store, 2)
    found = _leg(store, 2)
    assert ids["Zed plays the cello"] in found
    assert found[0] == ids["Ana moved to Porto"]  # the named entity weighs most
    assert ids["Zed plays the cello"] not in _leg(store, 1)


def test_a_second_hop_is_not_read_where_the_first_fills_the_leg(store: Store) -> None:
    ids = _graph(store, MAX_GRAPH_ENTITIES)
    found = _leg(store, 2)
    assert ids["Zed plays the cello"] not in found
    assert found == _leg(store, 1)
    assert ids["Ana moved to Porto"] in found and len(found) == 1 + 3 * (MAX_GRAPH_ENTITIES - 1)  # Ana and 11 friends
