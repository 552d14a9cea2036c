"""What the repositories of a SQL store use of it.

A store (:class:`~deepcontext.store.sql.SQLStore` and its backends) is made of repositories: the
``sql_*`` modules (reads of memories, turns, the graph and provenance; the writer; adds; key-values;
import and export) and the backends' ``sqlite_*`` / ``postgres_*`` ones (keyword and vector
indexes, faster reads). Each takes its store as a *context* typed by one of the protocols below or
by a protocol of its own built from them, naming the few things it uses: to read a repository you
read its protocol, not the store, and no repository imports the store that owns it. The type
checker verifies where the store hands itself to a repository that it provides them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import ColumnElement, Connection

if TYPE_CHECKING:
    from deepcontext.store.interface import MemoryFilters
    from deepcontext.store.schema import Tables

__all__ = ["Lookups", "Raw", "Reads", "Writes"]


class Reads(Protocol):
    """The tables and a connection to read them (the thread's pinned one inside ``reading``)."""

    @property
    def t(self) -> Tables: ...

    def connection(self) -> AbstractContextManager[Connection]: ...


class Lookups(Reads, Protocol):
    """Reads of one user's rows: by primary key, by id lists, under the search filters and scopes."""

    def owner_clause(self, col: Any) -> Any:
        """The user_id column as used in lookups by primary key (see ``SQLStore.owner_clause``)."""

    def ids_in(self, col: Any, ids: Sequence[int]) -> Any:
        """``col IN (ids)``, bound as cheaply as the backend can."""

    def filter_clause(self, filters: MemoryFilters, now: datetime) -> list[ColumnElement[bool]]: ...

    def scope_clause(self, scope: tuple[str | None, str | None]) -> list[ColumnElement[bool]]: ...


class Writes(Reads, Protocol):
    """Transactions that change a user's rows: the user's lock and revision, upserts, caches."""

    def transaction(self, begin: Callable[[], Any] | None = None) -> AbstractContextManager[Connection]: ...

    def upsert(self, table: Any) -> Any: ...

    def lock_user(self, conn: Connection, user_id: str) -> None: ...

    def bump_user(self, conn: Connection, user_id: str, now: datetime, *, consolidation_due: bool = False) -> int: ...

    def forget_user_caches(self, user_id: str) -> None: ...


class Raw(Protocol):
    """SQL text on the DBAPI connection, for the statements SQLAlchemy's compiler makes slow."""

    def raw(self, conn: Connection, sql: str, params: Any = (), **options: Any) -> Any: ...
