"""How well search scores are calibrated on LoCoMo, and the refit of their constants.

Every result of every question is one observation: its features (see
:mod:`deepcontext.retrieve.calibration`), the score search returned, and whether it is relevant (it
cites an evidence turn of the question). The report holds three reliability diagrams: the scores
as returned (the committed constants), the leave-one-conversation-out fit (each conversation scored
by constants fitted on the others: the figure to trust) and the constants fitted on every
conversation (what ``--refit`` writes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from deepcontext.retrieve.calibration import (
    CONSTANTS_PATH,
    FEATURES,
    Calibration,
    feature_vector,
    fit_logistic,
    non_increasing,
    reliability,
)

__all__ = ["PENALTIES", "CalibrationData", "calibration_report", "write_constants"]

#: L2 penalties tried by the leave-one-conversation-out cross-validation
PENALTIES = (1.0, 3.0, 10.0, 30.0)


@dataclass
class CalibrationData:
    """Observations of one run: one row per returned result."""

    conversation: list[int] = field(default_factory=list)
    query: list[int] = field(default_factory=list)
    features: list[list[float]] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    relevant: list[bool] = field(default_factory=list)
    _queries: int = 0

    def observe(self, conversation: int, results: Sequence[Any], cited: Sequence[Iterable[str]], evidence: Iterable[str]) -> None:
        """One question's results (``MemorySearchResult``) and the dialogue ids each cites."""
        ev = set(evidence)
        self._queries += 1
        for pos, (r, turns) in enumerate(zip(results, cited, strict=True), start=1):
            self.conversation.append(conversation)
            self.query.append(self._queries)
            self.features.append(feature_vector(pos, r.legs, r.similarity))
            self.score.append(float(r.score))
            self.relevant.append(bool(ev & set(turns)))


def _scores(model: Calibration, x: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The model's scores, made non-increasing within each query as search does."""
    p = model.probabilities(x)
    out = np.empty_like(p)
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], len(query)], strict=True):
        out[a:b] = non_increasing(p[a:b].tolist())
    return out


def calibration_report(data: CalibrationData, *, bins: int = 10, penalties: Sequence[float] = PENALTIES) -> dict[str, Any]:
    """Reliability of the returned scores, of the leave-one-conversation-out fit and of the fit on
    everything, with the constants of the last. The L2 penalty is the one of ``penalties`` with the
    lowest cross-validated log loss."""
    x = np.asarray(data.features, dtype=float).reshape(-1, len(FEATURES))
    y = np.asarray(data.relevant, dtype=float)
    conv = np.asarray(data.conversation)
    query = np.asarray(data.query)
    out: dict[str, Any] = {"features": list(FEATURES), "returned": reliability(data.score, data.relevant, bins)}
    if not len(y) or not 0 < y.sum() < len(y):
        return out
    convs = sorted(set(data.conversation))
    l2 = penalties[0]
    if len(convs) >= 2:
        by_penalty: dict[float, dict[str, Any]] = {}
        for pen in penalties:
            cv = np.empty(len(y))
            for c in convs:
                held = conv == c
                model = fit_logistic(x[~held], y[~held], l2=pen)
                cv[held] = _scores(model, x[held], query[held])
            by_penalty[pen] = reliability(cv.tolist(), data.relevant, bins)
        l2 = min(penalties, key=lambda pen: by_penalty[pen]["log_loss"])
        out["cross_validated"] = by_penalty[l2]
        out["log_loss_by_penalty"] = {str(pen): by_penalty[pen]["log_loss"] for pen in penalties}
    full = fit_logistic(x, y, l2=l2)
    out["fitted"] = reliability(_scores(full, x, query).tolist(), data.relevant, bins)
    out["constants"] = full.to_json() | {"l2": l2}
    return out


def write_constants(constants: dict[str, Any], about: dict[str, Any], path: Path = CONSTANTS_PATH) -> Path:
    """Write fitted constants where search reads them."""
    path.write_text(json.dumps({**about, **constants}, indent=2) + "\n", encoding="utf-8")
    return path
