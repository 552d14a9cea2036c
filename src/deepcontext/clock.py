"""Time, made controllable: every component asks a :class:`Clock` instead of calling ``datetime.now``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, overload, runtime_checkable

__all__ = ["EARLIEST", "LATEST", "Clock", "ManualClock", "SystemClock", "as_utc", "from_epoch", "to_epoch"]

#: the times deepcontext takes and keeps (UTC): years 1 to 9998. Ending a year before datetime's
#: last one keeps every stored time representable, as epoch seconds (a float near year 10000 rounds
#: up into it) and through the date arithmetic of reads (a window of days or a year after it)
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock for tests and simulations: it only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = as_utc(start) if start else datetime(2025, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = as_utc(when)

    def advance(self, delta: timedelta | None = None, **kwargs: float) -> datetime:
        step = delta if delta is not None else timedelta(**kwargs)
        with self._lock:
            self._now = self._now + step
            return self._now


def as_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def to_epoch(dt: datetime | None) -> float | None:
    return None if dt is None else as_utc(dt).timestamp()


@overload
def from_epoch(ts: float) -> datetime: ...


@overload
def from_epoch(ts: None) -> None: ...


def from_epoch(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, tz=UTC)
