"""The slot-key index (memory_slots, migration 6) on both backends: the lookup of stored single-valued
facts answers as the scan of every memory's metadata does, and the triggers keep it in step with
every write (add, metadata change, soft and hard delete, another user, a deleted user)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, text

from deepcontext.store import Store
from tests.store_helpers import axis, later, memory, open_test_store, plan

RES = "slot:user|residence"
JOB = "slot:user|job"


def _ids(store: Store, user: str, keys: list[str], **kw: Any) -> list[int]:
    return [m.id for m in store.find_active_by_metadata_keys(user, keys, later(60), **kw)]


def _slot_rows(url: str) -> list[tuple[str, str, int]]:
    from deepcontext.store.postgres import normalize_url

    engine = create_engine(normalize_url(url) if url.startswith("postgres") else url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT user_id, slot_key, memory_id FROM memory_slots ORDER BY memory_id, slot_key"))
            return [(str(u), str(k), int(m)) for u, k, m in rows]
    finally:
        engine.dispose()


def _set_status(url: str, memory_id: int, status: str) -> None:
    from deepcontext.store.postgres import normalize_url

    engine = create_engine(normalize_url(url) if url.startswith("postgres") else url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE memories SET status = :s WHERE id = :i"), {"s": status, "i": memory_id})
    finally:
        engine.dispose()


def _add(store: Store, user: str, text_: str, i: int, metadata: dict[str, Any], **kw: Any) -> int:
    out = store.apply_add(plan(user, now=later(i), memories=[memory(text_, vec=axis(i % 8), metadata=metadata)], **kw))
    return out.memory_ids[0]


def test_lookup_is_indexed_and_matches_the_scan(db_url: str) -> None:
    store = open_test_store(db_url)
    try:
        a = _add(store, "u1", "I live in Porto", 1, {RES: {"value": "porto"}, "slots": "user|residence"})
        b = _add(store, "u1", "I work as a nurse", 2, {JOB: {"value": "nurse"}})
        c = _add(store, "u1", "I moved to Lisbon", 3, {RES: {"value": "lisbon"}, "other": 1})
        tea = _add(store, "u1", "I like tea", 4, {"other": 2, RES: None})  # a null value holds no slot
        _add(store, "u2", "I live in Oslo", 5, {RES: {"value": "oslo"}})
        d = _add(store, "u1", "A scoped fact", 6, {RES: {"value": "rome"}}, agent_id="bot")
        assert _ids(store, "u1", [RES], scope=("bot", None)) == [d]
        assert _ids(store, "u1", [RES]) == [d, c, a]
        assert _ids(store, "u1", [RES, JOB]) == [d, c, b, a]
        assert _ids(store, "u1", [RES, JOB], limit=2) == [d, c]
        # a key outside the slot prefix reads the metadata itself, as before
        assert _ids(store, "u1", ["other"]) == [tea, c]
        assert _ids(store, "u3", [RES]) == []
        # a changed value keeps the row; dropping the key drops it; a deleted memory leaves the lookup
        store.update_memory("u1", c, text="I moved to Lisbon", content_hash="h", embedding=None, now=later(7), actor="t",
                            reason=None, metadata={"other": 1})  # fmt: skip
        assert _ids(store, "u1", [RES]) == [d, a]
        store.delete_memory("u1", a, now=later(8), actor="t", reason=None)
        assert _ids(store, "u1", [RES]) == [d]
        assert _ids(store, "u1", [JOB]) == [b]
        store.delete_user("u1")
        assert {u for u, _, _ in _slot_rows(db_url)} == {"u2"}
    finally:
        store.close()


def test_index_rows_follow_the_metadata(db_url: str) -> None:
    store = open_test_store(db_url)
    try:
        a = _add(store, "u1", "I live in Porto", 1, {RES: {"value": "porto"}, JOB: "nurse", "slots": "x"})
        assert _slot_rows(db_url) == [("u1", JOB, a), ("u1", RES, a)]
        store.update_memory("u1", a, text="I live in Porto", content_hash="h", embedding=None, now=later(2), actor="t",
                            reason=None, metadata={JOB: "doctor"})  # fmt: skip
        assert _slot_rows(db_url) == [("u1", JOB, a)]
        # only active memories are held: a soft-deleted one leaves, a restored one comes back
        store.delete_memory("u1", a, now=later(3), actor="t", reason=None)
        assert _slot_rows(db_url) == []
        _set_status(db_url, a, "active")
        assert _slot_rows(db_url) == [("u1", JOB, a)]
    finally:
        store.close()
