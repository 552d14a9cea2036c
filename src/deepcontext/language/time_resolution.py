"""What a time expression found by :mod:`deepcontext.language.timeparse` means: the values of its words
(months, weekdays, numbers, seasons, parts of the day, the Chinese expressions) and the date
arithmetic that turns a match, by its named groups, into the start of the period meant, its
granularity and whether it is a calendar date. It stands apart from the finding of expressions (the
patterns, the words that trigger them, the habits that are no date), which is timeparse's own.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

# nothing public: deepcontext.language.timeparse resolves its matches with these
__all__: list[str] = []


_MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_PARTS = {"morning": 9, "afternoon": 15, "evening": 19, "night": 20}

_ZH = {
    "昨天": ("day", -1),
    "今天": ("day", 0),
    "明天": ("day", 1),
    "前天": ("day", -2),
    "后天": ("day", 2),
    "上周": ("week", -1),
    "上个星期": ("week", -1),
    "上星期": ("week", -1),
    "这周": ("week", 0),
    "本周": ("week", 0),
    "这个星期": ("week", 0),
    "下周": ("week", 1),
    "下个星期": ("week", 1),
    "下星期": ("week", 1),
    "上个月": ("month", -1),
    "这个月": ("month", 0),
    "本月": ("month", 0),
    "下个月": ("month", 1),
    "去年": ("year", -1),
    "今年": ("year", 0),
    "明年": ("year", 1),
}


def _number(text: str) -> int:
    t = " ".join(text.lower().split())
    return int(t) if t.isdigit() else _NUMBERS.get(t, 1)


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    for day in (d.day, 30, 29, 28):
        try:
            return date(year, month, day)
        except ValueError:
            continue
    return date(year, month, 28)  # pragma: no cover - unreachable


def _at(d: date, tz: tzinfo | None, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(d.year, d.month, d.day, hour, minute, tzinfo=tz)


def _weekday(d0: date, wd: int, mode: str) -> date:
    if mode == "past":
        delta = (d0.weekday() - wd) % 7 or 7
        return d0 - timedelta(days=delta)
    if mode == "this":
        return d0 - timedelta(days=d0.weekday()) + timedelta(days=wd)
    delta = (wd - d0.weekday()) % 7 or 7
    return d0 + timedelta(days=delta)


def _season(d0: date, month: int, mode: str) -> date:
    starts = [date(y, month, 1) for y in range(d0.year - 2, d0.year + 2)]
    if mode == "last":
        done = [s for s in starts if _add_months(s, 3) <= d0]
        return done[-1]
    if mode == "next":
        return next(s for s in starts if s > d0)
    return min(starts, key=lambda s: abs((s - d0).days))


def _year_for(d0: date, month: int, day: int, tense: str) -> int:
    if tense == "past":
        return d0.year - 1 if (month, day) > (d0.month, d0.day) else d0.year
    # present or future: the next time that day comes ("my exam is on March 3")
    return d0.year + 1 if (month, day) < (d0.month, d0.day) else d0.year


def _resolve(m: re.Match[str], said_at: datetime, tense: str) -> tuple[datetime, str, bool]:
    """The datetime, granularity and explicitness of one match. Raises ValueError for impossible dates."""
    tz = said_at.tzinfo
    d0 = said_at.date()
    kind = m.lastgroup
    g = m.group
    if kind == "dby":
        return _at(d0 - timedelta(days=2), tz), "day", False
    if kind == "dat":
        return _at(d0 + timedelta(days=2), tz), "day", False
    if kind == "reld":
        w = g("reld_w").lower()
        shift = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1, "tmrw": 1}[w]
        part = (g("reld_p") or "").lower()
        if w == "tonight":
            part = "night"
        if part:
            return _at(d0 + timedelta(days=shift), tz, _PARTS[part]), "part_of_day", False
        return _at(d0 + timedelta(days=shift), tz), "day", False
    if kind == "lastnight":
        return _at(d0 - timedelta(days=1), tz, _PARTS["night"]), "part_of_day", False
    if kind == "thispart":
        return _at(d0, tz, _PARTS[g("thispart_p").lower()]), "part_of_day", False
    if kind in ("ago", "inn"):
        n = _number(g("ago_n") if kind == "ago" else g("in_n"))
        unit = (g("ago_u") if kind == "ago" else g("in_u")).lower().rstrip("s")
        sign = -1 if kind == "ago" else 1
        if unit in ("minute", "min"):
            return said_at + sign * timedelta(minutes=n), "minute", False
        if unit in ("hour", "hr"):
            return said_at + sign * timedelta(hours=n), "hour", False
        if unit == "day":
            return _at(d0 + sign * timedelta(days=n), tz), "day", False
        if unit == "week":
            return _at(d0 + sign * timedelta(days=7 * n), tz), "week", False
        if unit == "month":
            return _at(_add_months(d0, sign * n), tz), "month", False
        years = n * (10 if unit == "decade" else 1)
        return _at(_add_months(d0, sign * 12 * years), tz), "year", False
    if kind == "wday":
        wd = _WEEKDAYS[g("wd").lower()]
        mod = " ".join((g("wmod") or "").lower().split())
        if mod in ("last", "this past", "past"):
            mode = "past"
        elif mod in ("next", "this coming", "coming"):
            mode = "future"
        elif mod == "this":
            mode = "this"
        else:
            mode = "past" if tense == "past" else "future"
        d = _weekday(d0, wd, mode)
        part = (g("wpart") or "").lower()
        if part:
            return _at(d, tz, _PARTS[part]), "part_of_day", False
        return _at(d, tz), "day", False
    if kind in ("period", "wkend"):
        if kind == "wkend":
            mod, unit = ("last" if tense == "past" and d0.weekday() < 5 else "this"), "weekend"
        else:
            mod = " ".join(g("pmod").lower().split()).removeprefix("the ")
            unit = g("punit").lower()
        shift = -1 if mod in ("last", "past", "previous") else (1 if mod in ("next", "coming", "following") else 0)
        if unit == "week":
            monday = d0 - timedelta(days=d0.weekday())
            return _at(monday + timedelta(days=7 * shift), tz), "week", False
        if unit == "weekend":
            monday = d0 - timedelta(days=d0.weekday())
            return _at(monday + timedelta(days=5 + 7 * shift), tz), "weekend", False
        if unit == "month":
            return _at(_add_months(d0.replace(day=1), shift), tz), "month", False
        if unit == "year":
            return _at(date(d0.year + shift, 1, 1), tz), "year", False
        mode = "last" if shift < 0 else ("next" if shift > 0 else "this")
        return _at(_season(d0, _SEASONS[unit], mode), tz), "season", False
    if kind == "iso":
        d = date(int(g("iy")), int(g("im")), int(g("id")))
        if g("ih"):
            return _at(d, tz, int(g("ih")), int(g("imin"))), "minute", True
        return _at(d, tz), "day", True
    if kind == "slash":
        a, b, y = int(g("sa")), int(g("sb")), int(g("sy"))
        if y < 100:
            y += 2000
        month, day = (b, a) if a > 12 else (a, b)
        return _at(date(y, month, day), tz), "day", True
    if kind in ("dmy", "mdy"):
        month = _MONTHS[(g("m1") or g("m2")).lower()]
        day = int(g("d1") or g("d2"))
        ys = g("y1") or g("y2")
        year = int(ys) if ys else _year_for(d0, month, day, tense)
        return _at(date(year, month, day), tz), "day", True
    if kind == "my":
        return _at(date(int(g("y3")), _MONTHS[g("m3").lower()], 1), tz), "month", True
    if kind == "monly":
        month = _MONTHS[g("m4").lower()]
        mod = g("mmod").lower()
        y = d0.year
        if mod in ("last", "since") or (mod in ("in", "early", "late", "mid", "during") and tense == "past"):
            if month > d0.month or (mod == "last" and month == d0.month):
                y -= 1
        elif month < d0.month or (mod == "next" and month == d0.month):  # present or future: the next one
            y += 1
        return _at(date(y, month, 1), tz), "month", False
    if kind == "season":
        return _at(date(int(g("syear")), _SEASONS[g("sname").lower()], 1), tz), "season", True
    if kind == "year":
        return _at(date(int(g("yr")), 1, 1), tz), "year", True
    # zh
    unit, shift = _ZH[g("zh")]
    if unit == "day":
        return _at(d0 + timedelta(days=shift), tz), "day", False
    if unit == "week":
        return _at(d0 - timedelta(days=d0.weekday()) + timedelta(days=7 * shift), tz), "week", False
    if unit == "month":
        return _at(_add_months(d0.replace(day=1), shift), tz), "month", False
    return _at(date(d0.year + shift, 1, 1), tz), "year", False
