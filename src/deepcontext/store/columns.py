"""Column types shared by the schema and its migrations: ids, JSON, aware UTC times and vectors,
each mapped to the best type of each backend (SQLite: epoch seconds and BLOBs; PostgreSQL:
``timestamptz``, JSONB and pgvector)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import JSON, BigInteger, Float, Integer, LargeBinary
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import DateTime, TypeDecorator, TypeEngine

from deepcontext.clock import as_utc, from_epoch

__all__ = [
    "JSONType",
    "UTCDateTime",
    "VectorType",
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


def is_time_column(col: Any) -> bool:
    """True for columns holding aware datetimes (UTCDateTime)."""
    return isinstance(col.type, UTCDateTime)


def is_vector_column(col: Any) -> bool:
    """True for embedding columns (VectorType)."""
    return isinstance(col.type, VectorType)
