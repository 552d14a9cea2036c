"""Storage: one interface (:class:`Store`), two backends (SQLite default, PostgreSQL + pgvector).

This package and :mod:`deepcontext.store.interface` are the store's only door: code outside
``store/`` imports nothing else of it and never SQLAlchemy (``tests/test_architecture.py`` checks
it). The helpers below are re-exported lazily, so importing the interface stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from deepcontext.store.interface import (
    AddOutcome,
    AddPlan,
    CandidateRow,
    DecayChange,
    DecayRow,
    EntityUpsert,
    FactWrite,
    GroupWrite,
    HeldLock,
    MemoryChange,
    MemoryFilters,
    NewMemory,
    NewTurn,
    PurgeResult,
    RelationUpsert,
    Store,
)

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.activity import ActivityFilters, ActivityLog, ActivityRow
    from deepcontext.store.apikeys import ApiKey, ApiKeys
    from deepcontext.store.conversations import (
        NODE_SUMMARY_KEY,
        PART_KEY,
        REV_KEY,
        ConversationRows,
        ConversationWrite,
        KeyMemoryRow,
        NewKeyMemoryRow,
        NodeTurn,
        Stamp,
        TurnRow,
    )
    from deepcontext.store.inspection import (
        CleanupCounts,
        ConversationInfo,
        DagNode,
        DagWindow,
        DecayInput,
        EntityCount,
        EntityGraph,
        Inspection,
        RelationEdge,
        Scopes,
        UserSummary,
    )
    from deepcontext.store.locks import user_lock
    from deepcontext.store.metafilter import parse_metadata_filter
    from deepcontext.store.migrations import SLOT_KEY_PREFIX, latest_version
    from deepcontext.store.sql_transfer import IMPORTS_NAMESPACE
    from deepcontext.store.sqlparts import decode_cursor, encode_cursor
    from deepcontext.store.summaries import ConversationSummary, Summaries
    from deepcontext.store.ttlcache import TTLCache
    from deepcontext.store.urls import libpq_conninfo, shown_url, sqlite_path
    from deepcontext.store.v01 import V01_TABLES, is_v01_database, is_v01_schema, open_read_only, table_names

#: what the package re-exports from its modules, loaded on first use
_LAZY: dict[str, str] = {
    **dict.fromkeys(("ActivityFilters", "ActivityLog", "ActivityRow"), "activity"),
    **dict.fromkeys(
        ("ApiKey", "ApiKeys"),
        "apikeys",
    ),
    "user_lock": "locks",
    **dict.fromkeys(
        (
            "CleanupCounts",
            "ConversationInfo",
            "DagNode",
            "DagWindow",
            "DecayInput",
            "EntityCount",
            "EntityGraph",
            "Inspection",
            "RelationEdge",
            "Scopes",
            "UserSummary",
        ),
        "inspection",
    ),
    **dict.fromkeys(
        (
            "NODE_SUMMARY_KEY",
            "PART_KEY",
            "REV_KEY",
            "ConversationRows",
            "ConversationWrite",
            "KeyMemoryRow",
            "NewKeyMemoryRow",
            "NodeTurn",
            "Stamp",
            "TurnRow",
        ),
        "conversations",
    ),
    "parse_metadata_filter": "metafilter",
    **dict.fromkeys(("SLOT_KEY_PREFIX", "latest_version"), "migrations"),
    **dict.fromkeys(("decode_cursor", "encode_cursor"), "sqlparts"),
    "IMPORTS_NAMESPACE": "sql_transfer",
    **dict.fromkeys(("ConversationSummary", "Summaries"), "summaries"),
    "TTLCache": "ttlcache",
    **dict.fromkeys(("libpq_conninfo", "shown_url", "sqlite_path"), "urls"),
    **dict.fromkeys(("V01_TABLES", "is_v01_database", "is_v01_schema", "open_read_only", "table_names"), "v01"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"deepcontext.store.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "NODE_SUMMARY_KEY",
    "PART_KEY",
    "REV_KEY",
    "ConversationRows",
    "ConversationWrite",
    "KeyMemoryRow",
    "NewKeyMemoryRow",
    "NodeTurn",
    "Stamp",
    "TurnRow",
    "CleanupCounts",
    "ConversationInfo",
    "DagNode",
    "DagWindow",
    "DecayInput",
    "EntityCount",
    "EntityGraph",
    "Inspection",
    "RelationEdge",
    "Scopes",
    "UserSummary",
    "ConversationSummary",
    "Summaries",
    "ActivityFilters",
    "ActivityLog",
    "ActivityRow",
    "SLOT_KEY_PREFIX",
    "V01_TABLES",
    "decode_cursor",
    "encode_cursor",
    "is_v01_database",
    "is_v01_schema",
    "latest_version",
    "libpq_conninfo",
    "open_read_only",
    "open_store",
    "parse_metadata_filter",
    "recorded_embedder",
    "shown_url",
    "sqlite_path",
    "table_names",
    "user_lock",
    "AddOutcome",
    "AddPlan",
    "ApiKey",
    "ApiKeys",
    "CandidateRow",
    "DecayChange",
    "DecayRow",
    "EntityUpsert",
    "FactWrite",
    "GroupWrite",
    "HeldLock",
    "IMPORTS_NAMESPACE",
    "MemoryChange",
    "MemoryFilters",
    "NewMemory",
    "NewTurn",
    "PurgeResult",
    "RelationUpsert",
    "Store",
    "TTLCache",
]


def open_store(settings: DeepContextSettings, dim: int, *, tracer: Any = None) -> Store:
    """The backend ``settings.database_url`` names, chosen now (never at import)."""
    url = settings.resolved_database_url
    if settings.backend == "postgresql":
        from deepcontext.store.postgres import PostgresStore

        return PostgresStore(
            url,
            dim,
            pool_size=settings.db_pool_size,
            tracer=tracer,
            keyword_context_turns=settings.keyword_context_turns,
            index_build_memory_mb=settings.db_index_build_memory_mb,
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
