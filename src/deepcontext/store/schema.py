"""The schema, described once with SQLAlchemy Core for every backend.

Every table carries ``user_id`` and every query filters on it (a sharded PostgreSQL such as Citus can
distribute all tables by ``user_id``). Times are timezone-aware datetimes in Python; SQLite stores them
as epoch seconds (fast numeric comparisons), PostgreSQL as ``timestamptz``. Vectors are float32:
a BLOB on SQLite, a pgvector ``vector(d)`` on PostgreSQL.

:func:`build_metadata` returns the tables of the *current* schema version; the migrations in
:mod:`deepcontext.store.migrations` bring a database to it step by step.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import (
    JSON,
    BigInteger,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    Table,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import DateTime, TypeDecorator, TypeEngine

from deepcontext.clock import as_utc, from_epoch

__all__ = [
    "JSONType",
    "Tables",
    "UTCDateTime",
    "VectorType",
    "build_metadata",
    "is_time_column",
    "is_vector_column",
    "pk_type",
]

#: BIGINT ids; on SQLite an INTEGER PRIMARY KEY (the rowid) so autoincrement works
pk_type: TypeEngine[int] = BigInteger().with_variant(Integer, "sqlite")
#: JSON everywhere, JSONB on PostgreSQL
JSONType: TypeEngine[Any] = JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes. SQLite: REAL epoch seconds. PostgreSQL: timestamptz."""

    impl = Float
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(DateTime(timezone=True))
        return dialect.type_descriptor(Float())

    def process_bind_param(self, value: datetime | None, dialect: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected datetime, got {type(value).__name__}")
        value = as_utc(value)
        return value if dialect.name == "postgresql" else value.timestamp()

    def process_result_value(self, value: Any, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return as_utc(value)
        return from_epoch(float(value))


class VectorType(TypeDecorator[np.ndarray]):
    """float32 vectors: BLOB on SQLite, pgvector ``vector(dim)`` on PostgreSQL."""

    impl = LargeBinary
    cache_ok = True

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def load_dialect_impl(self, dialect: Any) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from pgvector.sqlalchemy import Vector

            return dialect.type_descriptor(Vector(self.dim))
        return dialect.type_descriptor(LargeBinary())

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        if value is None:
            return None
        arr = np.asarray(value, dtype=np.float32).reshape(-1)
        if dialect.name == "postgresql":
            return arr
        return arr.tobytes()

    def process_result_value(self, value: Any, dialect: Any) -> np.ndarray | None:
        if value is None:
            return None
        if isinstance(value, (bytes, bytearray, memoryview)):
            return np.frombuffer(bytes(value), dtype=np.float32)
        return np.asarray(value, dtype=np.float32)


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

    @property
    def user_tables(self) -> list[Table]:
        """Every table holding per-user rows, children first (safe delete order)."""
        return [
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
    from deepcontext.store.migrations import MIGRATIONS

    md = MetaData()
    for migration in MIGRATIONS:
        for step in migration.steps:
            step.model(md, dim)
    return md


def is_time_column(col: Any) -> bool:
    """True for columns holding aware datetimes (UTCDateTime)."""
    return isinstance(col.type, UTCDateTime)


def is_vector_column(col: Any) -> bool:
    """True for embedding columns (VectorType)."""
    return isinstance(col.type, VectorType)
