"""deepcq 0.3.0's module layout over :mod:`deepcontext.query`: code written for deepcq runs with
``import deepcontext.compat.deepcq as deepcq`` (or ``from deepcontext.compat.deepcq.core import
DeepCQ``), module by module: ``core``, ``schema``, ``result``, ``regex_gen``, ``intent``, ``tokens``,
``phrases``, ``anchors``, ``decay``, ``vocabulary``, ``calibration``, ``locate``, ``memory``
(``memory.state``, ``memory.session``, ``memory.store``) and ``integrations.ternary``. Every name is
deepcontext's own implementation; the deliberate differences from deepcq are listed on the docs page
"From deepcq". What deepcontext does not do (download prompt files) raises an error saying so.
"""

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
