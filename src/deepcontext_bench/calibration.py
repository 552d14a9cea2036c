"""How well search scores are calibrated on LoCoMo, and the refit of their constants.

Every result of every question is one observation: its features (see
:mod:`deepcontext.retrieve.calibration`), the score search returned, and whether it is relevant (it
cites an evidence turn of the question). Each question is asked twice: of its own conversation and
of another one, where nothing is relevant (users also ask what was never said; half the queries is
the assumption). The report holds three reliability diagrams: the scores as returned (the committed
constants), the leave-one-conversation-out fit (each conversation's questions scored by constants
fitted on questions and memories of the others: the figure to trust) and the constants fitted on
everything (what ``--refit`` writes); the first two also for each half, with the share of first
results each ``min_score`` keeps.
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

__all__ = ["MIN_SCORES", "PENALTIES", "CalibrationData", "calibration_report", "write_constants"]

#: L2 penalties tried by the leave-one-conversation-out cross-validation
PENALTIES = (0.1, 0.3, 1.0, 3.0, 10.0)
#: thresholds whose effect on first results the report shows
MIN_SCORES = (0.1, 0.2, 0.3, 0.5)


@dataclass
class CalibrationData:
    """Observations of one run: one row per returned result."""

    conversation: list[int] = field(default_factory=list)
    #: the conversation whose memories were searched
    haystack: list[int] = field(default_factory=list)
    query: list[int] = field(default_factory=list)
    position: list[int] = field(default_factory=list)
    features: list[list[float]] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    relevant: list[bool] = field(default_factory=list)
    _queries: int = 0

    def observe(
        self,
        conversation: int,
        results: Sequence[Any],
        cited: Sequence[Iterable[str]],
        evidence: Iterable[str],
        haystack: int | None = None,
    ) -> None:
        """One question's results (``MemorySearchResult``) and the dialogue ids each cites;
        ``haystack``: the conversation searched, if not the question's own."""
        ev = set(evidence) if haystack is None or haystack == conversation else set()
        self._queries += 1
        for pos, (r, turns) in enumerate(zip(results, cited, strict=True), start=1):
            self.conversation.append(conversation)
            self.haystack.append(conversation if haystack is None else haystack)
            self.position.append(pos)
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


def _first_results(scores: np.ndarray, position: np.ndarray, own: np.ndarray) -> list[dict[str, Any]]:
    """For each ``min_score``: the share of first results kept, for answerable and off-topic queries."""
    first = position == 1
    a, b = scores[first & own], scores[first & ~own]
    return [
        {
            "min_score": bar,
            "answerable": float(np.mean(a >= bar)) if len(a) else None,
            "off_topic": float(np.mean(b >= bar)) if len(b) else None,
        }
        for bar in MIN_SCORES
    ]


def _diagrams(scores: np.ndarray, y: np.ndarray, position: np.ndarray, own: np.ndarray, bins: int) -> dict[str, Any]:
    out = reliability(scores.tolist(), y.tolist(), bins)
    if not own.all():
        out["answerable"] = reliability(scores[own].tolist(), y[own].tolist(), bins)
        out["off_topic"] = reliability(scores[~own].tolist(), y[~own].tolist(), bins)
        out["first_results_kept"] = _first_results(scores, position, own)
    return out


def calibration_report(data: CalibrationData, *, bins: int = 10, penalties: Sequence[float] = PENALTIES) -> dict[str, Any]:
    """Reliability of the returned scores, of the leave-one-conversation-out fit and of the fit on
    everything, with the constants of the last. The L2 penalty is the one of ``penalties`` with the
    lowest cross-validated log loss."""
    x = np.asarray(data.features, dtype=float).reshape(-1, len(FEATURES))
    y = np.asarray(data.relevant, dtype=float)
    conv = np.asarray(data.conversation)
    hay = np.asarray(data.haystack)
    own = conv == hay
    query = np.asarray(data.query)
    position = np.asarray(data.position)
    out: dict[str, Any] = {"features": list(FEATURES), "returned": _diagrams(np.asarray(data.score), y, position, own, bins)}
    if not len(y) or not 0 < y.sum() < len(y):
        return out
    convs = sorted(set(data.conversation))
    l2 = penalties[0]
    if len(convs) >= 2:
        by_penalty: dict[float, np.ndarray] = {}
        for pen in penalties:
            cv = np.empty(len(y))
            for c in convs:
                held = conv == c
                # nothing of the held-out conversation is learnt from: not its questions, nor its memories
                train = (conv != c) & (hay != c)
                model = fit_logistic(x[train], y[train], l2=pen)
                cv[held] = _scores(model, x[held], query[held])
            by_penalty[pen] = cv
        losses = {pen: reliability(cv.tolist(), y.tolist(), bins)["log_loss"] for pen, cv in by_penalty.items()}
        l2 = min(penalties, key=lambda pen: losses[pen])
        out["cross_validated"] = _diagrams(by_penalty[l2], y, position, own, bins)
        out["log_loss_by_penalty"] = {str(pen): losses[pen] for pen in penalties}
    full = fit_logistic(x, y, l2=l2)
    out["fitted"] = _diagrams(_scores(full, x, query), y, position, own, bins)
    out["constants"] = full.to_json() | {"l2": l2}
    return out


def write_constants(constants: dict[str, Any], about: dict[str, Any], path: Path = CONSTANTS_PATH) -> Path:
    """Write fitted constants where search reads them."""
    path.write_text(json.dumps({**about, **constants}, indent=2) + "\n", encoding="utf-8")
    return path
