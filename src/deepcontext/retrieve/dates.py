"""The time a query names ("in July", "last week", "8 May 2023"), as a window memories fall in."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from deepcontext.language.timeparse import resolve_time

__all__ = ["DateWindow", "query_window"]

_MONTH_WORD = re.compile(
    r"\b("
    + "|".join(sorted({m.lower() for m in [*calendar.month_name[1:], *calendar.month_abbr[1:]]}, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b\d{4}\b")
_SPAN = {
    "minute": timedelta(days=1), "hour": timedelta(days=1), "part_of_day": timedelta(days=1), "day": timedelta(days=1),
    "week": timedelta(days=7), "weekend": timedelta(days=2), "season": timedelta(days=92), "year": timedelta(days=366),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DateWindow:
    """``[start, end)``; for a month named without a year (``month``), that month of any year."""

    start: datetime
    end: datetime
    month: int | None = None

    def contains(self, *whens: datetime | None) -> bool:
        """Whether any of ``whens`` falls in the window."""
        for w in whens:
            if w is None:
                continue
            if self.month is not None:
                if w.month == self.month:
                    return True
            elif self.start <= w < self.end:
                return True
        return False


def query_window(query: str, now: datetime) -> DateWindow | None:
    """The first time expression of ``query`` resolved against ``now`` (past tense: questions ask
    about what was said), or None. A month named without a year matches that month of any year:
    the year the query means is unknown, and a memory's month is what the question tells apart."""
    m = resolve_time(query, now, tense="past")
    if m is None or m.since:
        return None
    start = m.when
    if m.granularity == "month":
        end = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
        if _MONTH_WORD.search(m.text) and not _YEAR.search(m.text):
            return DateWindow(start, end, month=start.month)
        return DateWindow(start, end)
    start = start.replace(hour=0, minute=0, second=0, microsecond=0)
    return DateWindow(start, start + _SPAN.get(m.granularity, timedelta(days=1)))
