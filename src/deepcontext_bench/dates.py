"""Dates: the extractor's own time parser (:mod:`deepcontext.language.timeparse`) beside
``dateparser`` on labelled sentences, each said at a known moment.

A case holds a sentence with one time expression, when it was said, its tense, and the period it
means (a date and a granularity: the day, the ISO week, the weekend, the month, the season or the
year that holds it). A parser is right when the date it resolves falls inside that period, so
conventions that differ only inside a period ("last month" as its first day or as a month ago) count
the same. Part ``rules`` holds the sentences the time parser's unit tests use; part ``new`` was
written for this comparison, after the rules. ``dateparser`` is optional (the ``bench`` extra): when
it is not installed only the time parser is measured.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from deepcontext.language.timeparse import resolve_time

__all__ = ["DEFAULT_DATES", "DateCase", "PARSERS", "load_cases", "run_dates"]

DEFAULT_DATES = Path(__file__).parent / "data" / "dates.jsonl"

#: a parser: (sentence, said at, tense) -> the date it means, or None
Parser = Callable[[str, datetime, str], date | None]


@dataclass(frozen=True)
class DateCase:
    part: str
    text: str
    said_at: datetime
    tense: str
    expect: date
    granularity: str

    def period(self) -> tuple[date, date]:
        """The first day of the period meant and the day after it."""
        d, g = self.expect, self.granularity
        if g == "week":
            start = d - timedelta(days=d.weekday())
            return start, start + timedelta(days=7)
        if g == "weekend":
            start = d - timedelta(days=max(0, d.weekday() - 5))
            return start, start + timedelta(days=2)
        if g == "month":
            start = d.replace(day=1)
            return start, (start + timedelta(days=32)).replace(day=1)
        if g == "season":
            start = d.replace(day=1)
            end = start
            for _ in range(3):
                end = (end + timedelta(days=32)).replace(day=1)
            return start, end
        if g == "year":
            return date(d.year, 1, 1), date(d.year + 1, 1, 1)
        return d, d + timedelta(days=1)


def load_cases(path: Path = DEFAULT_DATES) -> list[DateCase]:
    cases = []
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            cases.append(
                DateCase(r["part"], r["text"], datetime.fromisoformat(r["said_at"]), r["tense"],
                         date.fromisoformat(r["expect"]), r["granularity"])
            )  # fmt: skip
    return cases


def _timeparse(text: str, said_at: datetime, tense: str) -> date | None:
    got = resolve_time(text, said_at, tense)
    return None if got is None else got.when.date()


def _dateparser() -> Parser | None:
    try:
        from dateparser.search import search_dates  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None

    def parse(text: str, said_at: datetime, tense: str) -> date | None:
        prefer = {"past": "past", "future": "future"}.get(tense, "current_period")
        settings: Any = {"RELATIVE_BASE": said_at.replace(tzinfo=None), "PREFER_DATES_FROM": prefer}
        found: Any = search_dates(text, languages=["en"], settings=settings)
        # the longest match: its search also reads short words as dates ("We" as Wednesday)
        return max(found, key=lambda f: len(f[0]))[1].date() if found else None

    return parse


def PARSERS() -> dict[str, Parser]:  # noqa: N802 - read as a table of what is installed
    """The parsers installed here, by name."""
    out: dict[str, Parser] = {"timeparse": _timeparse}
    dp = _dateparser()
    if dp is not None:
        out["dateparser"] = dp
    return out


def run_dates(path: Path = DEFAULT_DATES) -> dict[str, object]:
    """Per parser and part: cases right, their share, the cases given a date outside the period
    (worse than none: a memory would carry it), and the mean time per sentence (µs); with each
    case's answers."""
    cases = load_cases(path)
    parsers = PARSERS()
    rows = []
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for name, parse in parsers.items():
        parse(cases[0].text, cases[0].said_at, cases[0].tense)  # first-call set-up out of the timing
        for part in sorted({c.part for c in cases}):
            mine = [c for c in cases if c.part == part]
            right, wrong, took = 0, 0, 0.0
            for c in mine:
                t0 = time.perf_counter()
                got = parse(c.text, c.said_at, c.tense)
                took += time.perf_counter() - t0
                lo, hi = c.period()
                ok = got is not None and lo <= got < hi
                right += ok
                wrong += got is not None and not ok
                rows.append({"parser": name, "part": part, "text": c.text, "expect": f"{c.granularity} of {c.expect}",
                             "got": got.isoformat() if got else None, "ok": ok})  # fmt: skip
            summary.setdefault(name, {})[part] = {
                "cases": len(mine), "right": right, "share": round(right / len(mine), 3), "wrong_date": wrong,
                "us_per_sentence": round(1e6 * took / len(mine), 1),
            }  # fmt: skip
    return {"benchmark": "dates", "parsers": list(parsers), "summary": summary, "cases": rows}
