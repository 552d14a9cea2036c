"""The bounded reads a search makes for its candidates and results (graph leg, provenance, links),
on both backends. SQLite answers the common cases with prepared statements of its own (one
statement for many memories); these tests pin that they agree with the definition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deepcontext.store import EntityUpsert, MemoryFilters, RelationUpsert, Store
from deepcontext.store.sql import SQLStore
from deepcontext.store.sql_graph import GraphReads
from deepcontext.store.sql_memories import MemoryReads
from deepcontext.store.sql_turns import TurnReads
from deepcontext.types import EntityType, MemoryTier
from tests.store_helpers import DIM, axis, later, memory, open_test_store, plan, turn


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def test_provenance_lists_the_oldest_turns_up_to_the_cap(store: Store) -> None:
    out = store.apply_add(
        plan(
            "u",
            turns=[turn(f"turn number {i}", said_at=later(i)) for i in range(7)],
            memories=[
                memory("seen seven times", vec=axis(0), source_turn_indices=[6, 2, 4, 0, 1, 5, 3]),
                memory("seen once", vec=axis(1), source_turn_indices=[5]),
            ],
        )
    )
    many, once = out.memory_ids
    capped = {m.id: m for m in store.get_memories("u", [once, many], details=True, max_sources=3)}
    assert [p.turn_id for p in capped[many].sources] == out.turn_ids[:3]  # the oldest three, in order
    assert [p.said_at for p in capped[many].sources] == [later(0), later(1), later(2)]
    assert [(p.turn_id, p.role) for p in capped[once].sources] == [(out.turn_ids[5], "user")]
    full = store.get_memories("u", [many], details=True)[0]
    assert [p.turn_id for p in full.sources] == out.turn_ids
    assert store.get_memories("someone-else", [many], details=True, max_sources=3) == []


def test_links_most_similar_active_first_up_to_the_cap(store: Store) -> None:
    a = store.apply_add(plan("u", memories=[memory("hub memory", vec=axis(0))])).memory_ids[0]
    sims = {"b": 0.7, "c": 0.95, "d": 0.8, "e": 0.9}
    made = {}
    for i, (key, sim) in enumerate(sims.items()):
        made[key] = store.apply_add(
            plan("u", memories=[memory(f"linked {key}", vec=axis(0, tilt=i + 1), links=[(a, sim)])])
        ).memory_ids[0]
    store.delete_memory("u", made["c"], now=later(1), actor="user", reason=None)  # inactive: never listed
    order = [made["e"], made["d"], made["b"]]
    assert store.memory_links("u", [a]) == {a: order}
    assert store.memory_links("u", [a], 2) == {a: order[:2]}
    assert store.memory_links("u", [a, made["b"]], 1) == {a: order[:1], made["b"]: [a]}
    assert store.memory_links("u", [a], 0) == {}
    assert store.memory_links("someone-else", [a], 2) == {}


def test_memories_for_entities_default_and_filtered(store: Store) -> None:
    ents = [EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION), EntityUpsert("Porto", "porto", EntityType.LOCATION)]
    spec = [  # (text, tier, expires)
        ("Lisbon one", MemoryTier.SHORT_TERM, None),
        ("Lisbon two", MemoryTier.WORKING, None),
        ("Lisbon three, expired", MemoryTier.SHORT_TERM, later(5)),
        ("Lisbon four", MemoryTier.SHORT_TERM, None),
        ("Lisbon five, deleted", MemoryTier.SHORT_TERM, None),
    ]
    ids = []
    for i, (text, tier, expires) in enumerate(spec):
        out = store.apply_add(
            plan(
                "u",
                memories=[memory(text, vec=axis(0, tilt=i + 1), tier=tier, expires_at=expires, entity_names=["lisbon"])],
                entities=ents,
            )
        )
        ids.append(out.memory_ids[0])
    lisbon = out.entity_ids["lisbon"]
    porto_mem = store.apply_add(plan("u", memories=[memory("Porto", vec=axis(1), entity_names=["porto"])], entities=ents))
    porto = porto_mem.entity_ids["porto"]
    store.delete_memory("u", ids[4], now=later(1), actor="user", reason=None)
    now = later(10)  # after the expiry

    def pairs(filters: MemoryFilters, limit: int | list[int]) -> list[tuple[int, int]]:
        return store.memories_for_entities("u", [lisbon, porto], filters, now, limit)

    # most recent first per entity, active and unexpired only, at most `limit` each
    assert pairs(MemoryFilters(), 10) == [(ids[3], lisbon), (ids[1], lisbon), (ids[0], lisbon), (porto_mem.memory_ids[0], porto)]
    assert pairs(MemoryFilters(), 2) == [(ids[3], lisbon), (ids[1], lisbon), (porto_mem.memory_ids[0], porto)]
    assert pairs(MemoryFilters(tiers=(MemoryTier.WORKING,)), 10) == [(ids[1], lisbon)]
    assert pairs(MemoryFilters(include_expired=True), 10)[:3] == [(ids[3], lisbon), (ids[2], lisbon), (ids[1], lisbon)]
    assert store.memories_for_entities("someone-else", [lisbon, porto], MemoryFilters(), now, 10) == []
    # a limit per entity (the graph leg reads more for the entities a query names than for neighbours)
    assert pairs(MemoryFilters(), [1, 5]) == [(ids[3], lisbon), (porto_mem.memory_ids[0], porto)]
    assert pairs(MemoryFilters(), [2, 0]) == [(ids[3], lisbon), (ids[1], lisbon)]
    assert pairs(MemoryFilters(tiers=(MemoryTier.WORKING,)), [1, 1]) == [(ids[1], lisbon)]
    with pytest.raises(ValueError, match="2 limits for 3 entities"):
        store.memories_for_entities("u", [lisbon, porto, lisbon], MemoryFilters(), now, [1, 2])


def test_rank_fields_of_the_memories_citing_turns_within_the_filters(store: Store) -> None:
    out = store.apply_add(
        plan(
            "u",
            turns=[turn(f"turn number {i}", said_at=later(i)) for i in range(4)],
            memories=[
                memory("from turn 0", vec=axis(0), source_turn_indices=[0]),
                memory("from turns 1 and 3", vec=axis(1), source_turn_indices=[1, 3]),
                memory("from turn 2, working", vec=axis(2), source_turn_indices=[2], tier=MemoryTier.WORKING),
                memory("from turn 2, deleted", vec=axis(3), source_turn_indices=[2]),
            ],
        )
    )
    t, (m0, m13, m2, gone) = out.turn_ids, out.memory_ids
    store.delete_memory("u", gone, now=later(5), actor="user", reason=None)
    now = later(10)

    def citing(user: str, turns: list[int], filters: MemoryFilters = MemoryFilters()) -> dict[int, int | None]:
        return {m: f.first_turn for m, f in store.rank_fields_citing(user, turns, filters, now).items()}

    # each with its rank fields, the first cited turn among them (the one search groups it under)
    assert citing("u", [t[2], t[3]]) == {m13: t[1], m2: t[2]}
    assert citing("u", [t[3], t[1]]) == {m13: t[1]}  # once, whichever turn
    assert citing("u", [t[2]], MemoryFilters(tiers=(MemoryTier.SHORT_TERM,))) == {}
    assert citing("u", [t[0]]) == {m0: t[0]}
    assert citing("u", []) == {}
    assert citing("someone-else", t) == {}
    fields = store.rank_fields_citing("u", [t[2]], MemoryFilters(), now)[m2]
    assert fields == store.rank_fields("u", [m2])[m2] and fields.active


def test_hubs_are_listed_but_not_expanded(store: Store) -> None:
    names = ["ana", "maya", "zed", "bob"]
    ents = [EntityUpsert(n.title(), n, EntityType.PERSON) for n in names]
    # maya (the hub) is mentioned by three memories, ana and bob by one each
    mems = [memory(f"memory {i}", vec=axis(0, tilt=i + 1), entity_names=["maya"]) for i in range(3)]
    mems.append(memory("Ana and Bob", vec=axis(1), entity_names=["ana", "bob"]))
    out = store.apply_add(
        plan(
            "u",
            memories=mems,
            entities=ents,
            relations=[
                RelationUpsert("ana", "maya", "knows"),
                RelationUpsert("maya", "zed", "knows"),
                RelationUpsert("ana", "bob", "knows"),
            ],
        )
    )
    e = out.entity_ids
    hood = store.entity_neighbourhood("u", [e["ana"]], 2)
    by_name = {h["entity"]: h for h in hood}
    assert [h["entity"] for h in hood][0] == "Ana" and len(hood) == 4
    assert {n: (h["depth"], h["via"]) for n, h in by_name.items() if n != "Ana"} == {
        "Maya": (1, e["ana"]), "Bob": (1, e["ana"]), "Zed": (2, e["maya"])
    }  # fmt: skip
    assert by_name["Maya"]["mention_count"] == 3
    capped = store.entity_neighbourhood("u", [e["ana"]], 2, max_expand_mentions=2)
    assert sorted(h["entity"] for h in capped) == ["Ana", "Bob", "Maya"]  # the hub is there, its neighbours are not
    alone = store.entity_neighbourhood("u", [e["maya"]], 2, max_expand_mentions=2)
    assert [(h["entity"], h["depth"]) for h in alone] == [("Maya", 0)]
    assert len(store.entity_neighbourhood("u", [e["ana"]], 1, max_per_level=1)) == 2


def test_each_neighbour_once_by_its_strongest_relation(store: Store) -> None:
    names = ["ana", "bob", "carla", "dan", "eve", "fay"]
    ents = [EntityUpsert(n.title(), n, EntityType.PERSON) for n in names]
    rels = [
        RelationUpsert("ana", "bob", "knows"),
        RelationUpsert("ana", "carla", "knows"),
        RelationUpsert("bob", "dan", "works_with"),  # strength 1.2 after the two repeats below
        RelationUpsert("carla", "dan", "knows"),  # 1.0: dan is reached through bob
        RelationUpsert("eve", "carla", "knows"),  # carla is the target: the other direction
        RelationUpsert("bob", "fay", "likes"),  # 1.1
    ]
    e = store.apply_add(
        plan("u", memories=[memory("all of them", vec=axis(0), entity_names=names)], entities=ents, relations=rels)
    ).entity_ids
    for again in (rels[2], rels[5], rels[2]):
        store.apply_add(plan("u", memories=[memory(f"again {again.relation}", vec=axis(1))], entities=ents, relations=[again]))
    # another user's graph with the same names and stronger ties is never read
    store.apply_add(plan("v", memories=[memory("theirs", vec=axis(0), entity_names=names)], entities=ents, relations=rels[2:3]))
    hood = store.entity_neighbourhood("u", [e["ana"]], 2)
    got = [(h["entity"], h["depth"], h["via"], round(h["strength"], 3), h["relation"]) for h in hood]
    assert got == [
        ("Ana", 0, None, 1.0, None),
        ("Bob", 1, e["ana"], 1.0, "knows"),  # equal strength: by entity id
        ("Carla", 1, e["ana"], 1.0, "knows"),
        ("Dan", 2, e["bob"], 1.2, "works_with"),  # the stronger of its two relations to the frontier
        ("Fay", 2, e["bob"], 1.1, "likes"),
        ("Eve", 2, e["carla"], 1.0, "knows"),
    ]
    capped = store.entity_neighbourhood("u", [e["ana"]], 2, max_per_level=1)
    assert [(h["entity"], h["depth"]) for h in capped] == [("Ana", 0), ("Bob", 1), ("Dan", 2)]
    assert [h["entity"] for h in store.entity_neighbourhood("u", [e["dan"]], 1)] == ["Dan", "Bob", "Carla"]
    assert [h["entity"] for h in store.entity_neighbourhood("u", [e["ana"]], 2, max_per_level=0)] == ["Ana"]
    # no second hop once the first has listed enough entities
    assert [h["entity"] for h in store.entity_neighbourhood("u", [e["ana"]], 2, enough=3)] == ["Ana", "Bob", "Carla"]
    assert len(store.entity_neighbourhood("u", [e["ana"]], 2, enough=4)) == 6
    if isinstance(store, SQLStore):
        with store.connection() as conn:
            frontier, known = [e["bob"], e["carla"]], [e["ana"], e["bob"], e["carla"]]
            rows = store.graph.neighbour_rows(conn, "u", frontier, known, 10)
            assert [(r[1], r[0]) for r in rows] == [(e["dan"], e["bob"]), (e["fay"], e["bob"]), (e["eve"], e["carla"])]
            # SQLite's driver read and pick agree with the generic statement
            assert [tuple(r) for r in rows] == [
                tuple(r) for r in GraphReads.neighbour_rows(store.graph, conn, "u", frontier, known, 10)
            ]
            assert [tuple(r) for r in store.graph.neighbour_rows(conn, "u", frontier, known, 2)] == [tuple(r) for r in rows[:2]]
            assert store.graph.neighbour_rows(conn, "v", frontier, known, 10) == []  # u's ids, v's relations


def test_result_details_agree_with_the_single_reads(store: Store) -> None:
    ents = [EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION), EntityUpsert("Ana", "ana", EntityType.PERSON)]
    out = store.apply_add(
        plan(
            "u",
            turns=[turn(f"turn {i}", said_at=later(i)) for i in range(4)],
            memories=[
                memory("Ana lives in Lisbon", vec=axis(0), source_turn_indices=[3, 1, 0], entity_names=["lisbon", "ana"]),
                memory("plain", vec=axis(1), source_turn_indices=[2]),
            ],
            entities=ents,
        )
    )
    a, plain = out.memory_ids
    b = store.apply_add(plan("u", memories=[memory("near a", vec=axis(0, tilt=1), links=[(a, 0.9), (plain, 0.7)])])).memory_ids[0]
    mems, links = store.result_details("u", [b, a, plain, 999_999], max_sources=2, links_per_memory=1)
    assert set(mems) == {a, b, plain}
    for mid in (a, b, plain):
        single = store.get_memories("u", [mid], details=True, max_sources=2)[0]
        assert mems[mid].model_dump() == single.model_dump()
    assert mems[a].entities == ["Ana", "Lisbon"]
    assert [p.turn_id for p in mems[a].sources] == [out.turn_ids[0], out.turn_ids[1]]
    assert [p.said_at for p in mems[a].sources] == [later(0), later(1)]
    assert links == {a: [b], b: [a], plain: [b]}
    assert store.result_details("u", [b], max_sources=2, links_per_memory=0)[1] == {}
    assert store.result_details("someone-else", [a, b], max_sources=2, links_per_memory=1) == ({}, {})


def test_rank_fields_agree_with_the_memories(store: Store) -> None:
    out = store.apply_add(
        plan(
            "u",
            turns=[turn(f"turn {i}", said_at=later(i)) for i in range(3)],
            memories=[
                memory("from two turns", vec=axis(0), importance=0.7, source_turn_indices=[2, 1], said_at=later(1)),
                memory("no source", vec=axis(1), importance=0.2),
                memory("deleted later", vec=axis(2), source_turn_indices=[0]),
            ],
        )
    )
    two, none, gone = out.memory_ids
    store.delete_memory("u", gone, now=later(5), actor="user", reason=None)
    other = store.apply_add(plan("v", memories=[memory("someone else's", vec=axis(0))])).memory_ids[0]
    fields = store.rank_fields("u", [none, two, gone, two, other, 999_999])
    assert set(fields) == {two, none, gone}  # never another user's, never a missing id
    for mid in (two, none, gone):
        m = store.get_memories("u", [mid])[0]
        f = fields[mid]
        assert (f.importance, f.confidence, f.access_count, f.pinned) == (m.importance, m.confidence, m.access_count, m.pinned)
        assert f.when == (m.said_at or m.created_at)
        assert f.active == (mid != gone)
    assert fields[two].first_turn == out.turn_ids[1] and fields[gone].first_turn == out.turn_ids[0]
    assert fields[none].first_turn is None
    # the generic statement (what PostgreSQL runs) gives the same on this backend
    if isinstance(store, SQLStore):
        assert MemoryReads.rank_fields(store.memories, "u", [none, two, gone, other]) == fields
    assert store.rank_fields("u", []) == {}


def test_rank_fields_of_standing_memories_only(store: Store) -> None:
    # the profile leg's deeper pool: only memories stating a standing fact are read
    out = store.apply_add(
        plan(
            "u",
            memories=[
                memory("I'm allergic to penicillin.", vec=axis(0), metadata={"standing": "allergy"}),
                memory("It rained all day.", vec=axis(1), metadata={"topic": "weather"}),
                memory("No metadata at all.", vec=axis(2)),
                memory("I love jazz piano.", vec=axis(3), metadata={"standing": "preference", "slots": "u|likes"}),
            ],
        )
    )
    allergy, rain, bare, jazz = out.memory_ids
    other = store.apply_add(plan("v", memories=[memory("v's", vec=axis(0), metadata={"standing": "diet"})])).memory_ids[0]
    ids = [allergy, rain, bare, jazz, other]
    only = store.rank_fields("u", ids, standing_only=True)
    assert set(only) == {allergy, jazz}
    assert only == {m: f for m, f in store.rank_fields("u", ids).items() if m in only}
    assert (only[allergy].standing, only[jazz].standing) == ("allergy", "preference")
    if isinstance(store, SQLStore):
        assert MemoryReads.rank_fields(store.memories, "u", ids, standing_only=True) == only


def test_memories_read_by_id_agree_with_the_generic_read(store: Store) -> None:
    ents = [EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION), EntityUpsert("Ana", "ana", EntityType.PERSON)]
    full = memory(
        "every field set",
        vec=axis(0),
        tier=MemoryTier.LONG_TERM,
        said_at=later(1),
        occurred_at=later(-60),
        valid_from=later(-30),
        expires_at=later(600),
        conversation_id="trip",
        metadata={"k": "v", "n": 2, "nested": {"a": [1, 2]}},
        pinned=True,
        tags=["travel", "ana"],
        consolidated_from=[7, 8],
        entity_names=["lisbon", "ana"],
    )
    out = store.apply_add(plan("u", memories=[full, memory("bare", vec=axis(1))], entities=ents))
    ids = [*reversed(out.memory_ids), 999_999]
    got = store.get_memories("u", ids, details=True)
    assert [m.id for m in got] == ids[:2]  # in the order asked, missing ids left out
    rich = got[1]
    assert (rich.said_at, rich.occurred_at, rich.expires_at) == (later(1), later(-60), later(600))
    assert rich.metadata == {"k": "v", "n": 2, "nested": {"a": [1, 2]}} and rich.tags == ["travel", "ana"]
    assert rich.pinned and rich.consolidated_from == [7, 8] and rich.entities == ["Ana", "Lisbon"]
    assert rich.created_at.tzinfo is not None and rich.said_at is not None and rich.said_at.tzinfo is not None
    if isinstance(store, SQLStore):  # SQLite reads rows straight from the driver: the same objects
        with store.connection() as conn:  # both readers on one connection
            fast = store.memories.read_memories(conn, "u", ids)
            generic = MemoryReads.read_memories(store.memories, conn, "u", ids)
        assert {k: v.model_dump() for k, v in fast.items()} == {k: v.model_dump() for k, v in generic.items()}
    assert store.get_memories("someone-else", ids) == []


def test_entities_matched_by_name_and_the_user_state(store: Store) -> None:
    ents = [EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION), EntityUpsert("New York", "new york", EntityType.LOCATION)]
    store.apply_add(plan("u", memories=[memory("in lisbon", vec=axis(0), entity_names=["lisbon", "new york"])], entities=ents))
    store.apply_add(plan("u", memories=[memory("lisbon again", vec=axis(1), entity_names=["lisbon"])], entities=ents[:1]))
    store.apply_add(
        plan(
            "v",
            memories=[memory("their york", vec=axis(0), entity_names=["york"])],
            entities=[EntityUpsert("York", "york", EntityType.LOCATION)],
        )
    )
    got = store.match_entities("u", ["york", "lisbon", "new york", "lisbon", "nowhere"])
    assert set(got) == {"lisbon", "new york"}  # never another user's entity, unknown names left out
    assert got["lisbon"][1] == 2 and got["new york"][1] == 1  # (id, mentions)
    assert got["lisbon"][0] != got["new york"][0]
    assert store.match_entities("u", []) == {} and store.match_entities("nobody", ["lisbon"]) == {}
    if isinstance(store, SQLStore):  # SQLite's prepared statements agree with the generic ones
        assert GraphReads.match_entities(store.graph, "u", ["york", "lisbon", "new york", "nowhere"]) == got
        with store.connection() as conn:
            state = store.memories.user_state(conn, "u")
            assert state is not None and state == MemoryReads.user_state(store.memories, conn, "u")
            assert store.memories.user_state(conn, "nobody") is None
        store.apply_add(plan("u", memories=[memory("a write", vec=axis(2))]))
        with store.connection() as conn:
            assert store.memories.user_state(conn, "u") != state  # every write changes it


def test_active_memories_found_by_content_hash(store: Store) -> None:
    from tests.store_helpers import T0

    out = store.apply_add(
        plan(
            "u",
            memories=[
                memory("kept", vec=axis(0)),
                memory("deleted", vec=axis(1)),
                memory("expired", vec=axis(2), expires_at=later(5)),
                memory("expires later", vec=axis(3), expires_at=later(600)),
            ],
        )
    )
    kept, deleted, expired, later_one = out.memory_ids
    store.delete_memory("u", deleted, now=later(1), actor="user", reason=None)
    store.apply_add(plan("v", memories=[memory("theirs", vec=axis(0))]))
    h = {m.text: m.content_hash for m in [memory(t) for t in ("kept", "deleted", "expired", "expires later", "theirs", "absent")]}
    got = store.find_active_by_hash("u", list(h.values()) + [h["kept"]], later(10))
    assert got == {h["kept"]: kept, h["expires later"]: later_one}  # not deleted, expired, another user's
    assert store.find_active_by_hash("u", [h["expired"]], T0) == {h["expired"]: expired}  # not yet expired then
    assert store.find_active_by_hash("u", [], later(10)) == {}
    if isinstance(store, SQLStore):  # SQLite's prepared statement agrees with the generic one
        with store.connection() as conn:
            for now in (T0, later(10)):
                assert store.memories.active_hashes(conn, "u", list(h.values()), now) == MemoryReads.active_hashes(
                    store.memories, conn, "u", list(h.values()), now
                )


def test_speaker_names_follow_new_turns_reused_ids_and_deleted_users(store: Store) -> None:
    assert isinstance(store, SQLStore)

    def names(user_id: str) -> set[str]:
        with store.connection() as conn:
            got = store.turns.speaker_names(conn, user_id)
            assert got == TurnReads.speaker_names(store.turns, conn, user_id)  # the full read
            return got

    assert names("u") == set()
    store.apply_add(
        plan(
            "u",
            turns=[
                turn("hi", name="Maya"),
                turn("hello", role="assistant", name="Bot"),
                turn("x", role="tool", name="grep"),
                turn("anon"),
            ],
        )
    )
    assert names("u") == {"Maya", "Bot"}
    store.apply_add(plan("u", turns=[turn("me too", name="Ana")]))
    assert names("u") == {"Maya", "Bot", "Ana"}  # read on from the last turn seen
    # another user's turns hold the highest ids; deleting them frees those ids for u's next turns
    store.apply_add(plan("v", turns=[turn(f"v {i}", name="Vic") for i in range(3)]))
    assert names("u") == {"Maya", "Bot", "Ana"}
    store.delete_user("v")
    store.apply_add(plan("u", turns=[turn("new here", name="Zed")]))
    assert names("u") == {"Maya", "Bot", "Ana", "Zed"}
    assert names("v") == set()
    store.delete_user("u")
    store.apply_add(plan("u", turns=[turn("again", name="Lee")]))
    assert names("u") == {"Lee"}  # a new incarnation starts over


def test_the_tracer_sees_the_statements_sent_straight_to_the_driver(db_url: str) -> None:
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store import open_store

    open_test_store(db_url).close()
    seen: list[str] = []
    traced = open_store(
        DeepContextSettings(_env_file=None, database_url=db_url),  # type: ignore[call-arg]
        DIM,
        tracer=lambda statement, params: seen.append(statement),
    )
    try:
        out = traced.apply_add(plan("u", memories=[memory("the garden roses bloom", vec=axis(0))]))
        seen.clear()
        hits = traced.keyword_search("u", ["roses"], 5, MemoryFilters(), later(1))
        assert [m for m, _ in hits] == out.memory_ids
        ranking = [s for s in seen if "memory_fts" in s]
        assert ranking, seen  # the keyword leg's ranking, driver-level on both backends
        seen.clear()
        assert [m.id for m in traced.get_memories("u", out.memory_ids, details=False)] == out.memory_ids
        assert any("FROM memories" in " ".join(s.split()) for s in seen), seen
    finally:
        traced.close()
