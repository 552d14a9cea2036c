"""The five memory tiers of :class:`~deepcontext.query.core.DeepCQ` and their storage backends."""

from deepcontext.query.tiers.backend import (
    JsonFileBackend,
    JsonValue,
    MemoryBackend,
    TierBackend,
    atomic_write_json,
)
from deepcontext.query.tiers.cache import SessionCache
from deepcontext.query.tiers.history import History, Turn
from deepcontext.query.tiers.state import AppState
from deepcontext.query.tiers.store import LongTermStore, ReferenceData

__all__ = [
    "AppState",
    "History",
    "JsonFileBackend",
    "JsonValue",
    "LongTermStore",
    "MemoryBackend",
    "ReferenceData",
    "SessionCache",
    "TierBackend",
    "Turn",
    "atomic_write_json",
]
