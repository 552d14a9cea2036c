"""The kinds of migration step: each has a *model* (what it adds to the SQLAlchemy description of
the schema) and an *apply* (the DDL it runs on a database of a given dialect)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, Index, MetaData, text
from sqlalchemy.engine import Connection

from deepcontext.errors import MigrationError

__all__ = ["AddColumn", "AddIndex", "CreateTables", "Migration", "RawSQL", "SqliteAutoincrement", "Step"]


class Step(ABC):
    def model(self, md: MetaData, dim: int) -> None:  # noqa: B027 - optional
        """Add this step's tables / columns / indexes to the schema description."""

    @abstractmethod
    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        """Run the DDL on ``conn``; ``md`` is the description *after* :meth:`model`."""


@dataclass
class CreateTables(Step):
    define: Callable[[MetaData, int], None]
    _names: list[str] = field(default_factory=list)

    def model(self, md: MetaData, dim: int) -> None:
        before = set(md.tables)
        self.define(md, dim)
        self._names = [n for n in md.tables if n not in before]

    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        for name in self._names:
            md.tables[name].create(conn)


@dataclass
class AddColumn(Step):
    table: str
    column: Callable[[int], Column]  # type: ignore[type-arg]

    def model(self, md: MetaData, dim: int) -> None:
        md.tables[self.table].append_column(self.column(dim))

    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        from alembic.migration import MigrationContext
        from alembic.operations import Operations

        op = Operations(MigrationContext.configure(conn))
        op.add_column(self.table, self.column(dim))


@dataclass
class AddIndex(Step):
    table: str
    name: str
    #: column names, each optionally followed by " DESC"
    columns: list[str]
    #: a partial index's condition (SQL both backends read alike)
    where: str | None = None

    def model(self, md: MetaData, dim: int) -> None:
        table = md.tables[self.table]
        partial: dict[str, Any] = {}
        if self.where is not None:
            partial = {"sqlite_where": text(self.where), "postgresql_where": text(self.where)}

        def column(spec: str) -> Any:
            name, _, order = spec.partition(" ")
            return table.c[name].desc() if order.upper() == "DESC" else table.c[name]

        Index(self.name, *(column(c) for c in self.columns), **partial)

    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        next(i for i in md.tables[self.table].indexes if i.name == self.name).create(conn)


@dataclass
class RawSQL(Step):
    """Dialect-specific DDL (virtual tables, extensions, special indexes)."""

    sqlite: Callable[[int], list[str]] | None = None
    postgresql: Callable[[int], list[str]] | None = None

    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        make = self.sqlite if conn.dialect.name == "sqlite" else self.postgresql
        for stmt in make(dim) if make else []:
            conn.execute(text(stmt))


@dataclass
class SqliteAutoincrement(Step):
    """SQLite: rebuild ``tables`` with ``id INTEGER PRIMARY KEY AUTOINCREMENT``, so an id is never
    given again once its row is deleted (without it SQLite hands out max(id) + 1, the id of the
    newest row deleted). PostgreSQL's sequences never reuse a value: nothing to do there. Needs
    foreign keys off (the store's migration transaction on SQLite): dropping the old table must
    not cascade."""

    tables: tuple[str, ...]

    def model(self, md: MetaData, dim: int) -> None:
        for name in self.tables:
            md.tables[name].dialect_options["sqlite"]["autoincrement"] = True

    def apply(self, conn: Connection, md: MetaData, dim: int) -> None:
        if conn.dialect.name != "sqlite":
            return
        for name in self.tables:
            ddl = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).scalar_one()
            if "AUTOINCREMENT" in ddl.upper():
                continue
            rebuilt = re.sub(r"\bid INTEGER NOT NULL,", "id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,", ddl, count=1)
            rebuilt = re.sub(r",\s*PRIMARY KEY \(id\)", "", rebuilt, count=1)
            if rebuilt.count("AUTOINCREMENT") != 1 or "PRIMARY KEY (id)" in rebuilt:
                raise MigrationError(f"unexpected definition of table {name}: {ddl}")
            extras = [
                r[0]
                for r in conn.exec_driver_sql(
                    "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL",
                    (name,),
                )
            ]
            tmp = f"{name}_rebuilt"
            conn.exec_driver_sql(rebuilt.replace(f"CREATE TABLE {name} (", f"CREATE TABLE {tmp} (", 1))
            conn.exec_driver_sql(f"INSERT INTO {tmp} SELECT * FROM {name}")
            conn.exec_driver_sql(f"DROP TABLE {name}")
            conn.exec_driver_sql(f"ALTER TABLE {tmp} RENAME TO {name}")
            for stmt in extras:
                conn.exec_driver_sql(stmt)
        if conn.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
            raise MigrationError("a foreign key broke while rebuilding tables; nothing was changed")


@dataclass
class Migration:
    version: int
    name: str
    steps: list[Step]
