"""Schema migrations: named, ordered, transactional steps, one list for every backend.

Each :class:`Migration` is a list of steps. A step has a *model* (what it adds to the SQLAlchemy
description of the schema; :func:`deepcontext.store.schema.build_metadata` replays them all) and an
*apply* (the DDL it runs on a database of a given dialect). So the tables the code queries and the
tables the migrations create come from the same declarations.

A database records its version in ``dc_meta['schema_version']``; :func:`migrate` applies the
missing migrations in one transaction each, under a lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an
advisory lock), so several processes starting at once upgrade it exactly once.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from deepcontext.store.columns import JSONType, UTCDateTime, VectorType, pk_type
from deepcontext.store.migration_steps import (
    AddColumn,
    AddIndex,
    CreateTables,
    Migration,
    RawSQL,
    SqliteAutoincrement,
)
from deepcontext.types import MemoryStatus

__all__ = [
    "hnsw_index_sql",
    "MIGRATIONS",
    "NAMED_USER_TURN",
    "PG_TS_CONFIG",
    "SLOT_KEY_PREFIX",
    "latest_version",
    "pg_vector_mode",
]


def _v1_tables(md: MetaData, dim: int) -> None:
    """Version 1: the initial schema."""
    Table(
        "dc_meta",
        md,
        Column("key", String(64), primary_key=True),
        Column("value", Text, nullable=False),
    )
    Table(
        "users",
        md,
        Column("user_id", String(255), primary_key=True),
        # bumped by every write that changes memories: caches compare it to know what to reload
        Column("version", BigInteger, nullable=False, default=0),
        # random token made when the row is created: a re-created user never matches an old cache
        Column("incarnation", String(32), nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("consolidation_due", Boolean, nullable=False, default=False),
    )
    Table(
        "conversations",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("conversation_id", String(255), primary_key=True),
        Column("tip_turn_id", pk_type, nullable=True),
        Column("summary", Text, nullable=True),
        Column("summary_turn_id", pk_type, nullable=True),
        Column("summary_updated_at", UTCDateTime, nullable=True),
        Column("turn_count", Integer, nullable=False, default=0),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("metadata", JSONType, nullable=False, default=dict),
    )
    Table(
        "turns",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("conversation_id", String(255), nullable=False),
        Column("role", String(32), nullable=False),
        Column("name", String(255), nullable=True),
        Column("content", Text, nullable=False),
        Column("content_hash", String(32), nullable=False),
        Column("kind", String(16), nullable=False, default="message"),  # message | summary
        Column("said_at", UTCDateTime, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("archived", Boolean, nullable=False, default=False),
        Column("summarized_by", pk_type, nullable=True),
        Column("summary_of", JSONType, nullable=False, default=list),
        Column("tags", JSONType, nullable=False, default=list),
        Column("metadata", JSONType, nullable=False, default=dict),
        Index("ix_turns_user_conv", "user_id", "conversation_id", "id"),
    )
    Table(
        "turn_edges",
        md,
        Column("user_id", String(255), nullable=False),
        Column("child_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("parent_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("position", Integer, nullable=False, default=0),
        Index("ix_turn_edges_parent", "parent_id"),
    )
    Table(
        "memories",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("text", Text, nullable=False),
        Column("content_hash", String(32), nullable=False),
        Column("memory_type", String(16), nullable=False),
        Column("tier", String(16), nullable=False),
        Column("status", String(16), nullable=False, default="active"),
        Column("importance", Float, nullable=False),
        Column("base_importance", Float, nullable=False),  # importance at the last reinforcement
        Column("confidence", Float, nullable=False),
        Column("access_count", Integer, nullable=False, default=0),
        Column("last_accessed_at", UTCDateTime, nullable=True),
        Column("reinforced_at", UTCDateTime, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("said_at", UTCDateTime, nullable=True),
        Column("occurred_at", UTCDateTime, nullable=True),
        Column("valid_from", UTCDateTime, nullable=True),
        Column("valid_to", UTCDateTime, nullable=True),
        Column("expires_at", UTCDateTime, nullable=True),
        Column("deleted_at", UTCDateTime, nullable=True),
        Column("superseded_by", pk_type, nullable=True),
        Column("conversation_id", String(255), nullable=True),
        Column("source", String(32), nullable=False, default="rules"),
        Column("consolidated_from", JSONType, nullable=False, default=list),
        Column("metadata", JSONType, nullable=False, default=dict),
        Column("pinned", Boolean, nullable=False, default=False),
        Column("tags", JSONType, nullable=False, default=list),
        Column("canonical_key", String(255), nullable=True),
        Column("embedding", VectorType(dim), nullable=True),
        # the users.version of the write that last changed this row (incremental cache refresh)
        Column("rev", BigInteger, nullable=False, default=0),
        Index("ix_memories_user_status", "user_id", "status", "tier"),
        Index("ix_memories_user_hash", "user_id", "content_hash"),
        Index("ix_memories_user_rev", "user_id", "rev"),
        Index("ix_memories_user_created", "user_id", "created_at", "id"),
    )
    Table(
        "memory_sources",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("turn_id", pk_type, ForeignKey("turns.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Index("ix_memory_sources_turn", "turn_id"),
    )
    Table(
        "memory_history",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("memory_id", pk_type, nullable=False),
        Column("event", String(16), nullable=False),
        Column("old_text", Text, nullable=True),
        Column("new_text", Text, nullable=True),
        Column("actor", String(64), nullable=False, default="system"),
        Column("reason", Text, nullable=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("details", JSONType, nullable=False, default=dict),
        Index("ix_memory_history_memory", "user_id", "memory_id", "id"),
    )
    Table(
        "memory_links",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("other_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Column("similarity", Float, nullable=False),
        Index("ix_memory_links_other", "other_id"),
    )
    Table(
        "entities",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("name", String(512), nullable=False),
        Column("norm_name", String(512), nullable=False),
        Column("entity_type", String(32), nullable=False),
        Column("mention_count", Integer, nullable=False, default=1),
        Column("first_seen_at", UTCDateTime, nullable=False),
        Column("last_seen_at", UTCDateTime, nullable=False),
        Column("attributes", JSONType, nullable=False, default=dict),
        UniqueConstraint("user_id", "norm_name", name="uq_entities_user_name"),
    )
    Table(
        "relations",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("source_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), nullable=False),
        Column("target_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), nullable=False),
        Column("relation", String(128), nullable=False),
        Column("strength", Float, nullable=False, default=1.0),
        Column("mention_count", Integer, nullable=False, default=1),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Column("properties", JSONType, nullable=False, default=dict),
        UniqueConstraint("user_id", "source_id", "relation", "target_id", name="uq_relations_edge"),
        Index("ix_relations_target", "user_id", "target_id"),
    )
    Table(
        "memory_entities",
        md,
        Column("memory_id", pk_type, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True),
        Column("entity_id", pk_type, ForeignKey("entities.id", ondelete="CASCADE"), primary_key=True),
        Column("user_id", String(255), nullable=False),
        Index("ix_memory_entities_entity", "entity_id", "memory_id"),
    )
    Table(
        "kv",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("namespace", String(64), primary_key=True),
        Column("key", String(512), primary_key=True),
        Column("value", JSONType, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
    )
    Table(
        "locks",
        md,
        Column("user_id", String(255), primary_key=True),
        Column("name", String(64), primary_key=True),
        Column("owner", String(128), nullable=False),
        Column("expires_at", UTCDateTime, nullable=False),
    )
    Table(
        "api_keys",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("key_id", String(32), nullable=False, unique=True),  # public prefix shown in listings
        Column("key_hash", String(128), nullable=False),
        Column("tenant", String(255), nullable=False),
        Column("name", String(255), nullable=True),
        Column("user_ids", JSONType, nullable=True),  # null: every user of the tenant
        Column("read_only", Boolean, nullable=False, default=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("revoked_at", UTCDateTime, nullable=True),
        Column("last_used_at", UTCDateTime, nullable=True),
    )


def _v11_ui_sessions(md: MetaData, dim: int) -> None:
    """The inspector's sign-ins: the browser holds a random session id, stored here hashed, tied to
    the key it was opened with (a revoked key ends its sessions) and ending at ``expires_at``."""
    Table(
        "ui_sessions",
        md,
        Column("session_hash", String(128), primary_key=True),
        Column("key_id", String(32), nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("expires_at", UTCDateTime, nullable=False),
        Index("ix_ui_sessions_key", "key_id"),
    )


def _v12_activity(md: MetaData, dim: int) -> None:
    """The activity log: each recorded search or context call (``details``: its parameters, results
    and what a context included and left out, as JSON) and, per result, a row naming the memory,
    so a memory's page finds the calls that retrieved it by index."""
    Table(
        "activity",
        md,
        Column("id", pk_type, primary_key=True, autoincrement=True),
        Column("user_id", String(255), nullable=False),
        Column("kind", String(16), nullable=False),
        Column("via", String(16), nullable=False),
        Column("key_id", String(32), nullable=True),
        Column("agent_id", String(255), nullable=True),
        Column("run_id", String(255), nullable=True),
        Column("conversation_id", String(255), nullable=True),
        Column("query", Text, nullable=False),
        Column("took_ms", Float, nullable=True),
        Column("created_at", UTCDateTime, nullable=False),
        Column("details", JSONType, nullable=False, default=dict),
        Index("ix_activity_user", "user_id", "id"),
        Index("ix_activity_user_time", "user_id", "created_at"),
        sqlite_autoincrement=True,  # an id is never given again once pruned: a bookmarked call stays gone
    )
    Table(
        "activity_hits",
        md,
        Column("activity_id", pk_type, ForeignKey("activity.id", ondelete="CASCADE"), primary_key=True),
        Column("memory_id", pk_type, primary_key=True),
        Column("user_id", String(255), nullable=False),
        Column("rank", Integer, nullable=False),
        Index("ix_activity_hits_memory", "user_id", "memory_id", "activity_id"),
    )


#: the keyword index's FTS5 tables (memory_fts, memory_fts_past): columns and tokenizer
_SQLITE_FTS_COLUMNS = "body, uid, tokenize = 'porter unicode61 remove_diacritics 2'"


def _v1_sqlite_fts(dim: int) -> list[str]:
    # keyword index: rowid = memories.id, body = deepcontext.text.search_text(memory text),
    # uid = a token naming the user (deepcontext.store.sqlite.user_token), so a query ANDs it and
    # FTS5 ranks one user's rows on its own; memory_fts_vocab gives document frequencies of terms
    return [
        f"CREATE VIRTUAL TABLE memory_fts USING fts5({_SQLITE_FTS_COLUMNS})",
        "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row')",
    ]


# --- PostgreSQL: pgvector, the HNSW index, the keyword index ---------------------------------------
#: pgvector's HNSW index takes ``vector`` columns up to 2000 dimensions; up to 4000 it indexes the
#: column cast to ``halfvec`` (16-bit floats; the table keeps full precision); beyond, no ANN index
#: (exact scans). :mod:`deepcontext.store.postgres` queries the same expression the index was built on.
PG_HNSW_MAX_DIM = 2000
PG_HALFVEC_MAX_DIM = 4000
#: HNSW build parameters (pgvector's defaults). Measured here at 100k x 384: recall@10 1.00 at ef_search 100
#: on clustered vectors (like text embeddings), 0.13 on i.i.d. random ones (the worst case)
PG_HNSW_M = 16
PG_HNSW_EF_CONSTRUCTION = 64
#: the text search configuration of the keyword index (stemming like SQLite's porter tokenizer)
PG_TS_CONFIG = "english"


def pg_vector_mode(dim: int) -> str:
    """How the HNSW index covers vectors of size ``dim``: ``vector``, ``halfvec`` or ``none``."""
    if dim <= PG_HNSW_MAX_DIM:
        return "vector"
    if dim <= PG_HALFVEC_MAX_DIM:
        return "halfvec"
    return "none"


def _v1_pg_extension(dim: int) -> list[str]:
    # before CreateTables: memories.embedding is a vector(dim)
    return ["CREATE EXTENSION IF NOT EXISTS vector"]


def hnsw_index_sql(dim: int, *, concurrently: bool = False) -> str:
    """The statement creating the HNSW index of ``memories`` for vectors of size ``dim`` ("" when
    they are too large for one)."""
    mode = pg_vector_mode(dim)
    with_ = f"WITH (m = {PG_HNSW_M}, ef_construction = {PG_HNSW_EF_CONSTRUCTION})"
    how = "CREATE INDEX CONCURRENTLY IF NOT EXISTS" if concurrently else "CREATE INDEX IF NOT EXISTS"
    if mode == "vector":
        return f"{how} ix_memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops) {with_}"
    if mode == "halfvec":
        return f"{how} ix_memories_embedding_hnsw ON memories USING hnsw ((embedding::halfvec({dim})) halfvec_cosine_ops) {with_}"
    return ""


def _v1_pg_search(dim: int) -> list[str]:
    stmts: list[str] = [sql] if (sql := hnsw_index_sql(dim)) else []
    # keyword index: like SQLite's memory_fts, a side table (not a column of memories: updating a
    # memories row rewrites it in every index, the HNSW one included); the store fills it with
    # to_tsvector(PG_TS_CONFIG, search_text(text) with Latin diacritics folded) in the same transaction.
    stmts += [
        "CREATE TABLE memory_fts ("
        "memory_id BIGINT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE, "
        "user_id VARCHAR(255) NOT NULL, "
        "tsv TSVECTOR NOT NULL)",
        "CREATE INDEX ix_memory_fts_tsv ON memory_fts USING gin (tsv)",
        "CREATE INDEX ix_memory_fts_user ON memory_fts (user_id)",
    ]
    return stmts


def _v2_mention_count(dim: int) -> Column:  # type: ignore[type-arg]
    # how many times the memory was said: 1 when written, +1 on every re-mention (a NOOP of an add),
    # which also restarts its forgetting curve (deepcontext.lifecycle.decay); rows of version 1 get 1
    return Column("mention_count", Integer, nullable=False, default=1, server_default=text("1"))


def _lexeme_rows(rows: str, sign: int) -> str:
    """The lexemes of ``rows`` (a memory_fts transition table, or the table itself), each row's once,
    plus '' (no lexeme is empty) once per row, each counted ``sign``."""
    return (
        f"SELECT user_id, unnest(tsvector_to_array(tsv)) AS lexeme, {sign} AS n FROM {rows} "
        f"UNION ALL SELECT user_id, '', {sign} FROM {rows}"
    )


def _lexeme_upsert(parts: str) -> str:
    # keys in order: concurrent statements lock the rows they change in the same order
    return (
        "INSERT INTO memory_lexemes AS d (user_id, lexeme, df) "
        f"SELECT user_id, lexeme, sum(n) FROM ({parts}) AS c GROUP BY user_id, lexeme HAVING sum(n) <> 0 "
        "ORDER BY user_id, lexeme "
        "ON CONFLICT (user_id, lexeme) DO UPDATE SET df = d.df + EXCLUDED.df"
    )


#: rows of lexemes no memory of the user holds any more go (a deleted user leaves no word behind)
_LEXEME_CLEANUP = (
    "DELETE FROM memory_lexemes AS d USING (SELECT DISTINCT user_id, unnest(tsvector_to_array(tsv)) AS lexeme "
    "FROM old_rows UNION SELECT DISTINCT user_id, '' FROM old_rows) AS o "
    "WHERE d.user_id = o.user_id AND d.lexeme = o.lexeme AND d.df <= 0"
)


def _v3_pg_lexemes(dim: int) -> list[str]:
    """memory_lexemes: per user, how many keyword-index rows hold each lexeme (and, under '', how
    many rows there are), kept by statement-level triggers on memory_fts in the writing transaction
    (every path: the store's writes, cascades, imports). The keyword leg reads exact document
    frequencies from it by primary key where it counted them through the GIN index (a bitmap heap
    scan of every match: ~6 ms for a lexeme in 7k of 114k rows)."""
    body = (
        "BEGIN "
        "IF TG_OP = 'INSERT' THEN "
        f"{_lexeme_upsert(_lexeme_rows('new_rows', 1))}; "
        "ELSIF TG_OP = 'DELETE' THEN "
        f"{_lexeme_upsert(_lexeme_rows('old_rows', -1))}; {_LEXEME_CLEANUP}; "
        "ELSE "
        f"{_lexeme_upsert(_lexeme_rows('old_rows', -1) + ' UNION ALL ' + _lexeme_rows('new_rows', 1))}; {_LEXEME_CLEANUP}; "
        "END IF; RETURN NULL; END"
    )
    trigger = "FOR EACH STATEMENT EXECUTE FUNCTION dc_memory_lexemes()"
    return [
        "CREATE TABLE memory_lexemes (user_id VARCHAR(255) NOT NULL, lexeme TEXT NOT NULL, df BIGINT NOT NULL, "
        "PRIMARY KEY (user_id, lexeme))",
        "INSERT INTO memory_lexemes (user_id, lexeme, df) "
        f"SELECT user_id, lexeme, sum(n) FROM ({_lexeme_rows('memory_fts', 1)}) AS c GROUP BY user_id, lexeme",
        f"CREATE FUNCTION dc_memory_lexemes() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$",
        f"CREATE TRIGGER dc_memory_fts_insert AFTER INSERT ON memory_fts REFERENCING NEW TABLE AS new_rows {trigger}",
        f"CREATE TRIGGER dc_memory_fts_update AFTER UPDATE ON memory_fts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows {trigger}",
        f"CREATE TRIGGER dc_memory_fts_delete AFTER DELETE ON memory_fts REFERENCING OLD TABLE AS old_rows {trigger}",
    ]


def _v5_scope(name: str) -> Callable[[int], Column]:  # type: ignore[type-arg]
    # the agent / run a memory or turn belongs to, inside its user (NULL: none); rows before v5 have none
    return lambda dim: Column(name, String(255), nullable=True)


#: metadata keys with this prefix (the single-valued facts of deepcontext.extract.slots) are indexed
#: in memory_slots, so an add finds the stored values of a fact without reading every memory's JSON
SLOT_KEY_PREFIX = "slot:"


def _v6_slots(dialect: str) -> Callable[[int], list[str]]:
    """memory_slots: (user, slot key, memory) for every active memory whose metadata holds a
    non-null ``slot:`` key, kept by row triggers on memories (every write path, in the writing
    transaction) and backfilled from the rows already there. Only active rows: the values a fact
    once had (superseded) would otherwise pile up under its key."""
    table = (
        "CREATE TABLE memory_slots (user_id VARCHAR(255) NOT NULL, slot_key TEXT NOT NULL, "
        "memory_id BIGINT NOT NULL, PRIMARY KEY (user_id, memory_id, slot_key))"
    )
    index = "CREATE INDEX ix_memory_slots_key ON memory_slots (user_id, slot_key, memory_id)"
    n = len(SLOT_KEY_PREFIX)
    active = MemoryStatus.ACTIVE.value
    if dialect == "sqlite":
        rows = (
            # rows written before metadata was checked may hold NaN, which json_each refuses
            "SELECT {m}.user_id, j.key, {m}.id "
            "FROM {src} json_each(CASE WHEN json_valid({m}.metadata) THEN {m}.metadata ELSE '{{}}' END) AS j "
            f"WHERE {{m}}.status = '{active}' AND substr(j.key, 1, {n}) = '{SLOT_KEY_PREFIX}' AND j.type <> 'null'"
        )
        one = rows.format(m="NEW", src="")
        return lambda dim: [
            table + " WITHOUT ROWID",
            index,
            "INSERT INTO memory_slots (user_id, slot_key, memory_id) " + rows.format(m="memories", src="memories,"),
            f"CREATE TRIGGER dc_memory_slots_insert AFTER INSERT ON memories BEGIN "
            f"INSERT OR IGNORE INTO memory_slots (user_id, slot_key, memory_id) {one}; END",
            "CREATE TRIGGER dc_memory_slots_update AFTER UPDATE OF metadata, status, user_id ON memories BEGIN "
            "DELETE FROM memory_slots WHERE user_id = OLD.user_id AND memory_id = OLD.id; "
            f"INSERT OR IGNORE INTO memory_slots (user_id, slot_key, memory_id) {one}; END",
            "CREATE TRIGGER dc_memory_slots_delete AFTER DELETE ON memories BEGIN "
            "DELETE FROM memory_slots WHERE user_id = OLD.user_id AND memory_id = OLD.id; END",
        ]
    rows = (
        "SELECT {m}.user_id, j.key, {m}.id FROM {src} jsonb_each({m}.metadata) AS j "
        f"WHERE {{m}}.status = '{active}' AND left(j.key, {n}) = '{SLOT_KEY_PREFIX}' AND jsonb_typeof(j.value) <> 'null'"
    )
    one = rows.format(m="NEW", src="")
    body = (
        "BEGIN "
        "IF TG_OP IN ('UPDATE', 'DELETE') THEN "
        "DELETE FROM memory_slots WHERE user_id = OLD.user_id AND memory_id = OLD.id; END IF; "
        "IF TG_OP IN ('INSERT', 'UPDATE') THEN "
        f"INSERT INTO memory_slots (user_id, slot_key, memory_id) {one} ON CONFLICT DO NOTHING; END IF; "
        "RETURN NULL; END"
    )
    return lambda dim: [
        table,
        index,
        "INSERT INTO memory_slots (user_id, slot_key, memory_id) " + rows.format(m="memories", src="memories,"),
        f"CREATE FUNCTION dc_memory_slots() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$",
        "CREATE TRIGGER dc_memory_slots_insert AFTER INSERT ON memories FOR EACH ROW EXECUTE FUNCTION dc_memory_slots()",
        "CREATE TRIGGER dc_memory_slots_update AFTER UPDATE OF metadata, status, user_id ON memories FOR EACH ROW "
        "EXECUTE FUNCTION dc_memory_slots()",
        "CREATE TRIGGER dc_memory_slots_delete AFTER DELETE ON memories FOR EACH ROW EXECUTE FUNCTION dc_memory_slots()",
    ]


def _v8_sqlite_fts_status(dim: int) -> list[str]:
    """The keyword index holds what searches look for: active memories in memory_fts, superseded
    ones in memory_fts_past (the past versions a question about the past looks for), no others. A
    trigger on memories moves a memory's row when its status changes, on every write path."""
    active, past = MemoryStatus.ACTIVE.value, MemoryStatus.SUPERSEDED.value
    return [
        f"CREATE VIRTUAL TABLE memory_fts_past USING fts5({_SQLITE_FTS_COLUMNS})",
        "CREATE VIRTUAL TABLE memory_fts_past_vocab USING fts5vocab(memory_fts_past, 'row')",
        "INSERT INTO memory_fts_past(rowid, body, uid) SELECT f.rowid, f.body, f.uid FROM memory_fts AS f "
        f"JOIN memories AS m ON m.id = f.rowid WHERE m.status = '{past}'",
        f"DELETE FROM memory_fts WHERE rowid IN (SELECT id FROM memories WHERE status <> '{active}')",
        "CREATE TRIGGER dc_memory_fts_status AFTER UPDATE OF status ON memories WHEN OLD.status <> NEW.status BEGIN "
        "INSERT INTO memory_fts_past(rowid, body, uid) SELECT rowid, body, uid FROM memory_fts "
        f"WHERE rowid = OLD.id AND NEW.status = '{past}'; "
        "INSERT INTO memory_fts(rowid, body, uid) SELECT rowid, body, uid FROM memory_fts_past "
        f"WHERE rowid = OLD.id AND NEW.status = '{active}'; "
        f"DELETE FROM memory_fts WHERE rowid = OLD.id AND NEW.status <> '{active}'; "
        f"DELETE FROM memory_fts_past WHERE rowid = OLD.id AND NEW.status <> '{past}'; END",
    ]


#: the condition of ix_turns_user_named, which a query must state as it is (as SQL, not a bound
#: parameter) for the planner to use the index
NAMED_USER_TURN = "role = 'user' AND name IS NOT NULL"


MIGRATIONS: list[Migration] = [
    Migration(
        1,
        "initial schema",
        [
            RawSQL(postgresql=_v1_pg_extension),
            CreateTables(_v1_tables),
            RawSQL(sqlite=_v1_sqlite_fts, postgresql=_v1_pg_search),
        ],
    ),
    Migration(2, "memories.mention_count: re-mentions counted and reinforcing", [AddColumn("memories", _v2_mention_count)]),
    Migration(3, "PostgreSQL: per-user lexeme document frequencies kept by triggers", [RawSQL(postgresql=_v3_pg_lexemes)]),
    Migration(4, "SQLite: memory and turn ids never reused (AUTOINCREMENT)", [SqliteAutoincrement(("memories", "turns"))]),
    Migration(
        5,
        "agent and run scopes of memories and turns",
        [
            AddColumn("memories", _v5_scope("agent_id")),
            AddColumn("memories", _v5_scope("run_id")),
            AddColumn("turns", _v5_scope("agent_id")),
            AddColumn("turns", _v5_scope("run_id")),
            AddIndex("memories", "ix_memories_user_agent", ["user_id", "agent_id"]),
            AddIndex("memories", "ix_memories_user_run", ["user_id", "run_id"]),
        ],
    ),
    Migration(
        6,
        "single-valued facts indexed by user and slot key (memory_slots, kept by triggers)",
        [RawSQL(sqlite=_v6_slots("sqlite"), postgresql=_v6_slots("postgresql"))],
    ),
    Migration(
        7,
        "the user's named turns indexed (the first one names the user)",
        # every add asks for the user's name: without a display name set, the first named turn of
        # the user's, which without this index means reading and sorting all of the user's turns
        [AddIndex("turns", "ix_turns_user_named", ["user_id", "id"], where=NAMED_USER_TURN)],
    ),
    Migration(
        8,
        "SQLite: the keyword index holds active memories, superseded ones in a table of their own",
        # a search ranked the merged and superseded memories' rows too, as high as the memories
        # that replaced them, and then dropped them
        [RawSQL(sqlite=_v8_sqlite_fts_status)],
    ),
    Migration(
        9,
        "a memory's links indexed by similarity",
        # a search shows each result's most similar links: without this index every link of the
        # memory (hundreds for a common one) was read and sorted to keep five
        [AddIndex("memory_links", "ix_memory_links_best", ["memory_id", "similarity DESC", "other_id"])],
    ),
    Migration(
        10,
        "PostgreSQL: user ids indexed in byte order (a tenant's users are one range of it)",
        # listing a tenant's users read every tenant's: the primary key's order is the database's
        # collation, where "acme/..." need not be contiguous. SQLite's primary key is in byte order.
        [RawSQL(postgresql=lambda dim: ['CREATE INDEX ix_users_user_c ON users (user_id COLLATE "C")'])],
    ),
    Migration(
        11,
        "the inspector's sign-in sessions (the browser's cookie holds a session id, never an API key)",
        [CreateTables(_v11_ui_sessions)],
    ),
    Migration(12, "the activity log: recorded search and context calls", [CreateTables(_v12_activity)]),
    Migration(
        13,
        "PostgreSQL: the keyword index's rows indexed by user and memory id",
        # a keyword the user said often (in tens of thousands of memories) ranks its newest matches:
        # walking the user's rows newest first finds them in a few thousand rows, where the GIN
        # index collects every match, read from the heap, to keep the newest
        [
            RawSQL(
                postgresql=lambda dim: [
                    "CREATE INDEX ix_memory_fts_user_id ON memory_fts (user_id, memory_id)",
                    "DROP INDEX ix_memory_fts_user",
                ]
            )
        ],
    ),
]
# versions need not be consecutive (a number may be left free), only increasing
MIGRATIONS.sort(key=lambda m: m.version)


def latest_version() -> int:
    return max(m.version for m in MIGRATIONS)
