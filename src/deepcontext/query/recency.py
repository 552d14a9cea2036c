"""Recency decay: optional time-weighting of a section's or chunk's score (deepcq's ``decay.py``).

``DeepCQ.query(q, recency={"status": Recency(ts, exponential_decay(3600))}, now=...)`` multiplies
the section's score by ``decay_fn(now - ts)``. Timestamps are epoch seconds (a ``datetime`` is
accepted too). With ``now=None`` the time comes from the :class:`~deepcontext.clock.Clock` given
(the system clock by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from deepcontext.clock import Clock, SystemClock, to_epoch
from deepcontext.errors import ValidationError

__all__ = ["DecayFn", "Recency", "current_time", "exponential_decay", "linear_decay", "no_decay"]

#: age in seconds -> multiplier in [0, 1]
DecayFn = Callable[[float], float]


def no_decay(age_seconds: float) -> float:
    """Always 1.0: age does not matter."""
    return 1.0


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ValidationError(f"{name} must be a positive number of seconds, got {value!r}", field=name)
    return float(value)


def exponential_decay(half_life_seconds: float) -> DecayFn:
    """Multiplier halves every ``half_life_seconds`` of age."""
    half_life = _positive(half_life_seconds, "half_life_seconds")

    def _decay(age_seconds: float) -> float:
        return float(0.5 ** (max(0.0, age_seconds) / half_life))

    return _decay


def linear_decay(max_age_seconds: float) -> DecayFn:
    """Multiplier falls linearly from 1 to 0 at ``max_age_seconds`` and stays at 0."""
    max_age = _positive(max_age_seconds, "max_age_seconds")

    def _decay(age_seconds: float) -> float:
        return max(0.0, 1.0 - max(0.0, age_seconds) / max_age)

    return _decay


def current_time(now: float | datetime | None, clock: Clock | None = None) -> float:
    """``now`` as epoch seconds; the clock's time (system clock by default) when ``now`` is None."""
    if now is None:
        return (clock or SystemClock()).now().timestamp()
    if isinstance(now, datetime):
        return float(to_epoch(now))  # type: ignore[arg-type]
    if isinstance(now, bool) or not isinstance(now, int | float):
        raise ValidationError(f"now must be epoch seconds or a datetime, got {type(now).__name__}", field="now")
    return float(now)


@dataclass
class Recency:
    """A section's (or chunk's) timestamp and how its score decays with age."""

    timestamp: float | datetime
    decay_fn: DecayFn = no_decay

    def __post_init__(self) -> None:
        if isinstance(self.timestamp, datetime):
            self.timestamp = float(to_epoch(self.timestamp))  # type: ignore[arg-type]
        elif isinstance(self.timestamp, bool) or not isinstance(self.timestamp, int | float):
            raise ValidationError("Recency.timestamp must be epoch seconds or a datetime", field="timestamp")
        if not callable(self.decay_fn):
            raise ValidationError("Recency.decay_fn must be callable", field="decay_fn")

    def multiplier(self, now: float | datetime | None = None, clock: Clock | None = None) -> float:
        """The decay multiplier at ``now`` (age below zero counts as zero), clamped to [0, 1]."""
        age = max(0.0, current_time(now, clock) - current_time(self.timestamp))
        value = float(self.decay_fn(age))
        return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0
