"""Intent-aware memory querying: deepcq's public API over deepcontext's own implementation.

``from deepcontext.query import DeepCQ, MemorySchema, locate`` works where deepcq code said
``from deepcq import ...``; docs/migration/deepcq.md lists where behaviour differs.
Names are imported lazily: importing this package is cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = [
    "TIER_NAMES",
    "AppState",
    "CalibrationReport",
    "Candidate",
    "DeepCQ",
    "EntryMatch",
    "History",
    "JsonFileBackend",
    "LabeledExample",
    "LangChainMemoryAdapter",
    "LocateStats",
    "LongTermStore",
    "MemoryBackend",
    "MemorySchema",
    "OptimizationMetrics",
    "PromptLibrary",
    "QueryResult",
    "Recency",
    "ReferenceData",
    "ScoreExplanation",
    "SectionMatch",
    "SemanticScoring",
    "SessionCache",
    "SynonymMap",
    "ThresholdStats",
    "TierBackend",
    "ToolContextProvider",
    "available_packs",
    "calibrate",
    "exponential_decay",
    "linear_decay",
    "load_pack",
    "locate",
    "locate_with_stats",
    "no_decay",
    "score_sections",
    "score_sections_detailed",
    "select_sections",
]

_EXPORTS: dict[str, str] = {
    "TIER_NAMES": "schema",
    "MemorySchema": "schema",
    "DeepCQ": "core",
    "QueryResult": "result",
    "OptimizationMetrics": "result",
    "ScoreExplanation": "result",
    "EntryMatch": "result",
    "SectionMatch": "result",
    "AppState": "tiers",
    "SessionCache": "tiers",
    "History": "tiers",
    "LongTermStore": "tiers",
    "ReferenceData": "tiers",
    "TierBackend": "tiers",
    "MemoryBackend": "tiers",
    "JsonFileBackend": "tiers",
    "locate": "locator",
    "locate_with_stats": "locator",
    "Candidate": "locator",
    "LocateStats": "locator",
    "Recency": "recency",
    "no_decay": "recency",
    "exponential_decay": "recency",
    "linear_decay": "recency",
    "SynonymMap": "synonyms",
    "load_pack": "synonyms",
    "available_packs": "synonyms",
    "LabeledExample": "calibration",
    "ThresholdStats": "calibration",
    "CalibrationReport": "calibration",
    "calibrate": "calibration",
    "SemanticScoring": "semantic",
    "score_sections": "intent",
    "score_sections_detailed": "intent",
    "select_sections": "intent",
    "ToolContextProvider": "integrations",
    "LangChainMemoryAdapter": "integrations",
    "PromptLibrary": "integrations",
}

if TYPE_CHECKING:
    from deepcontext.query.calibration import CalibrationReport, LabeledExample, ThresholdStats, calibrate
    from deepcontext.query.core import DeepCQ
    from deepcontext.query.integrations import LangChainMemoryAdapter, PromptLibrary, ToolContextProvider
    from deepcontext.query.intent import score_sections, score_sections_detailed, select_sections
    from deepcontext.query.locator import Candidate, LocateStats, locate, locate_with_stats
    from deepcontext.query.recency import Recency, exponential_decay, linear_decay, no_decay
    from deepcontext.query.result import EntryMatch, OptimizationMetrics, QueryResult, ScoreExplanation, SectionMatch
    from deepcontext.query.schema import TIER_NAMES, MemorySchema
    from deepcontext.query.semantic import SemanticScoring
    from deepcontext.query.synonyms import SynonymMap, available_packs, load_pack
    from deepcontext.query.tiers import (
        AppState,
        History,
        JsonFileBackend,
        LongTermStore,
        MemoryBackend,
        ReferenceData,
        SessionCache,
        TierBackend,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'deepcontext.query' has no attribute {name!r}")
    value = getattr(import_module(f"deepcontext.query.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
