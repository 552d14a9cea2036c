"""Storage: one interface (:class:`Store`), two backends (SQLite default, PostgreSQL + pgvector)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deepcontext.store.interface import (
    AddOutcome,
    AddPlan,
    EntityUpsert,
    MemoryChange,
    MemoryFilters,
    NewMemory,
    NewTurn,
    RelationUpsert,
    Store,
)

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings

__all__ = [
    "AddOutcome",
    "AddPlan",
    "EntityUpsert",
    "MemoryChange",
    "MemoryFilters",
    "NewMemory",
    "NewTurn",
    "RelationUpsert",
    "Store",
    "open_store",
]


def open_store(settings: DeepContextSettings, dim: int, *, tracer: Any = None) -> Store:
    """The backend ``settings.database_url`` names, chosen now (never at import)."""
    url = settings.resolved_database_url
    if settings.backend == "postgresql":
        from deepcontext.store.postgres import PostgresStore

        return PostgresStore(
            url, dim, pool_size=settings.db_pool_size, tracer=tracer, keyword_context_turns=settings.keyword_context_turns
        )
    from deepcontext.store.sqlite import SQLiteStore

    return SQLiteStore(
        url,
        dim,
        busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        vector_cache_max_rows=settings.vector_cache_max_rows,
        vector_index_min_rows=settings.vector_index_min_rows,
        vector_index_files=settings.vector_index_files,
        tracer=tracer,
        keyword_context_turns=settings.keyword_context_turns,
    )
