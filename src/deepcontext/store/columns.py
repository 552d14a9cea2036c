"""Column types shared by the schema and its migrations: ids, JSON, aware UTC times and vectors,
each mapped to the best type of each backend (SQLite: epoch seconds and BLOBs; PostgreSQL:
``timestamptz``, JSONB and pgvector)."""

from __future__ import annotations

import logging
import math
import threading
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import JSON, BigInteger, Float, Integer, LargeBinary
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import DateTime, TypeDecorator, TypeEngine

from deepcontext.clock import EARLIEST, LATEST, as_utc

__all__ = [
    "JSONType",
    "UTCDateTime",
    "VectorType",
    "is_time_column",
    "is_vector_column",
    "pk_type",
    "stored_time",
]

log = logging.getLogger("deepcontext.store")

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
        return stored_time(value)


def stored_time(value: Any) -> datetime:
    """A time stored as epoch seconds. Inputs are held to years 1 to 9998, but an older version
    stored a time from the last microseconds of year 9999 as a float that rounds into year 10000
    (and a file may be edited by hand): such a value reads as the nearest time in range, with a
    warning, so one row never breaks every read of its user."""
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, ValueError, OSError, TypeError):
        return _out_of_range(value)


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _out_of_range(value: Any) -> datetime:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    nearest = LATEST if seconds > 0 else EARLIEST  # NaN and text: the first time
    key = repr(value)[:40]
    with _warned_lock:  # once per value and process: a search may read the row many times
        fresh = key not in _warned and len(_warned) < 1000
        _warned.add(key)
    if fresh:
        log.warning("a stored time (%s epoch seconds) lies outside years 1 to 9998: read as %s", key, nearest.isoformat())
    return nearest


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
