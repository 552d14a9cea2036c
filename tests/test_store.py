"""The Store contract, on both backends (SQLite and PostgreSQL + pgvector) through open_store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import numpy as np
import pytest

from deepcontext.errors import (
    ConfigurationError,
    MemoryNotFoundError,
    TurnNotFoundError,
    ValidationError,
)
from deepcontext.store import EntityUpsert, MemoryChange, MemoryFilters, RelationUpsert, Store
from deepcontext.store.locks import user_lock
from deepcontext.types import EntityType, HistoryEvent, MemoryStatus, MemoryTier, MemoryType
from tests.store_helpers import DIM, T0, axis, later, memory, open_test_store, plan, rows_per_table, turn


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def ids(pairs: list[tuple[int, float]]) -> list[int]:
    return [i for i, _ in pairs]


# --- writes ------------------------------------------------------------------------------------------


def test_backend_chosen_by_url(store: Store, db_url: str) -> None:
    assert store.backend == ("sqlite" if db_url.startswith("sqlite") else "postgresql")
    assert store.schema_version() >= 1


def test_the_size_on_disk_is_read_and_grows(store: Store) -> None:
    before = store.size_bytes()
    assert isinstance(before, int) and before > 0
    text = "a longer memory text to fill pages with " * 20
    for start in range(0, 3000, 500):
        store.apply_add(plan("u", memories=[memory(f"{i} {text}", vec=axis(i)) for i in range(start, start + 500)]))
    after = store.size_bytes()
    assert after is not None and after > before


def test_apply_add_writes_turns_memories_graph_and_history(store: Store) -> None:
    out = store.apply_add(
        plan(
            "ana",
            turns=[turn("I moved to Lisbon"), turn("Nice! Where do you work?", role="assistant"), turn("At Acme")],
            memories=[
                memory("Ana lives in Lisbon", vec=axis(0), source_turn_indices=[0], entity_names=["ana", "lisbon"]),
                memory("Ana works at Acme", vec=axis(1), source_turn_indices=[1, 2], entity_names=["ana", "acme"]),
            ],
            entities=[
                EntityUpsert("Ana", "ana", EntityType.PERSON),
                EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION),
                EntityUpsert("Acme", "acme", EntityType.ORGANIZATION),
            ],
            relations=[RelationUpsert("ana", "lisbon", "lives_in"), RelationUpsert("ana", "acme", "works_at")],
        )
    )
    assert len(out.turn_ids) == 3 and out.inserted == [True, True]
    assert set(out.entity_ids) == {"ana", "lisbon", "acme"} and out.relations_written == 2

    turns = store.get_turns("ana", out.turn_ids)
    assert [t.content for t in turns] == ["I moved to Lisbon", "Nice! Where do you work?", "At Acme"]
    assert turns[0].parent_ids == [] and turns[1].parent_ids == [out.turn_ids[0]] and turns[2].parent_ids == [out.turn_ids[1]]
    assert [t.id for t in store.recent_turns("ana", "c1", 2)] == out.turn_ids[1:]

    m1, m2 = store.get_memories("ana", out.memory_ids)
    assert (m1.text, m1.status, m1.tier) == ("Ana lives in Lisbon", MemoryStatus.ACTIVE, MemoryTier.SHORT_TERM)
    assert [p.turn_id for p in m1.sources] == [out.turn_ids[0]]
    assert [p.turn_id for p in m2.sources] == out.turn_ids[1:]
    assert sorted(m2.entities) == ["Acme", "Ana"]
    assert m1.created_at == T0 and m1.valid_from == T0
    h = store.history("ana", m1.id)
    assert [e.event for e in h] == [HistoryEvent.ADD] and h[0].new_text == "Ana lives in Lisbon"

    counts = store.count_rows("ana")
    assert counts["memories"] == 2 and counts["turns"] == 3 and counts["entities"] == 3 and counts["relations"] == 2
    assert store.list_users() == ["ana"]
    # a second add continues the conversation after its tip
    out2 = store.apply_add(plan("ana", now=later(1), turns=[turn("Also, I like jazz")]))
    assert store.get_turns("ana", out2.turn_ids)[0].parent_ids == [out.turn_ids[-1]]
    # the same entities again: mention counts grow (by the memories of an add that mention them, at least 1)
    store.apply_add(
        plan(
            "ana",
            now=later(2),
            entities=[EntityUpsert("Ana", "ana", EntityType.PERSON), EntityUpsert("Lisbon", "lisbon", EntityType.LOCATION)],
            relations=[RelationUpsert("ana", "lisbon", "lives_in")],
        )
    )
    assert store.match_entities("ana", ["ana", "lisbon", "nobody"]) == {
        "ana": (out.entity_ids["ana"], 3),  # 2 memories of the first add, then 1
        "lisbon": (out.entity_ids["lisbon"], 2),
    }


def test_embeddings_round_trip(store: Store) -> None:
    v = np.linspace(-1, 1, DIM).astype(np.float32)
    out = store.apply_add(plan("u", memories=[memory("a vector", vec=v), memory("no vector")]))
    got = store.embeddings("u", out.memory_ids)  # type: ignore[attr-defined]
    assert list(got) == [out.memory_ids[0]]
    np.testing.assert_allclose(got[out.memory_ids[0]], v, rtol=1e-6)


def test_dedupe_under_the_same_hash(store: Store) -> None:
    a = store.apply_add(plan("u", turns=[turn("I like tea")], memories=[memory("User likes tea", source_turn_indices=[0])]))
    b = store.apply_add(
        plan("u", now=later(5), turns=[turn("tea, I said")], memories=[memory("user likes tea.", source_turn_indices=[0])])
    )
    assert b.inserted == [False] and b.memory_ids == a.memory_ids
    (m,) = store.get_memories("u", a.memory_ids)
    assert [p.turn_id for p in m.sources] == a.turn_ids + b.turn_ids
    assert [e.event for e in store.history("u", m.id)] == [HistoryEvent.ADD, HistoryEvent.NOOP]
    assert store.find_active_by_hash("u", [memory("User likes tea").content_hash, "nope"], later(6)) == {
        memory("User likes tea").content_hash: m.id
    }
    # the same text twice in one plan is one row; dedupe=False forces a second one
    c = store.apply_add(plan("u", memories=[memory("Coffee too"), memory("Coffee too")]))
    assert c.inserted == [True, False] and c.memory_ids[0] == c.memory_ids[1]
    d = store.apply_add(plan("u", memories=[memory("Coffee too", dedupe=False)]))
    assert d.inserted == [True] and d.memory_ids[0] != c.memory_ids[0]
    assert store.count_rows("u")["memories"] == 3
    # another user's identical memory is theirs alone
    e = store.apply_add(plan("other", memories=[memory("User likes tea")]))
    assert e.inserted == [True] and e.memory_ids != a.memory_ids


def test_supersedes_and_changes(store: Store) -> None:
    old = store.apply_add(plan("u", memories=[memory("Ana lives in Porto", vec=axis(0))])).memory_ids[0]
    gone = store.apply_add(plan("u", memories=[memory("Ana owns a cat", vec=axis(1))])).memory_ids[0]
    keep = store.apply_add(plan("u", memories=[memory("Ana plays piano", vec=axis(2))])).memory_ids[0]
    out = store.apply_add(
        plan(
            "u",
            now=later(10),
            turns=[turn("I moved to Lisbon, the cat is gone, still playing piano")],
            memories=[
                memory("Ana lives in Lisbon", vec=axis(0, tilt=3), supersedes=old, event=HistoryEvent.UPDATE, reason="moved")
            ],
            changes=[
                MemoryChange(gone, HistoryEvent.DELETE, reason="no cat any more"),
                MemoryChange(keep, HistoryEvent.NOOP, source_turn_indices=[0]),
            ],
        )
    )
    new = out.memory_ids[0]
    o, n, g, k = store.get_memories("u", [old, new, gone, keep])
    assert o.status is MemoryStatus.SUPERSEDED and o.superseded_by == new and o.valid_to == later(10)
    assert n.status is MemoryStatus.ACTIVE and n.superseded_by is None
    assert g.status is MemoryStatus.DELETED and g.valid_to == later(10)
    assert k.status is MemoryStatus.ACTIVE and [p.turn_id for p in k.sources] == out.turn_ids
    assert [e.event for e in store.history("u", old)] == [HistoryEvent.ADD, HistoryEvent.UPDATE]
    assert store.history("u", old)[-1].new_text == "Ana lives in Lisbon"
    assert store.history("u", new)[0].old_text == "Ana lives in Porto"
    assert [e.event for e in store.history("u", gone)] == [HistoryEvent.ADD, HistoryEvent.DELETE]
    assert [e.event for e in store.history("u", keep)] == [HistoryEvent.ADD, HistoryEvent.NOOP]
    active = {m.id for m in store.list_memories("u", MemoryFilters(), limit=10, cursor=None, now=later(11))[0]}
    assert active == {new, keep}
    # superseded and deleted memories leave the vector and keyword legs
    assert ids(store.vector_search("u", axis(0), 5, MemoryFilters(), later(11)))[0] == new
    assert old not in ids(store.vector_search("u", axis(0), 5, MemoryFilters(), later(11)))
    assert store.keyword_search("u", ["porto"], 5, MemoryFilters(), later(11)) == []
    assert store.keyword_search("u", ["cat"], 5, MemoryFilters(), later(11)) == []
    # a superseded memory cannot be superseded or changed again
    with pytest.raises(MemoryNotFoundError):
        store.apply_add(plan("u", memories=[memory("Ana lives in Faro", supersedes=old)]))


def test_update_and_delete_memory(store: Store) -> None:
    mid = store.apply_add(plan("u", memories=[memory("The wifi password is hunter2", vec=axis(4))])).memory_ids[0]
    m = store.update_memory(
        "u", mid, text="The wifi password is swordfish", content_hash="h2", embedding=axis(5), now=later(1),
        actor="user", reason="changed", metadata={"k": "v"},
    )  # fmt: skip
    assert m.text == "The wifi password is swordfish" and m.metadata == {"k": "v"} and m.updated_at == later(1)
    assert store.keyword_search("u", ["hunter2"], 5, MemoryFilters(), later(2)) == []
    assert ids(store.keyword_search("u", ["swordfish"], 5, MemoryFilters(), later(2))) == [mid]
    assert ids(store.vector_search("u", axis(5), 1, MemoryFilters(), later(2))) == [mid]
    h = store.history("u", mid)
    assert [(e.event, e.old_text, e.new_text, e.actor) for e in h][1] == (
        HistoryEvent.UPDATE, "The wifi password is hunter2", "The wifi password is swordfish", "user",
    )  # fmt: skip
    d = store.delete_memory("u", mid, now=later(3), actor="user", reason="secret")
    assert d.status is MemoryStatus.DELETED and d.valid_to == later(3)
    assert store.vector_search("u", axis(5), 5, MemoryFilters(), later(4)) == []
    assert store.keyword_search("u", ["swordfish"], 5, MemoryFilters(), later(4)) == []
    with pytest.raises(MemoryNotFoundError):
        store.delete_memory("u", mid, now=later(5), actor="user", reason=None)
    with pytest.raises(MemoryNotFoundError):  # another user's memory does not exist for "v"
        store.history("v", mid)
    with pytest.raises(MemoryNotFoundError):
        store.update_memory("v", mid, text="x", content_hash="x", embedding=None, now=later(6), actor="a", reason=None)


def test_bump_access(store: Store) -> None:
    a, b = store.apply_add(plan("u", memories=[memory("one"), memory("two")])).memory_ids
    store.bump_access("u", [a, a, b], later(1))
    store.bump_access("u", [a], later(2))
    store.bump_access("other", [a], later(3))  # not theirs: no effect
    ma, mb = store.get_memories("u", [a, b])
    assert (ma.access_count, ma.last_accessed_at) == (2, later(2))
    assert (mb.access_count, mb.last_accessed_at) == (1, later(1))


# --- reads -------------------------------------------------------------------------------------------


@pytest.fixture
def varied(store: Store) -> dict[str, int]:
    """Memories spread over tiers, types, conversations, times, metadata; one expired; other user."""
    spec = [
        ("w1", "Working note about the garden", MemoryTier.WORKING, MemoryType.EPISODIC, "c1", 0, {"topic": "garden"}, None),
        ("s1", "Short fact on garden roses", MemoryTier.SHORT_TERM, MemoryType.SEMANTIC, "c1", 60, {"topic": "garden", "n": 3}, None),
        ("s2", "Short fact about the kitchen", MemoryTier.SHORT_TERM, MemoryType.SEMANTIC, "c2", 120, {"topic": "home", "flag": True}, None),
        ("l1", "How to prune garden roses", MemoryTier.LONG_TERM, MemoryType.PROCEDURAL, "c2", 180, {"topic": "garden", "score": 0.5}, None),
        ("x1", "Expired garden reminder", MemoryTier.SHORT_TERM, MemoryType.EPISODIC, "c1", 240, {"topic": "garden"}, later(300)),
    ]  # fmt: skip
    out: dict[str, int] = {}
    for i, (key, text, tier, mtype, conv, minutes, meta, expires) in enumerate(spec):
        out[key] = store.apply_add(
            plan(
                "u",
                conversation_id=conv,
                now=later(minutes),
                memories=[
                    memory(
                        text, vec=axis(0, tilt=i + 1, amount=0.1 * (i + 1)), tier=tier, mtype=mtype,
                        conversation_id=conv, said_at=later(minutes), metadata=meta, expires_at=expires,
                    )
                ],
            )
        ).memory_ids[0]  # fmt: skip
    out["other"] = store.apply_add(
        plan("someone-else", memories=[memory("Other garden roses", vec=axis(0), said_at=later(0))])
    ).memory_ids[0]
    return out


NOW = later(1000)  # after the expiry of x1


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (MemoryFilters(), {"w1", "s1", "s2", "l1"}),
        (MemoryFilters(include_expired=True), {"w1", "s1", "s2", "l1", "x1"}),
        (MemoryFilters(tiers=(MemoryTier.SHORT_TERM,)), {"s1", "s2"}),
        (MemoryFilters(tiers=(MemoryTier.WORKING, MemoryTier.LONG_TERM)), {"w1", "l1"}),
        (MemoryFilters(types=(MemoryType.PROCEDURAL,)), {"l1"}),
        (MemoryFilters(conversation_ids=("c2",)), {"s2", "l1"}),
        (MemoryFilters(after=later(60)), {"s1", "s2", "l1"}),
        (MemoryFilters(before=later(60)), {"w1"}),
        (MemoryFilters(after=later(60), before=later(180)), {"s1", "s2"}),
        (MemoryFilters(metadata={"topic": "garden"}), {"w1", "s1", "l1"}),
        (MemoryFilters(metadata={"topic": "garden", "n": 3}), {"s1"}),
        (MemoryFilters(metadata={"flag": True}), {"s2"}),
        (MemoryFilters(metadata={"score": 0.5}), {"l1"}),
        (MemoryFilters(metadata={"topic": "nowhere"}), set()),
        (MemoryFilters(tiers=(MemoryTier.SHORT_TERM,), include_expired=True, types=(MemoryType.EPISODIC,)), {"x1"}),
    ],
)
def test_filters_on_every_leg(store: Store, varied: dict[str, int], filters: MemoryFilters, expected: set[str]) -> None:
    name = {v: k for k, v in varied.items()}
    listed, total, _ = store.list_memories("u", filters, limit=50, cursor=None, now=NOW)
    assert {name[m.id] for m in listed} == expected and total == len(expected)
    assert {name[i] for i in ids(store.vector_search("u", axis(0), 10, filters, NOW))} == expected
    garden_like = {k for k in expected if k != "s2"}  # every text but s2's mentions the garden or roses
    kw = {name[i] for i in ids(store.keyword_search("u", ["garden", "roses"], 10, filters, NOW))}
    assert kw == garden_like


def test_list_statuses_and_cursor_pagination(store: Store) -> None:
    mids = [store.apply_add(plan("u", now=later(i), memories=[memory(f"fact number {i}")])).memory_ids[0] for i in range(7)]
    store.delete_memory("u", mids[3], now=later(10), actor="t", reason=None)
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        page, total, cursor = store.list_memories("u", MemoryFilters(), limit=2, cursor=cursor, now=later(20))
        assert total == 6
        seen += [m.id for m in page]
        pages += 1
        if cursor is None:
            break
    assert pages == 3 and seen == sorted(set(mids) - {mids[3]}, reverse=True)  # newest first, no repeats
    deleted, total, _ = store.list_memories(
        "u", MemoryFilters(statuses=(MemoryStatus.DELETED,)), limit=10, cursor=None, now=later(20)
    )
    assert [m.id for m in deleted] == [mids[3]] and total == 1
    _, total, _ = store.list_memories("u", MemoryFilters(statuses=tuple(MemoryStatus)), limit=10, cursor=None, now=later(20))
    assert total == 7
    with pytest.raises(ValidationError):
        store.list_memories("u", MemoryFilters(), limit=2, cursor="not-a-cursor", now=later(20))
    # get_memories: order as given, unknown and foreign ids skipped
    other = store.apply_add(plan("v", memories=[memory("theirs")])).memory_ids[0]
    assert [m.id for m in store.get_memories("u", [mids[2], 999_999, other, mids[0]])] == [mids[2], mids[0]]
    assert [m.id for m in store.iter_memories("u", batch=3)] == mids


# --- retrieval legs ------------------------------------------------------------------------------------


def test_vector_search_ranks_by_cosine(store: Store) -> None:
    vecs = [axis(0), axis(0, tilt=1, amount=0.5), axis(0, tilt=1, amount=2.0), axis(1), axis(7)]
    out = store.apply_add(plan("u", memories=[memory(f"m{i}", vec=v) for i, v in enumerate(vecs)]))
    res = store.vector_search("u", axis(0), 3, MemoryFilters(), later(1))
    assert ids(res) == out.memory_ids[:3]
    assert res[0][1] == pytest.approx(1.0, abs=1e-5)
    assert res[1][1] == pytest.approx(float(axis(0) @ vecs[1]), abs=1e-5)
    assert ids(store.vector_search("u", axis(7), 1, MemoryFilters(), later(1))) == [out.memory_ids[4]]
    assert store.vector_search("nobody", axis(0), 3, MemoryFilters(), later(1)) == []
    assert store.vector_search("u", axis(0), 0, MemoryFilters(), later(1)) == []
    batch = store.vector_search_batch("u", np.stack([axis(0), axis(1)]), 1, MemoryFilters(), later(1))
    assert [ids(r) for r in batch] == [[out.memory_ids[0]], [out.memory_ids[3]]]
    with pytest.raises(ConfigurationError):
        store.vector_search("u", axis(0), 3, MemoryFilters(statuses=(MemoryStatus.DELETED,)), later(1))


def test_keyword_search(store: Store) -> None:
    out = store.apply_add(
        plan(
            "u",
            memories=[
                memory("Ana runs marathons in Lisbon"),
                memory("Running shoes are in the closet"),
                memory("Meeting at the Café Central"),
                memory("我喜欢东京的寿司"),
                memory("Lisbon Lisbon Lisbon trip planning"),
            ],
        )
    )
    a, b, c, d, e = out.memory_ids
    assert set(ids(store.keyword_search("u", ["running"], 10, MemoryFilters(), later(1)))) == {a, b}  # stemmed
    assert ids(store.keyword_search("u", ["cafe"], 10, MemoryFilters(), later(1))) == [c]  # diacritics folded
    assert ids(store.keyword_search("u", ["东京"], 10, MemoryFilters(), later(1))) == [d]  # CJK bigram
    assert ids(store.keyword_search("u", ["寿"], 10, MemoryFilters(), later(1))) == [d]  # CJK character
    both = store.keyword_search("u", ["lisbon", "marathons"], 10, MemoryFilters(), later(1))
    assert ids(both)[0] == a and set(ids(both)) == {a, e}  # two terms beat one, OR semantics
    assert all(score > 0 for _, score in both)
    assert store.keyword_search("u", ["nothing", "matches"], 10, MemoryFilters(), later(1)) == []
    assert store.keyword_search("u", [], 10, MemoryFilters(), later(1)) == []
    assert store.keyword_search("other", ["lisbon"], 10, MemoryFilters(), later(1)) == []
    assert len(store.keyword_search("u", ["lisbon"], 1, MemoryFilters(), later(1))) == 1
    # quoting: terms are data, never query syntax
    assert (
        store.keyword_search("u", ["o'neil", 'x"y', "a|b", "!", "&", "back\\slash", "it''s"], 10, MemoryFilters(), later(1)) == []
    )


def test_entity_neighbourhood(store: Store) -> None:
    names = ["ana", "bob", "carla", "dan", "eve"]
    out = store.apply_add(
        plan(
            "u",
            memories=[memory("Ana knows Bob", entity_names=["ana", "bob"]), memory("Dan met Eve", entity_names=["dan", "eve"])],
            entities=[EntityUpsert(n.title(), n, EntityType.PERSON) for n in names],
            relations=[
                RelationUpsert("ana", "bob", "knows"),
                RelationUpsert("carla", "bob", "manages"),  # reached backwards from bob
                RelationUpsert("carla", "dan", "knows"),
            ],
        )
    )
    e = out.entity_ids
    hood = store.entity_neighbourhood("u", [e["ana"]], 2)
    assert [(h["entity"], h["depth"]) for h in hood] == [("Ana", 0), ("Bob", 1), ("Carla", 2)]
    assert hood[1]["relation"] == "knows" and hood[1]["via"] == e["ana"]
    assert hood[2]["relation"] == "manages" and hood[2]["via"] == e["bob"]
    assert [h["entity"] for h in store.entity_neighbourhood("u", [e["ana"]], 4)] == ["Ana", "Bob", "Carla", "Dan"]
    assert store.entity_neighbourhood("u", [e["eve"]], 3) == [
        {"id": e["eve"], "entity": "Eve", "entity_type": "person", "relation": None, "depth": 0,
         "strength": 1.0, "via": None, "direction": None, "mention_count": 1},
    ]  # fmt: skip
    assert store.entity_neighbourhood("other", [e["ana"]], 2) == []
    pairs = store.memories_for_entities("u", [e["bob"], e["eve"]], MemoryFilters(), later(1), 10)
    assert sorted(pairs) == sorted([(out.memory_ids[0], e["bob"]), (out.memory_ids[1], e["eve"])])
    assert store.memory_entities("u", out.memory_ids) == {out.memory_ids[0]: ["Ana", "Bob"], out.memory_ids[1]: ["Dan", "Eve"]}


def test_memory_links(store: Store) -> None:
    a = store.apply_add(plan("u", memories=[memory("first", vec=axis(0))])).memory_ids[0]
    b = store.apply_add(plan("u", memories=[memory("second", vec=axis(0, tilt=1), links=[(a, 0.9)])])).memory_ids[0]
    assert store.memory_links("u", [a, b]) == {a: [b], b: [a]}
    assert store.memory_links("other", [a, b]) == {}


# --- kv, users, atomicity, embedder ---------------------------------------------------------------------


def test_kv(store: Store) -> None:
    assert store.kv_get("u", "tiers", "x") is None
    store.kv_put("u", "tiers", "x", {"a": [1, 2]}, T0)
    store.kv_put("u", "tiers", "y", "text", T0)
    store.kv_put("u", "other-ns", "x", 3, T0)
    store.kv_put("v", "tiers", "x", "v's", T0)
    store.kv_put("u", "tiers", "x", {"a": [3]}, later(1))  # overwrite
    assert store.kv_get("u", "tiers", "x") == {"a": [3]}
    assert store.kv_list("u", "tiers") == {"x": {"a": [3]}, "y": "text"}
    assert store.kv_delete("u", "tiers", "x") is True
    assert store.kv_delete("u", "tiers", "x") is False
    assert store.kv_list("u", "tiers") == {"y": "text"} and store.kv_get("v", "tiers", "x") == "v's"


def test_delete_user_leaves_no_row_in_any_table(store: Store, db_url: str) -> None:
    for who in ("gone", "stays"):
        a = store.apply_add(
            plan(
                who,
                turns=[turn("Ana knows Bob"), turn("ok", role="assistant")],
                memories=[
                    memory("Ana knows Bob", vec=axis(0), source_turn_indices=[0], entity_names=["ana", "bob"]),
                    memory("Bob likes chess", vec=axis(1), source_turn_indices=[0], entity_names=["bob"]),
                ],
                entities=[EntityUpsert("Ana", "ana", EntityType.PERSON), EntityUpsert("Bob", "bob", EntityType.PERSON)],
                relations=[RelationUpsert("ana", "bob", "knows")],
            )
        )
        store.apply_add(
            plan(who, now=later(1), memories=[memory("Ana knows Bob well", vec=axis(0), links=[(a.memory_ids[0], 0.9)])])
        )
        store.delete_memory(who, a.memory_ids[1], now=later(2), actor="t", reason=None)
        store.kv_put(who, "ns", "k", 1, T0)
        with user_lock(store, who, "consolidate", timeout=1):  # type: ignore[arg-type]
            pass
    store.vector_search("gone", axis(0), 5, MemoryFilters(), later(3))  # warm any cache
    before = rows_per_table(db_url, "stays")
    # each user's three memories, one deleted: SQLite's keyword index keeps active (and superseded) ones only
    indexed = 2 if db_url.startswith("sqlite") else 3
    assert rows_per_table(db_url)["memory_fts"] == 2 * indexed

    counts = store.delete_user("gone")
    assert counts["memories"] == 3 and counts["turns"] == 2 and counts["users"] == 1

    left = rows_per_table(db_url, "gone")
    assert {t: n for t, n in left.items() if n and t not in ("dc_meta", "api_keys", "memory_fts")} == {}
    assert rows_per_table(db_url)["memory_fts"] == indexed  # only the other user's rows are left in the index
    after = rows_per_table(db_url, "stays")
    assert {t: n for t, n in after.items() if t != "memory_fts"} == {t: n for t, n in before.items() if t != "memory_fts"}
    assert store.count_rows("gone") == {t: 0 for t in store.count_rows("gone")}
    assert store.list_users() == ["stays"]
    assert store.vector_search("gone", axis(0), 5, MemoryFilters(), later(3)) == []
    assert store.keyword_search("gone", ["chess"], 5, MemoryFilters(), later(3)) == []
    assert len(store.keyword_search("stays", ["ana"], 5, MemoryFilters(), later(3))) == 2
    # the user can come back, starting empty
    store.apply_add(plan("gone", now=later(4), memories=[memory("A fresh start", vec=axis(2))]))
    assert ids(store.vector_search("gone", axis(0), 5, MemoryFilters(), later(5))) != []
    assert store.count_rows("gone")["memories"] == 1


def test_failed_add_leaves_nothing(store: Store, db_url: str) -> None:
    theirs = store.apply_add(plan("v", turns=[turn("hi")], memories=[memory("v's fact")]))
    store.apply_add(plan("u", memories=[memory("u's first fact", vec=axis(0))]))
    before = rows_per_table(db_url)

    bad_plans = [
        # supersedes a memory of another user: found only after turns, entities and a memory were written
        plan(
            "u",
            now=later(1),
            turns=[turn("something new")],
            memories=[
                memory("a new fact", vec=axis(1), source_turn_indices=[0]),
                memory("replacement", supersedes=theirs.memory_ids[0]),
            ],
            entities=[EntityUpsert("Zed", "zed", EntityType.PERSON)],
        ),
        # cites a turn of another user
        plan("u", now=later(1), memories=[memory("cites v", source_turn_ids=theirs.turn_ids)]),
        # a change to a memory that does not exist
        plan("u", now=later(1), memories=[memory("x")], changes=[MemoryChange(987_654, HistoryEvent.DELETE)]),
        # a new user whose add fails leaves no user row either
        plan("newbie", now=later(1), turns=[turn("hello")], memories=[memory("y", supersedes=theirs.memory_ids[0])]),
    ]
    for p, exc in zip(bad_plans, (MemoryNotFoundError, TurnNotFoundError, MemoryNotFoundError, MemoryNotFoundError), strict=True):
        with pytest.raises(exc):
            store.apply_add(p)
        assert rows_per_table(db_url) == before
    assert store.keyword_search("u", ["new"], 5, MemoryFilters(), later(2)) == []
    assert store.list_users() == ["u", "v"]


def test_embedder_check(db_url: str) -> None:
    s = open_test_store(db_url)
    s.ensure_embedder("hash-16", DIM)
    s.ensure_embedder("hash-16", DIM)  # same: fine
    with pytest.raises(ConfigurationError, match="hash-16"):
        s.ensure_embedder("minilm", DIM)
    with pytest.raises(ConfigurationError):
        s.ensure_embedder("hash-16", DIM + 1)
    s.close()
    again = open_test_store(db_url)  # remembered in the database
    with pytest.raises(ConfigurationError):
        again.ensure_embedder("other", DIM)
    again.ensure_embedder("hash-16", DIM)
    again.close()


def test_time_round_trip(store: Store) -> None:
    said = T0 - timedelta(days=400, microseconds=250)
    mid = store.apply_add(plan("u", memories=[memory("old news", said_at=said, occurred_at=said)])).memory_ids[0]
    (m,) = store.get_memories("u", [mid])
    assert m.said_at == said and m.occurred_at == said and m.said_at.tzinfo is not None
