"""Search scores a person can read: each result's probability of being relevant.

The ranking decides the order; this module then maps every result to a calibrated relevance in
[0, 1] from features that mean the same in every query: its position, its rank in each leg and in
the fusion, and its cosine with the query. A logistic model whose constants live in
``calibration.json`` (fitted by ``deepcontext bench locomo --calibration --refit``) turns them into
a probability; within a query the probabilities are then made non-increasing in rank order (pool
adjacent violators), so a result never scores above one ranked before it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from deepcontext.retrieve.search import Hit

__all__ = [
    "CONSTANTS_PATH",
    "FEATURES",
    "Calibration",
    "calibrate",
    "default_calibration",
    "feature_vector",
    "fit_logistic",
    "non_increasing",
    "reliability",
]

CONSTANTS_PATH = Path(__file__).with_name("calibration.json")

#: what the model reads of a result (every one defined for any query, whatever its wording)
FEATURES = (
    "similarity",  # cosine of the query and the result (0 when the vector leg did not find it)
    "no_vector",  # 1 when the vector leg did not find it
    "log_position",  # log of the 1-based position in the returned order
    "log_position_sq",  # its square: precision falls fast over the first few positions, then slowly
    "rr_vector",  # 1 / rank in each leg, 0 when absent
    "rr_keyword",
    "rr_graph",
    "log_fused",  # log of the rank in the fusion, before rescoring
)


def feature_vector(position: int, legs: Mapping[str, int], similarity: float | None) -> list[float]:
    """The features of one result, in :data:`FEATURES` order."""

    def rr(leg: str) -> float:
        r = legs.get(leg)
        return 1.0 / r if r else 0.0

    fused = legs.get("fused") or position
    return [
        float(similarity) if similarity is not None else 0.0,
        1.0 if similarity is None else 0.0,
        math.log(max(position, 1)),
        math.log(max(position, 1)) ** 2,
        rr("vector"),
        rr("keyword"),
        rr("graph"),
        math.log(max(fused, 1)),
    ]


@dataclass(frozen=True)
class Calibration:
    """A logistic model over :data:`FEATURES`: p = 1 / (1 + exp(-(intercept + weights · x)))."""

    intercept: float
    weights: tuple[float, ...]

    def probability(self, features: Sequence[float]) -> float:
        """One result's (plain Python: a search scores at most 100, numpy's set-up costs more)."""
        z = self.intercept + sum(w * f for w, f in zip(self.weights, features, strict=True))
        return 1.0 / (1.0 + math.exp(-min(40.0, max(-40.0, z))))

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        z = self.intercept + rows @ np.asarray(self.weights)
        return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0))))

    def to_json(self) -> dict[str, Any]:
        return {"intercept": self.intercept, "weights": dict(zip(FEATURES, self.weights, strict=True))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        w = data["weights"]
        return cls(intercept=float(data["intercept"]), weights=tuple(float(w.get(f, 0.0)) for f in FEATURES))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The committed constants (``calibration.json`` beside this module)."""
    return Calibration.from_json(json.loads(CONSTANTS_PATH.read_text(encoding="utf-8")))


def calibrate(hits: list[Hit], model: Calibration | None = None) -> list[Hit]:
    """Set each hit's ``score`` to its calibrated relevance, non-increasing in the given order."""
    if not hits:
        return hits
    model = model or default_calibration()
    raw = [model.probability(feature_vector(i, h.legs, h.similarity)) for i, h in enumerate(hits, start=1)]
    for h, p in zip(hits, non_increasing(raw), strict=True):
        h.score = p
    return hits


def non_increasing(values: Sequence[float]) -> list[float]:
    """The closest non-increasing sequence in least squares (pool adjacent violators): a run of
    values that rise against the order shares their mean."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    out: list[float] = []
    for s, c in blocks:
        out += [min(1.0, max(0.0, s / c))] * int(c)
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iterations: int = 100) -> Calibration:
    """Logistic regression by Newton's method with an L2 penalty on the weights (not the intercept)."""
    n, d = x.shape
    xb = np.hstack([np.ones((n, 1)), x])
    w = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -40.0, 40.0)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1.0 - p))[:, None]).T @ xb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return Calibration(intercept=float(w[0]), weights=tuple(float(v) for v in w[1:]))


def reliability(predicted: Sequence[float], relevant: Sequence[bool], bins: int = 10) -> dict[str, Any]:
    """Reliability diagram over equal-width bins of the predicted score: per bin the count, mean
    prediction and observed share relevant; with the Brier score, expected calibration error
    (count-weighted |observed - predicted|) and log loss."""
    p = np.clip(np.asarray(predicted, dtype=float), 0.0, 1.0)
    y = np.asarray(relevant, dtype=float)
    n = len(p)
    rows = []
    ece = 0.0
    which = np.minimum((p * bins).astype(int), bins - 1)
    for b in range(bins):
        mask = which == b
        c = int(mask.sum())
        if not c:
            continue
        pred, obs = float(p[mask].mean()), float(y[mask].mean())
        ece += c / n * abs(obs - pred)
        rows.append({"bin": f"{b / bins:.1f}-{(b + 1) / bins:.1f}", "count": c, "predicted": pred, "observed": obs})
    eps = 1e-9
    return {
        "results": n,
        "relevant": int(y.sum()),
        "brier": float(np.mean((p - y) ** 2)) if n else None,
        "ece": ece if n else None,
        "log_loss": float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))) if n else None,
        "bins": rows,
    }
