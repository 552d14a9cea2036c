"""Schema migrations: named, ordered, transactional steps, one list for every backend.

Each :class:`Migration` is a list of steps. A step has a *model* (what it adds to the SQLAlchemy
description of the schema; :func:`deepcontext.store.schema.build_metadata` replays them all) and an
*apply* (the DDL it runs on a database of a given dialect). So the tables the code queries and the
tables the migrations create come from the same declarations (the tables and columns are declared in
:mod:`deepcontext.store.migration_tables`; the raw SQL of each dialect is written here).

A database records its version in ``dc_meta['schema_version']``; :func:`migrate` applies the
missing migrations in one transaction each, under a lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an
advisory lock), so several processes starting at once upgrade it exactly once.
"""

from __future__ import annotations

from collections.abc import Callable

from deepcontext.store.migration_steps import (
    AddColumn,
    AddIndex,
    CreateTables,
    Migration,
    RawSQL,
    SqliteAutoincrement,
)
from deepcontext.store.migration_tables import _v1_tables, _v2_mention_count, _v5_scope, _v11_ui_sessions, _v12_activity
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
