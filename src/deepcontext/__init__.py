"""deepcontext: the memory layer for AI agents.

Hierarchical memory (working / short-term / long-term; semantic, episodic, procedural), extraction
of facts, entities and relations, a knowledge graph, hybrid retrieval (vector + keyword + graph,
fused by RRF), offline by default: SQLite file + local embeddings, no API key.

>>> from deepcontext import DeepContext          # async, primary
>>> from deepcontext import SyncDeepContext      # the same API, blocking

Names are imported lazily, so ``import deepcontext`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_EXPORTS: dict[str, str] = {
    "DeepContext": "deepcontext.core",
    "MemoryEngine": "deepcontext.core",  # DeepContext 0.1's name of the same class
    "SyncDeepContext": "deepcontext.sync",
    "DeepContextSettings": "deepcontext.settings",
    "EmbedderKind": "deepcontext.settings",
    "LLMProvider": "deepcontext.settings",
    "SearchConfig": "deepcontext.retrieve.config",
    "PRESETS": "deepcontext.retrieve.config",
    "ManualClock": "deepcontext.clock",
    "SystemClock": "deepcontext.clock",
    "Clock": "deepcontext.clock",
    # one request per operation
    "AddRequest": "deepcontext.services.requests",
    "ContextRequest": "deepcontext.services.requests",
    "EditRequest": "deepcontext.services.requests",
    "ImportRequest": "deepcontext.services.requests",
    "ListRequest": "deepcontext.services.requests",
    "SearchRequest": "deepcontext.services.requests",
    "UpdateRequest": "deepcontext.services.requests",
    # types
    "ActivityCall": "deepcontext.types",
    "ActivityHit": "deepcontext.types",
    "ActivityItem": "deepcontext.types",
    "ActivityPage": "deepcontext.types",
    "AddResponse": "deepcontext.types",
    "EntityInfo": "deepcontext.types",
    "EntityType": "deepcontext.types",
    "HistoryEntry": "deepcontext.types",
    "HistoryEvent": "deepcontext.types",
    "Memory": "deepcontext.types",
    "MemoryPage": "deepcontext.types",
    "MemorySearchResult": "deepcontext.types",
    "MemoryStatus": "deepcontext.types",
    "MemoryTier": "deepcontext.types",
    "MemoryType": "deepcontext.types",
    "Message": "deepcontext.types",
    "Provenance": "deepcontext.types",
    "RelationInfo": "deepcontext.types",
    "SearchResponse": "deepcontext.types",
    "ToolAction": "deepcontext.types",
    "Turn": "deepcontext.types",
    "DeletedMemoryInfo": "deepcontext.types",
    "GraphNeighbourInfo": "deepcontext.types",
    "LifecycleRun": "deepcontext.types",
    "MemoryListing": "deepcontext.types",
    "RowCounts": "deepcontext.types",
    "UpdatedMemory": "deepcontext.types",
    "UserInfo": "deepcontext.types",
    # errors
    "AuthError": "deepcontext.errors",
    "ConfigurationError": "deepcontext.errors",
    "ConversationNotFoundError": "deepcontext.errors",
    "CyclicGraphError": "deepcontext.errors",
    "DeepContextError": "deepcontext.errors",
    "DiskFullError": "deepcontext.errors",
    "EmbeddingError": "deepcontext.errors",
    "EntityNotFoundError": "deepcontext.errors",
    "ExtractionError": "deepcontext.errors",
    "LLMBackendError": "deepcontext.errors",
    "LLMError": "deepcontext.errors",
    "LLMRateLimitError": "deepcontext.errors",
    "LLMResponseError": "deepcontext.errors",
    "LLMStreamError": "deepcontext.errors",
    "LLMTimeoutError": "deepcontext.errors",
    "LLMValidationError": "deepcontext.errors",
    "LegacyDatabaseError": "deepcontext.errors",
    "LockTimeoutError": "deepcontext.errors",
    "MemoryNotFoundError": "deepcontext.errors",
    "MigrationError": "deepcontext.errors",
    "NotFoundError": "deepcontext.errors",
    "ReadOnlyDatabaseError": "deepcontext.errors",
    "StorageError": "deepcontext.errors",
    "TurnNotFoundError": "deepcontext.errors",
    "ValidationError": "deepcontext.errors",
    "WriteConflictError": "deepcontext.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from deepcontext.clock import Clock, ManualClock, SystemClock
    from deepcontext.core import DeepContext, MemoryEngine
    from deepcontext.errors import (
        AuthError,
        ConfigurationError,
        ConversationNotFoundError,
        CyclicGraphError,
        DeepContextError,
        DiskFullError,
        EmbeddingError,
        EntityNotFoundError,
        ExtractionError,
        LegacyDatabaseError,
        LLMBackendError,
        LLMError,
        LLMRateLimitError,
        LLMResponseError,
        LLMStreamError,
        LLMTimeoutError,
        LLMValidationError,
        LockTimeoutError,
        MemoryNotFoundError,
        MigrationError,
        NotFoundError,
        ReadOnlyDatabaseError,
        StorageError,
        TurnNotFoundError,
        ValidationError,
        WriteConflictError,
    )
    from deepcontext.retrieve.config import PRESETS, SearchConfig
    from deepcontext.services.requests import (
        AddRequest,
        ContextRequest,
        EditRequest,
        ImportRequest,
        ListRequest,
        SearchRequest,
        UpdateRequest,
    )
    from deepcontext.settings import DeepContextSettings, EmbedderKind, LLMProvider
    from deepcontext.sync import SyncDeepContext
    from deepcontext.types import (
        ActivityCall,
        ActivityHit,
        ActivityItem,
        ActivityPage,
        AddResponse,
        DeletedMemoryInfo,
        EntityInfo,
        EntityType,
        GraphNeighbourInfo,
        HistoryEntry,
        HistoryEvent,
        LifecycleRun,
        Memory,
        MemoryListing,
        MemoryPage,
        MemorySearchResult,
        MemoryStatus,
        MemoryTier,
        MemoryType,
        Message,
        Provenance,
        RelationInfo,
        RowCounts,
        SearchResponse,
        ToolAction,
        Turn,
        UpdatedMemory,
        UserInfo,
    )
