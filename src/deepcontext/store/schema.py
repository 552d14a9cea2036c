"""The schema, described once with SQLAlchemy Core for every backend.

Every table carries ``user_id`` and every query filters on it (a sharded PostgreSQL such as Citus can
distribute all tables by ``user_id``). Times are timezone-aware datetimes in Python; SQLite stores them
as epoch seconds (fast numeric comparisons), PostgreSQL as ``timestamptz``. Vectors are float32:
a BLOB on SQLite, a pgvector ``vector(d)`` on PostgreSQL.

:func:`build_metadata` returns the tables of the *current* schema version; the migrations in
:mod:`deepcontext.store.migrations` bring a database to it step by step.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, MetaData, Table

from deepcontext.store.columns import JSONType, UTCDateTime, VectorType, is_time_column, is_vector_column, pk_type
from deepcontext.store.migrations import MIGRATIONS
from deepcontext.store.records import ColumnKind

__all__ = [
    "JSONType",
    "Tables",
    "UTCDateTime",
    "VectorType",
    "build_metadata",
    "import_columns",
    "is_time_column",
    "is_vector_column",
    "pk_type",
]


class Tables:
    """The tables of one metadata object, as attributes."""

    def __init__(self, metadata: MetaData) -> None:
        self.metadata = metadata
        t = metadata.tables
        self.meta: Table = t["dc_meta"]
        self.users: Table = t["users"]
        self.conversations: Table = t["conversations"]
        self.turns: Table = t["turns"]
        self.turn_edges: Table = t["turn_edges"]
        self.memories: Table = t["memories"]
        self.memory_sources: Table = t["memory_sources"]
        self.memory_history: Table = t["memory_history"]
        self.memory_links: Table = t["memory_links"]
        self.entities: Table = t["entities"]
        self.relations: Table = t["relations"]
        self.memory_entities: Table = t["memory_entities"]
        self.kv: Table = t["kv"]
        self.locks: Table = t["locks"]
        self.api_keys: Table = t["api_keys"]
        self.ui_sessions: Table = t["ui_sessions"]
        self.activity: Table = t["activity"]
        self.activity_hits: Table = t["activity_hits"]

    @property
    def user_tables(self) -> list[Table]:
        """Every table holding per-user rows, children first (safe delete order)."""
        return [
            self.activity_hits,
            self.activity,
            self.memory_entities,
            self.memory_links,
            self.memory_sources,
            self.memory_history,
            self.relations,
            self.entities,
            self.memories,
            self.turn_edges,
            self.turns,
            self.conversations,
            self.kv,
            self.locks,
            self.users,
        ]


def build_metadata(dim: int) -> MetaData:
    """The tables of the current schema for vectors of size ``dim``: the model of every migration
    step, replayed in order (so the migrations are the one source of truth)."""
    md = MetaData()
    for migration in MIGRATIONS:
        for step in migration.steps:
            step.model(md, dim)
    return md


#: tables an import never writes: the store's own bookkeeping and credentials
_NOT_IMPORTED = frozenset({"users", "dc_meta", "locks", "api_keys"})


def import_columns(metadata: MetaData, table: str) -> dict[str, ColumnKind] | None:
    """The columns of ``table`` an exported row may carry, each with how its JSON value is read;
    None for a table an import never writes."""
    if table not in metadata.tables or table in _NOT_IMPORTED:
        return None
    return {c.name: _kind(c) for c in metadata.tables[table].c}


def _kind(col: Any) -> ColumnKind:
    if is_time_column(col):
        return "time"
    if is_vector_column(col):
        return "vector"
    return "json" if isinstance(col.type, JSON) else "value"
