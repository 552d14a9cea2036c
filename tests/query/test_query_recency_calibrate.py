"""Recency decay functions and threshold calibration."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deepcontext.clock import ManualClock
from deepcontext.errors import ValidationError
from deepcontext.query import (
    DeepCQ,
    LabeledExample,
    MemorySchema,
    Recency,
    calibrate,
    exponential_decay,
    linear_decay,
    no_decay,
)


def test_decay_functions() -> None:
    assert no_decay(1e9) == 1.0
    half = exponential_decay(10.0)
    assert (half(0), half(10), half(20)) == (1.0, 0.5, 0.25)
    lin = linear_decay(100.0)
    assert (lin(0), lin(25), lin(100), lin(500)) == (1.0, 0.75, 0.0, 0.0)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "10", True])
def test_decay_parameters_must_be_positive_numbers(bad: object) -> None:
    with pytest.raises(ValidationError):
        exponential_decay(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        linear_decay(bad)  # type: ignore[arg-type]


def test_recency_multiplier() -> None:
    r = Recency(1000.0, exponential_decay(100.0))
    assert r.multiplier(1100.0) == 0.5
    assert r.multiplier(900.0) == 1.0  # a future timestamp counts as age 0
    when = datetime(2025, 1, 1, tzinfo=UTC)
    r = Recency(when, linear_decay(3600))
    assert r.timestamp == when.timestamp()
    assert r.multiplier(clock=ManualClock(datetime(2025, 1, 1, 0, 30, tzinfo=UTC))) == 0.5
    assert Recency(0.0, lambda age: 7.0).multiplier(1.0) == 1.0  # clamped to [0, 1]
    with pytest.raises(ValidationError):
        Recency("yesterday")  # type: ignore[arg-type]


def _build() -> DeepCQ:
    cq = DeepCQ(MemorySchema(sections=["metrics", "errors", "people"]))
    cq.state.set("metrics", "[metrics]\nCPU: 78%\nmemory 4GB\n")
    cq.state.set("errors", "[errors]\ndisk full on db-2, cpu throttled\n")
    cq.state.set("people", "[people]\nAnna is the on-call engineer\n")
    return cq


EXAMPLES = [
    LabeledExample(_build, "cpu and memory load", {"metrics"}),
    LabeledExample(_build, "disk errors", {"errors"}),
    LabeledExample(_build, "who is on call", {"people"}),
]


def test_calibrate_sweeps_thresholds() -> None:
    report = calibrate(EXAMPLES, thresholds=[0.2, 0.5, 0.9])
    assert [s.threshold for s in report.stats] == [0.2, 0.5, 0.9]
    low, mid, _high = report.stats
    assert (low.true_positives, low.false_positives, low.false_negatives) == (3, 1, 0)  # errors also has "cpu"
    assert (mid.precision, mid.recall) == (1.0, 1.0)
    assert report.best is mid
    assert "<- best" in report.summary()


def test_calibrate_with_min_precision() -> None:
    report = calibrate(EXAMPLES, thresholds=[0.2, 0.5], min_precision=0.9)
    assert report.constraint_met and report.best.threshold == 0.5
    report = calibrate(EXAMPLES, thresholds=[0.2], min_precision=0.99)
    assert not report.constraint_met and "WARNING" in report.summary()


def test_calibrate_rejects_bad_input() -> None:
    with pytest.raises(ValidationError):
        calibrate([])
    with pytest.raises(ValidationError):
        calibrate(EXAMPLES, thresholds=[])
    with pytest.raises(ValidationError):
        calibrate([LabeledExample(_build, "x", {"nope"})])
