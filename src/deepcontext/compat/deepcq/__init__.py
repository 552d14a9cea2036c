"""deepcq 0.3.0's module layout over :mod:`deepcontext.query`: code written for deepcq runs with
``import deepcontext.compat.deepcq as deepcq`` (or this package registered as ``deepcq``), module by
module (``deepcq.schema``, ``deepcq.decay``, ``deepcq.vocabulary``, ``deepcq.tokens``,
``deepcq.phrases``, ``deepcq.memory.session``, ``deepcq.locate``, ``deepcq.intent``,
``deepcq.calibration``, ``deepcq.anchors``). Every name is deepcontext's own implementation; the
deliberate differences from deepcq are listed in the README ("For deepcq users")."""

from __future__ import annotations

from deepcontext.query import (
    TIER_NAMES,
    AppState,
    CalibrationReport,
    Candidate,
    DeepCQ,
    History,
    LabeledExample,
    LongTermStore,
    MemorySchema,
    OptimizationMetrics,
    QueryResult,
    Recency,
    ReferenceData,
    ScoreExplanation,
    SessionCache,
    SynonymMap,
    ThresholdStats,
    calibrate,
    exponential_decay,
    linear_decay,
    load_pack,
    locate,
    no_decay,
)

__version__ = "0.3.0"

__all__ = [
    "TIER_NAMES",
    "AppState",
    "CalibrationReport",
    "Candidate",
    "DeepCQ",
    "History",
    "LabeledExample",
    "LongTermStore",
    "MemorySchema",
    "OptimizationMetrics",
    "QueryResult",
    "Recency",
    "ReferenceData",
    "ScoreExplanation",
    "SessionCache",
    "SynonymMap",
    "ThresholdStats",
    "calibrate",
    "exponential_decay",
    "linear_decay",
    "load_pack",
    "locate",
    "no_decay",
]
