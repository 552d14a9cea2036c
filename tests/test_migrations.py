"""Migrations on both backends: from empty, idempotent, concurrent, schema == build_metadata, upgrades."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sqlalchemy import Connection, MetaData, insert, text

from deepcontext.errors import MigrationError
from deepcontext.store import MemoryFilters, Store
from deepcontext.store.migrations import MIGRATIONS, latest_version
from deepcontext.store.schema import build_metadata
from deepcontext.store.sqlite_keywords import user_token
from deepcontext.types import MemoryStatus
from tests.store_helpers import DIM, T0, axis, later, open_test_store
from tests.store_workers import migrate_worker, run_processes

#: what the migrations create beside the tables build_metadata describes (documented, ignored by the
#: comparison): the keyword index (SQLite: the FTS5 virtual tables memory_fts and memory_fts_past, for
#: superseded memories, and their shadow tables; PostgreSQL: the table memory_fts and its indexes, and
#: memory_lexemes, the document frequencies its triggers keep), memory_slots (the slot-key index kept
#: by triggers on memories), PostgreSQL's HNSW index and its byte-order index of user ids.
EXTRA_TABLES = ("memory_fts", "memory_lexemes", "memory_slots")
EXTRA_INDEXES = {"ix_memories_embedding_hnsw", "ix_memory_fts_tsv", "ix_memory_fts_user_id", "ix_users_user_c"}


def _include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    if type_ == "table" and name and name.startswith(EXTRA_TABLES):
        return False
    if type_ == "index" and name in EXTRA_INDEXES:
        return False
    return True


def schema_differences(store: Store, dim: int = DIM) -> list[Any]:
    """alembic's comparison of the live database with build_metadata(dim)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    with store.engine.connect() as conn:  # type: ignore[attr-defined]
        if conn.dialect.name == "postgresql":
            from pgvector.sqlalchemy import HALFVEC, Vector

            conn.dialect.ischema_names = {**conn.dialect.ischema_names, "vector": Vector, "halfvec": HALFVEC}
        ctx = MigrationContext.configure(conn, opts={"include_object": _include, "compare_type": True})
        return list(compare_metadata(ctx, build_metadata(dim)))


def test_migrate_from_empty(db_url: str) -> None:
    store = open_test_store(db_url, migrate=False)
    try:
        assert store.schema_version() == 0
        assert store.migrate() == latest_version()
        assert store.schema_version() == latest_version()
        assert store.list_users() == []
    finally:
        store.close()


def test_migrate_twice_is_a_no_op(db_url: str) -> None:
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store import open_store

    open_test_store(db_url).close()
    statements: list[str] = []
    store = open_store(
        DeepContextSettings(_env_file=None, database_url=db_url),  # type: ignore[call-arg]
        DIM,
        tracer=lambda statement, params: statements.append(statement),
    )
    try:
        assert store.migrate() == latest_version()
        ddl = [s for s in statements if s.lstrip().upper().startswith(("CREATE", "ALTER", "DROP"))]
        assert ddl == [] and statements  # it looked, and changed nothing
    finally:
        store.close()


def test_schema_matches_build_metadata(db_url: str) -> None:
    store = open_test_store(db_url)
    try:
        assert schema_differences(store) == []
    finally:
        store.close()


def test_schema_matches_for_large_vectors(db_url: str) -> None:
    # PostgreSQL indexes vectors above 2000 dims as halfvec; the table still matches the description
    store = open_test_store(db_url, dim=3072)
    try:
        assert schema_differences(store, 3072) == []
        v = np.zeros(3072, dtype=np.float32)
        v[5] = 1.0
        from tests.store_helpers import memory, plan

        mid = store.apply_add(plan("u", memories=[memory("big", vec=v)])).memory_ids[0]
        assert [i for i, _ in store.vector_search("u", v, 3, MemoryFilters(), later(1))] == [mid]
    finally:
        store.close()


@pytest.mark.slow  # several processes on one database
def test_processes_migrating_at_once(db_url: str) -> None:
    versions = run_processes(migrate_worker, [(db_url, DIM)] * 3)
    assert versions == [latest_version()] * 3
    store = open_test_store(db_url, migrate=False)
    try:
        assert store.schema_version() == latest_version()
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            rows = conn.execute(text("SELECT count(*) FROM dc_meta WHERE key = 'schema_version'")).scalar()
        assert rows == 1
        assert schema_differences(store) == []
    finally:
        store.close()


def test_newer_database_is_refused(db_url: str) -> None:
    store = open_test_store(db_url)
    try:
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(text("UPDATE dc_meta SET value = '999' WHERE key = 'schema_version'"))
        with pytest.raises(MigrationError, match="newer"):
            store.migrate()
    finally:
        store.close()


# --- upgrading a database made by the previous schema version -------------------------------------------


def build_at_version(store: Store, version: int) -> MetaData:
    """Bring an empty database to schema ``version`` (MIGRATIONS up to it, applied with the store's own
    lock and DDL), and return that version's table description."""
    md = MetaData()
    dim = store.dim  # type: ignore[attr-defined]
    with store.transaction() as conn:  # type: ignore[attr-defined]
        store.migration_lock(conn)  # type: ignore[attr-defined]
        for migration in MIGRATIONS:
            if migration.version > version:
                break
            for step in migration.steps:
                step.model(md, dim)
                step.apply(conn, md, dim)
        store.set_meta(conn, "schema_version", str(version))  # type: ignore[attr-defined]
    return md


def _insert(conn: Connection, md: MetaData, table: str, **values: Any) -> Any:
    """Insert into the old schema's table, with only the columns it has; returns the primary key."""
    t = md.tables[table]
    row = {k: v for k, v in values.items() if k in t.c}
    res = conn.execute(insert(t).values(**row))
    return res.inserted_primary_key[0] if res.inserted_primary_key else None


def fill_old_database(store: Store, md: MetaData) -> dict[str, int]:
    """A user with a turn, an entity, two memories (one superseded), history, links and kv, written
    straight into the tables of the old schema (not through today's code)."""
    common = {"user_id": "old-user"}
    with store.transaction() as conn:  # type: ignore[attr-defined]
        _insert(conn, md, "users", **common, version=3, incarnation="abc", created_at=T0, updated_at=T0, consolidation_due=False)
        _insert(
            conn, md, "conversations", **common, conversation_id="c1", turn_count=1, created_at=T0, updated_at=T0, metadata={}
        )
        tid = _insert(conn, md, "turns", **common, conversation_id="c1", role="user", content="I moved to Lisbon",
                      content_hash="t1", kind="message", said_at=T0, created_at=T0, archived=False, summary_of=[], tags=[], metadata={})  # fmt: skip
        mem = dict(
            memory_type="semantic", tier="short_term", importance=0.6, base_importance=0.6, confidence=0.9,
            access_count=0, reinforced_at=T0, created_at=T0, updated_at=T0, said_at=T0, valid_from=T0,
            conversation_id="c1", source="rules", consolidated_from=[], metadata={"k": "v", "slot:user|residence": {"value": "lisbon"}}, pinned=False, tags=[], rev=3,
        )  # fmt: skip
        new = _insert(
            conn,
            md,
            "memories",
            **common,
            **mem,
            text="Ana lives in Lisbon",
            content_hash="m2",
            status="active",
            embedding=axis(0),
        )
        old = _insert(conn, md, "memories", **common, **mem, text="Ana lives in Porto", content_hash="m1", status="superseded",
                      superseded_by=new, valid_to=T0, embedding=axis(1))  # fmt: skip
        _insert(conn, md, "memory_sources", **common, memory_id=new, turn_id=tid)
        eid = _insert(conn, md, "entities", **common, name="Lisbon", norm_name="lisbon", entity_type="location",
                      mention_count=1, first_seen_at=T0, last_seen_at=T0, attributes={})  # fmt: skip
        _insert(conn, md, "memory_entities", **common, memory_id=new, entity_id=eid)
        _insert(conn, md, "memory_links", **common, memory_id=new, other_id=old, similarity=0.8)
        for mid, event, txt in ((old, "ADD", "Ana lives in Porto"), (new, "UPDATE", "Ana lives in Lisbon")):
            _insert(
                conn,
                md,
                "memory_history",
                **common,
                memory_id=mid,
                event=event,
                new_text=txt,
                actor="system",
                created_at=T0,
                details={},
            )
        _insert(conn, md, "kv", **common, namespace="ns", key="k", value={"x": 1}, updated_at=T0)
        if (
            conn.dialect.name == "sqlite"
            and not conn.execute(text("SELECT 1 FROM sqlite_master WHERE name = 'memory_fts_past'")).first()
        ):
            # before version 8 every memory had its row in memory_fts, whatever its status
            for mid, body in ((new, "Ana lives in Lisbon"), (old, "Ana lives in Porto")):
                conn.execute(
                    text("INSERT INTO memory_fts(rowid, body, uid) VALUES (:i, :b, :u)"),
                    {"i": mid, "b": body, "u": user_token("old-user")},
                )
        else:
            store.index_texts(conn, [(new, "Ana lives in Lisbon"), (old, "Ana lives in Porto")])  # type: ignore[attr-defined]
    return {"new": int(new), "old": int(old), "turn": int(tid), "entity": int(eid)}


def check_filled_database(store: Store, ids: dict[str, int]) -> None:
    """Everything fill_old_database wrote reads back through today's store."""
    new, old = store.get_memories("old-user", [ids["new"], ids["old"]])
    assert (new.text, new.status.value, new.entities, [p.turn_id for p in new.sources]) == (
        "Ana lives in Lisbon", "active", ["Lisbon"], [ids["turn"]],
    )  # fmt: skip
    assert (old.status.value, old.superseded_by, new.metadata["k"]) == ("superseded", ids["new"], "v")
    # the slot-key index (version 6) holds the rows written before it; superseded memories stay out
    found = store.find_active_by_metadata_keys("old-user", ["slot:user|residence", "slot:user|job"], later(1))
    assert [m.id for m in found] == [ids["new"]]
    assert (new.mention_count, old.mention_count) == (1, 1)  # the column added by version 2
    assert (new.agent_id, new.run_id) == (None, None)  # the scopes added by version 5
    assert [e.event.value for e in store.history("old-user", ids["new"])] == ["UPDATE"]
    assert [i for i, _ in store.vector_search("old-user", axis(0), 5, MemoryFilters(), later(1))] == [ids["new"]]
    assert [i for i, _ in store.keyword_search("old-user", ["lisbon"], 5, MemoryFilters(), later(1))] == [ids["new"]]
    # the superseded memory is found where questions about the past look (SQLite: moved by version 8)
    past = MemoryFilters(statuses=(MemoryStatus.SUPERSEDED,))
    assert [i for i, _ in store.keyword_search("old-user", ["porto"], 5, past, later(1))] == [ids["old"]]
    assert store.keyword_search("old-user", ["porto"], 5, MemoryFilters(), later(1)) == []
    assert store.memory_links("old-user", [ids["old"]]) == {}  # links to inactive memories are hidden
    assert store.kv_get("old-user", "ns", "k") == {"x": 1}
    assert store.get_turns("old-user", [ids["turn"]])[0].content == "I moved to Lisbon"
    assert store.entity_neighbourhood("old-user", [ids["entity"]], 1)[0]["entity"] == "Lisbon"
    # and it takes new writes
    from tests.store_helpers import memory, plan

    out = store.apply_add(plan("old-user", now=later(2), memories=[memory("Ana likes fado", vec=axis(2))]))
    assert out.inserted == [True]


def test_fill_helper_at_the_current_version(db_url: str) -> None:
    """The upgrade test's helpers, exercised at today's version so they stay correct until the next
    migration needs them."""
    store = open_test_store(db_url, migrate=False)
    try:
        md = build_at_version(store, latest_version())
        ids = fill_old_database(store, md)
        assert store.migrate() == latest_version()
        check_filled_database(store, ids)
    finally:
        store.close()


@pytest.mark.skipif(
    len(MIGRATIONS) < 2,
    reason="only one schema version exists: upgrading from the previous version is tested once migration 2 exists",
)
def test_upgrade_from_the_previous_version(db_url: str) -> None:
    previous = MIGRATIONS[-2].version
    store = open_test_store(db_url, migrate=False)
    try:
        md = build_at_version(store, previous)
        assert store.schema_version() == previous
        ids = fill_old_database(store, md)
        assert store.migrate() == latest_version()
        check_filled_database(store, ids)
        assert schema_differences(store) == []
    finally:
        store.close()


def test_upgrade_keeps_rows_with_nan_metadata(db_url: str) -> None:
    """SQLite kept NaN in metadata written before it was checked for: the slot index's backfill and
    triggers pass over such a row instead of failing the upgrade (PostgreSQL's JSONB never held one)."""
    if not db_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's JSONB refuses NaN")
    store = open_test_store(db_url, migrate=False)
    try:
        md = build_at_version(store, 5)
        ids = fill_old_database(store, md)
        with store.transaction() as conn:  # type: ignore[attr-defined]
            conn.execute(text("UPDATE memories SET metadata = '{\"score\": NaN}' WHERE id = :i"), {"i": ids["old"]})
        assert store.migrate() == latest_version()
        found = store.find_active_by_metadata_keys("old-user", ["slot:user|residence"], later(1))
        assert [m.id for m in found] == [ids["new"]]
        with store.transaction() as conn:  # type: ignore[attr-defined]  # the update trigger passes too
            conn.execute(text("UPDATE memories SET status = 'active' WHERE id = :i"), {"i": ids["old"]})
    finally:
        store.close()


def test_versions_increase_and_may_leave_a_number_free() -> None:
    versions = [m.version for m in MIGRATIONS]
    assert versions == sorted(set(versions)) and latest_version() == versions[-1]
    # a database at any listed version upgrades: migrate applies the versions above it, whatever gaps
    # lie between (test_upgrade_from_the_previous_version upgrades across them)
