"""Pick ``confidence_threshold`` from labelled examples (deepcq's ``calibration.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError

if TYPE_CHECKING:
    from deepcontext.query.core import DeepCQ

__all__ = ["DEFAULT_THRESHOLDS", "CalibrationReport", "LabeledExample", "ThresholdStats", "calibrate"]

DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(round(0.02 * i, 2) for i in range(1, 26))  # 0.02..0.50


@dataclass
class LabeledExample:
    """One (memory state, query, expected sections) case."""

    build: Callable[[], DeepCQ]  # returns a populated DeepCQ for this case
    query: str
    expected_sections: set[str]


@dataclass
class ThresholdStats:
    threshold: float
    precision: float
    recall: float
    f1: float
    true_positives: int
    false_positives: int
    false_negatives: int


@dataclass
class CalibrationReport:
    stats: list[ThresholdStats]  # one per threshold, ascending
    best: ThresholdStats
    #: False when min_precision was set but no threshold reached it (best is then the F1-best)
    constraint_met: bool = True
    min_precision: float | None = None

    def summary(self) -> str:
        """A table: threshold | precision | recall | f1 | tp | fp | fn."""
        lines = [
            "threshold | precision | recall |   f1   |  tp |  fp |  fn",
            "----------+-----------+--------+--------+-----+-----+-----",
        ]
        for s in self.stats:
            marker = "  <- best" if s is self.best else ""
            lines.append(
                f"{s.threshold:9.2f} | {s.precision:9.3f} | {s.recall:6.3f} | {s.f1:6.3f} "
                f"| {s.true_positives:3d} | {s.false_positives:3d} | {s.false_negatives:3d}{marker}"
            )
        if self.min_precision is not None and not self.constraint_met:
            lines.append(
                f"WARNING: no threshold reached min_precision={self.min_precision}; "
                f"best is the unconstrained F1-best threshold ({self.best.threshold:.2f})."
            )
        return "\n".join(lines)


def _stats(threshold: float, tp: int, fp: int, fn: int) -> ThresholdStats:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ThresholdStats(threshold, round(precision, 4), round(recall, 4), round(f1, 4), tp, fp, fn)


def calibrate(
    examples: Sequence[LabeledExample],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    min_precision: float | None = None,
) -> CalibrationReport:
    """Sweep ``thresholds`` over labelled examples; precision/recall/F1 per threshold.

    Each example is built and queried once and its raw ``intent`` scores re-thresholded per
    step (the schema's own threshold and fallback are ignored). Counts are micro-averaged.
    ``best`` is the highest-F1 threshold (ties: the higher threshold); with ``min_precision``, the
    highest-recall threshold meeting it (ties: higher), else the F1-best with
    ``constraint_met=False``.
    """
    if not examples:
        raise ValidationError("calibrate() needs at least one LabeledExample", field="examples")
    if not thresholds:
        raise ValidationError("calibrate() needs at least one threshold", field="thresholds")
    for t in thresholds:
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
            raise ValidationError(f"threshold {t!r} is not a number", field="thresholds")
    if min_precision is not None and not (0.0 <= min_precision <= 1.0):
        raise ValidationError("min_precision must be in [0, 1]", field="min_precision")

    scored: list[tuple[dict[str, float], set[str]]] = []
    for i, example in enumerate(examples):
        cq = example.build()
        unknown = set(example.expected_sections) - set(cq.schema.sections)
        if unknown:
            raise ValidationError(
                f"example {i} ({example.query!r}) expects sections not in its schema: {sorted(unknown)}",
                field=f"examples[{i}].expected_sections",
            )
        result = cq.query(example.query)
        scored.append((result.intent, set(example.expected_sections)))

    stats: list[ThresholdStats] = []
    for t in sorted(thresholds):
        tp = fp = fn = 0
        for intent, expected in scored:
            included = {s for s, score in intent.items() if score >= t}
            tp += len(included & expected)
            fp += len(included - expected)
            fn += len(expected - included)
        stats.append(_stats(t, tp, fp, fn))

    f1_best = max(stats, key=lambda s: (s.f1, s.threshold))
    if min_precision is None:
        return CalibrationReport(stats=stats, best=f1_best)
    qualifying = [s for s in stats if s.true_positives and s.precision >= min_precision]
    if not qualifying:
        return CalibrationReport(stats=stats, best=f1_best, constraint_met=False, min_precision=min_precision)
    best = max(qualifying, key=lambda s: (s.recall, s.threshold))
    return CalibrationReport(stats=stats, best=best, min_precision=min_precision)
