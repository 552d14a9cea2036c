"""Metadata filter operators and agent / run scopes, compiled into the SQL of both backends and
honoured by every retrieval leg (list, vector, keyword, graph)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deepcontext.errors import ValidationError
from deepcontext.services.validation import parse_filters
from deepcontext.store import AddPlan, EntityUpsert, MemoryFilters, Store
from deepcontext.types import EntityType
from tests.store_helpers import axis, later, memory, open_test_store, plan

NOW = later(100)

#: name -> (metadata, agent, run); every text mentions "garden" and the entity "rose"
SPEC: dict[str, tuple[dict[str, Any], str | None, str | None]] = {
    "a": ({"category": "work", "priority": 9, "status": "open", "tags": ["urgent", "q3"], "title": "Team meeting notes"}, None, None),
    "b": ({"category": "personal", "priority": 5, "status": "completed", "rating": 4.5}, "coach", None),
    "c": ({"category": "work", "priority": 2, "status": "archived", "archived": True, "title": "Budget"}, "coach", "r1"),
    "d": ({"category": "travel", "priority": 7.5, "date": "2024-03-01", 'team" x': "red", "$.odd": 1}, "planner", "r1"),
    "e": ({"category": "food", "priority": "high", "tags": ["Diet", "meals"]}, None, "r2"),
    "f": ({}, "planner", "r2"),
}  # fmt: skip


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


@pytest.fixture
def mems(store: Store) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, (name, (meta, agent, run)) in enumerate(SPEC.items()):
        p: AddPlan = plan(
            "u",
            now=later(i),
            agent_id=agent,
            run_id=run,
            memories=[
                memory(
                    f"garden note {name}", vec=axis(0, tilt=i + 1, amount=0.05 * (i + 1)), metadata=meta, entity_names=["rose"]
                )
            ],
            entities=[EntityUpsert(name="rose", norm_name="rose", entity_type=EntityType.CONCEPT)],
        )
        out[name] = store.apply_add(p).memory_ids[0]
    # another user with the same metadata, agent and run: never found
    store.apply_add(
        plan("v", agent_id="coach", run_id="r1", memories=[memory("garden other", vec=axis(0), metadata=SPEC["a"][0])])
    )
    return out


def legs(store: Store, filters: MemoryFilters, mems: dict[str, int]) -> list[set[str]]:
    """What list, the vector leg, the keyword leg and the graph leg return, by name."""
    name = {v: k for k, v in mems.items()}
    listed, total, _ = store.list_memories("u", filters, limit=50, cursor=None, now=NOW)
    assert total == len(listed)
    vec = store.vector_search("u", axis(0), 20, filters, NOW)
    kw = store.keyword_search("u", ["garden"], 20, filters, NOW)
    rose = store.match_entities("u", ["rose"])["rose"][0]
    graph = store.memories_for_entities("u", [rose], filters, NOW, 20)
    return [
        {name[m.id] for m in listed},
        {name[i] for i, _ in vec},
        {name[i] for i, _ in kw},
        {name[i] for i, _ in graph},
    ]


CASES: list[tuple[Any, set[str]]] = [
    ({"category": "work"}, {"a", "c"}),  # the plain equality form
    ({"category": "work", "priority": 9}, {"a"}),
    ({"priority": {"eq": 7.5}}, {"d"}),
    ({"priority": 9.0}, {"a"}),  # numbers compare as numbers
    ({"priority": "9"}, set()),  # ... and never as strings
    ({"archived": True}, {"c"}),
    ({"archived": {"ne": True}}, {"a", "b", "d", "e", "f"}),  # ne: a missing key passes
    ({"category": {"in": ["food", "travel"]}}, {"d", "e"}),
    ({"status": {"nin": ["completed", "archived"]}}, {"a", "d", "e", "f"}),
    ({"priority": {"gt": 5}}, {"a", "d"}),  # "high" is a string: not compared with numbers
    ({"priority": {"gte": 5}}, {"a", "b", "d"}),
    ({"priority": {"lt": 5}}, {"c"}),
    ({"priority": {"lte": 5, "gt": 2}}, {"b"}),
    ({"rating": {"gte": 4.0}}, {"b"}),
    ({"date": {"gte": "2024-01-01"}}, {"d"}),  # strings compare as strings
    ({"title": {"contains": "meeting"}}, {"a"}),
    ({"title": {"contains": "Meeting"}}, set()),
    ({"title": {"icontains": "MEETING"}}, {"a"}),
    ({"tags": {"contains": "urgent"}}, {"a"}),  # an element of a list
    ({"tags": {"icontains": "diet"}}, {"e"}),
    ({"category": "*"}, {"a", "b", "c", "d", "e"}),  # the key is present
    ({"AND": [{"category": "work"}, {"priority": {"gte": 7}}, {"status": {"ne": "completed"}}]}, {"a"}),
    ({"OR": [{"category": "food"}, {"priority": {"gte": 9}}, {"title": {"contains": "Budget"}}]}, {"a", "c", "e"}),
    ({"NOT": [{"category": "work"}, {"status": "completed"}]}, {"d", "e", "f"}),
    (
        {
            "AND": [
                {"OR": [{"category": "work"}, {"category": "personal"}]},
                {"priority": {"gte": 5}},
                {"NOT": [{"status": "archived"}]},
            ]
        },
        {"a", "b"},
    ),
    ({'team" x': "red"}, {"d"}),  # a key with a quote is a key, never a JSON path
    ({"$.odd": 1}, {"d"}),
    ({"category": "nowhere"}, set()),
]


@pytest.mark.parametrize(("metadata", "expected"), CASES)
def test_metadata_operators_on_every_leg(store: Store, mems: dict[str, int], metadata: Any, expected: set[str]) -> None:
    filters = parse_filters(metadata=metadata)
    assert legs(store, filters, mems) == [expected] * 4


@pytest.mark.parametrize(
    ("agent", "run", "expected"),
    [
        ("coach", None, {"b", "c"}),
        (None, "r1", {"c", "d"}),
        ("coach", "r1", {"c"}),
        (["coach", "planner"], "r2", {"f"}),
        ("nobody", None, set()),
        (None, None, set(SPEC)),
    ],
)
def test_scopes_on_every_leg(store: Store, mems: dict[str, int], agent: Any, run: Any, expected: set[str]) -> None:
    filters = parse_filters(agent_id=agent, run_id=run)
    assert legs(store, filters, mems) == [expected] * 4
    both = parse_filters(agent_id=agent, run_id=run, metadata={"category": "work"})
    assert legs(store, both, mems) == [expected & {"a", "c"}] * 4


def test_scopes_are_stored_and_read_back(store: Store, mems: dict[str, int]) -> None:
    got = {m.id: (m.agent_id, m.run_id) for m in store.get_memories("u", list(mems.values()))}
    assert got == {mems[n]: (agent, run) for n, (_, agent, run) in SPEC.items()}
    assert store.memory_owner(mems["c"]) == "u" and store.memory_owner(10**12) is None


def test_exact_duplicates_fold_only_within_the_given_scope(store: Store) -> None:
    first = store.apply_add(plan("u", agent_id="a1", memories=[memory("likes tea", vec=axis(1))]))
    same = store.apply_add(plan("u", agent_id="a1", memories=[memory("likes tea", vec=axis(1))]))
    other = store.apply_add(plan("u", agent_id="a2", memories=[memory("likes tea", vec=axis(1))]))
    assert same.memory_ids == first.memory_ids and same.inserted == [False]
    assert other.inserted == [True] and other.memory_ids != first.memory_ids
    # without an agent the add looks at every scope of the user (as a search without one would)
    plain = store.apply_add(plan("u", memories=[memory("likes tea", vec=axis(1))]))
    assert plain.inserted == [False]


def test_delete_memories_by_scope(store: Store, mems: dict[str, int]) -> None:
    gone = store.delete_memories("u", parse_filters(agent_id="coach"), now=NOW, actor="t", reason=None)
    assert sorted(gone) == sorted([mems["b"], mems["c"]])
    assert legs(store, MemoryFilters(), mems)[0] == {"a", "d", "e", "f"}
    assert [h.event.value for h in store.history("u", mems["b"])][-1] == "DELETE"
    assert store.list_memories("v", MemoryFilters(), limit=5, cursor=None, now=NOW)[1] == 1  # the other user's stays


@pytest.mark.parametrize(
    "bad",
    [
        {"priority": {"between": [1, 2]}},
        {"category": {"in": "work"}},
        {"category": {"in": []}},
        {"priority": {"gt": True}},
        {"title": {"icontains": 3}},
        {"x": {"eq": [1, 2]}},
        {"x": {"eq": None}},
        {"x": float("nan")},
        {"x": 2**70},
        {"AND": "x"},
        {"OR": []},
        {"x": {}},
        {"": 1},
        {"x\x00": 1},
        {"k" * 300: 1},
        {
            "NOT": [
                {
                    "NOT": [
                        {
                            "NOT": [
                                {"NOT": [{"NOT": [{"NOT": [{"NOT": [{"NOT": [{"NOT": [{"NOT": [{"NOT": [{"a": 1}]}]}]}]}]}]}]}]}
                            ]
                        }
                    ]
                }
            ]
        },
    ],
)
def test_bad_filters_are_validation_errors(bad: Any) -> None:
    with pytest.raises(ValidationError):
        parse_filters(metadata=bad)
