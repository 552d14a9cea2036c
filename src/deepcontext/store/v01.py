"""DeepContext 0.1's SQLite files, recognised before a store opens them (and read by the import in
:mod:`deepcontext.services.legacy`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from deepcontext.errors import ValidationError

__all__ = ["V01_TABLES", "is_v01_database", "is_v01_schema", "open_read_only", "table_names"]

#: tables that only a 0.1 database has together (ours has ``relations`` and ``dc_meta``)
V01_TABLES = frozenset({"memories", "relationships"})


@contextmanager
def open_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to an existing SQLite file (ValidationError when there is none)."""
    if not path.is_file():
        raise ValidationError(f"no such file: {str(path)!r}", field="path")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    with closing(conn):
        yield conn


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def is_v01_schema(names: set[str]) -> bool:
    """Whether a database with these tables was written by DeepContext 0.1."""
    return V01_TABLES <= names and "dc_meta" not in names


def is_v01_database(path: str | Path) -> bool:
    """Whether ``path`` is a SQLite file written by DeepContext 0.1."""
    try:
        with open_read_only(Path(path)) as conn:
            names = table_names(conn)
    except (ValidationError, sqlite3.DatabaseError):
        return False
    return is_v01_schema(names)
