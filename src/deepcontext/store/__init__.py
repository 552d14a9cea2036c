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
    "recorded_embedder",
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
        reserve_bytes=int(settings.sqlite_reserve_mb * 1024 * 1024),
        vector_cache_max_rows=settings.vector_cache_max_rows,
        vector_index_min_rows=settings.vector_index_min_rows,
        vector_index_files=settings.vector_index_files,
        tracer=tracer,
        keyword_context_turns=settings.keyword_context_turns,
    )


def recorded_embedder(settings: DeepContextSettings) -> tuple[str, int] | None:
    """The embedder (model id, dimensions) the database's vectors were made with, read without
    loading any embedder; None when there is no database yet or it has recorded none."""
    from deepcontext.store.sql import SQLStore

    store = open_store(settings, 1)  # the size matters to writes of vectors only
    try:
        if getattr(store, "path", None) is not None and not store.path.exists():  # type: ignore[attr-defined]
            return None  # opening it would create it
        return store.recorded_embedder() if isinstance(store, SQLStore) else None
    finally:
        store.close()
