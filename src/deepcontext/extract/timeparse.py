"""Resolve time expressions in a sentence against the moment it was said.

``resolve_time("I went to Paris last week", said_at, tense="past")`` returns a :class:`TimeMention`
whose ``when`` is the start of the period meant (a week its Monday, a season its first month,
northern hemisphere; parts of a day fixed hours), in ``said_at``'s timezone, with its granularity.
It reads relative days and periods ("yesterday", "last weekend", "3 weeks ago", "in 2 months"),
weekdays (``last`` / ``next`` / ``this`` Monday; a bare "on Monday" follows the tense; a habit such as
"every Monday", "on Thursday nights" or "in March every year" is no date and is ignored), calendar dates (a date without a year takes the year that fits the tense) and
a few Chinese expressions (昨天, 上周, 下个月...). The first expression in the sentence wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from deepcontext.extract.gazetteer import words

__all__ = ["TimeMention", "find_calendar_dates", "resolve_time"]


@dataclass(frozen=True, slots=True)
class TimeMention:
    """A resolved time expression."""

    when: datetime  # start of the period meant, timezone-aware (said_at's zone)
    granularity: str  # minute | hour | part_of_day | day | week | weekend | month | season | year
    text: str  # the expression as written
    start: int
    end: int
    explicit: bool  # a calendar date ("8 May 2023", "in 2019") rather than a relative one
    since: bool  # introduced by "since" (a start, not an event)


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

_M = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_MFULL = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_N = (
    r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty"
    r"|a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several)"
)
_WD = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_Y = r"(?:19|20)\d{2}"


# The expressions, in small groups; a group only runs when the sentence has one of its trigger words
# (a time word, a weekday, a month, a digit), which keeps the common case (no time at all) cheap.
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.VERBOSE)


_RE_RELDAY = _rx(r"""
    (?P<dby>\bthe\s+day\s+before\s+yesterday\b)
  | (?P<dat>\bthe\s+day\s+after\s+tomorrow\b)
  | (?P<reld>\b(?P<reld_w>yesterday|today|tomorrow|tmrw|tonight)\b
        (?:\s+(?P<reld_p>morning|afternoon|evening|night)\b)?)
  | (?P<lastnight>\blast\s+night\b)
  | (?P<thispart>\bthis\s+(?P<thispart_p>morning|afternoon|evening)\b)
""")
_RE_COUNT = _rx(rf"""
    (?P<ago>\b(?P<ago_n>{_N})\s+(?P<ago_u>minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|decades?)\s+ago\b)
  | (?P<inn>\bin\s+(?:just\s+|about\s+|another\s+)?(?P<in_n>{_N})\s+
        (?P<in_u>minutes?|hours?|days?|weeks?|months?|years?)\b(?:'?\s+time)?)
""")
_RE_WEEKDAY = _rx(rf"""
    (?P<wday>\b(?:(?P<wmod>last|next|this\s+coming|this\s+past|this|coming|past|on)\s+)?(?P<wd>{_WD})\b(?!'?s\b)
        (?:\s+(?P<wpart>morning|afternoon|evening|night)\b)?)
""")
_RE_PERIOD = _rx(rf"""
    (?P<period>\b(?P<pmod>last|next|this|the\s+past|the\s+previous|the\s+coming|the\s+following|the\s+next
                         |the\s+last|past|previous|coming)
        \s+(?P<punit>week|weekend|month|year|summer|winter|spring|fall|autumn)\b)
  | (?P<wkend>\b(?:over|on|at|during)\s+the\s+weekend\b)
  | (?P<season>\b(?:(?P<smod>in\s+the|during\s+the|in|over\s+the)\s+)?(?P<sname>spring|summer|fall|autumn|winter)
        \s+(?:of\s+)?(?P<syear>{_Y})\b)
""")
_RE_MONTH = _rx(rf"""
    (?P<dmy>\b(?:the\s+)?(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+(?P<m1>{_M})\b\.?
        (?:,?\s+(?P<y1>{_Y})\b)?)
  | (?P<mdy>\b(?P<m2>{_M})\.?\s+(?:the\s+)?(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])\b(?:,?\s+(?P<y2>{_Y})\b)?)
  | (?P<my>\b(?P<m3>{_M})\.?,?\s+(?:of\s+)?(?P<y3>{_Y})\b)
  | (?P<monly>\b(?P<mmod>in|last|next|this|since|during|until|by|early|late|mid)\s+(?:early\s+|late\s+|mid-?)?
        (?P<m4>{_MFULL})\b(?!\.?,?\s+(?:of\s+)?\d))
""")
_RE_NUMERIC = _rx(rf"""
    (?P<iso>\b(?P<iy>{_Y})-(?P<im>\d{{1,2}})-(?P<id>\d{{1,2}})(?:[T\s](?P<ih>\d{{1,2}}):(?P<imin>\d{{2}}))?\b)
  | (?P<slash>\b(?P<sa>\d{{1,2}})/(?P<sb>\d{{1,2}})/(?P<sy>{_Y}|\d{{2}})\b)
  | (?P<year>\b(?P<ymod>in|since|during|back\s+in|from|of|by|until|around|circa|early|late|mid)[\s-]+
        (?P<yr>{_Y})\b(?!s|'s|\s*-\s*\d))
""")
_RE_ZH = re.compile(
    "(?P<zh>昨天|今天|明天|前天|后天|上周|上个星期|上星期|这周|本周|这个星期|下周|下个星期|下星期|上个月|这个月|本月|下个月"
    "|去年|今年|明年)"
)

_CLOCK_RE = re.compile(
    r"\s*(?:at|around|by|@)\s+(?:(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ap>am|pm|a\.m\.|p\.m\.)"
    r"|(?P<h24>\d{1,2}):(?P<mi24>\d{2})|(?P<noon>noon|midday|midnight))",
    re.IGNORECASE,
)
# Habits, not dates: "every other Monday", "every Monday and Friday" (the second weekday too), "Thursday
# nights", "on Tuesday and Thursday evenings", "in March every year", "I usually swim on Friday".
_WD_LIST = rf"(?:{_WD}(?:\s+(?:morning|afternoon|evening|night))?\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&)\s+))"
_EVERY_LIST_RE = re.compile(
    rf"\b(?:every|each|most|all)\s+(?:(?:other|single|second|third|alternate)\s+)?{_WD_LIST}*$", re.IGNORECASE
)
_PLURAL_PART_RE = re.compile(
    rf"(?:\s*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&)\s+){_WD})*\s+(?:mornings|afternoons|evenings|nights)\b",
    re.IGNORECASE,
)
_CLAUSE_RE = re.compile(r"[,;:.!?]|\b(?:but|and|then|when|while|because)\b", re.IGNORECASE)
_EVERY_AFTER_RE = re.compile(r"\s*,?\s*(?:every|each)\s+(?:year|month|week|time)\b", re.IGNORECASE)
_EVERY_BEFORE_RE = re.compile(r"\b(?:every|each)\s+(?:year|month|week)\s*,?\s*$", re.IGNORECASE)
_FREQUENCY_RE = re.compile(
    r"\b(?:usually|always|normally|typically|generally|often|sometimes|regularly|tend\s+to|used\s+to)\b", re.IGNORECASE
)
_SINCE_RE = re.compile(r"\bsince\s+(?:the\s+)?$", re.IGNORECASE)
_LETTERS_RE = re.compile(r"[a-z]+")
_DIGIT_RE = re.compile(r"\d")
_ZH_TRIGGER_RE = re.compile(r"[昨今明前后上这本下去][天周个星月年]")
_W_RELDAY = words("yesterday today tomorrow tmrw tonight night morning afternoon evening")
_W_UNITS = words("minute minutes min mins hour hours hr hrs day days week weeks month months year years decade decades")
_W_PERIOD = words("week weekend month year summer winter spring fall autumn")
_W_MONTH = frozenset(_MONTHS)
_W_WEEKDAY = frozenset(_WEEKDAYS)


def _candidates(text: str) -> list[re.Pattern[str]]:
    """The expression groups worth running on ``text`` (by its words; digits; Chinese time words)."""
    words = set(_LETTERS_RE.findall(text.lower()))
    out: list[re.Pattern[str]] = []
    if not words.isdisjoint(_W_RELDAY):
        out.append(_RE_RELDAY)
    if "ago" in words or ("in" in words and not words.isdisjoint(_W_UNITS)):
        out.append(_RE_COUNT)
    if not words.isdisjoint(_W_WEEKDAY):
        out.append(_RE_WEEKDAY)
    if not words.isdisjoint(_W_PERIOD):
        out.append(_RE_PERIOD)
    if not words.isdisjoint(_W_MONTH):
        out.append(_RE_MONTH)
    if _DIGIT_RE.search(text):
        out.append(_RE_NUMERIC)
    if not text.isascii() and _ZH_TRIGGER_RE.search(text):
        out.append(_RE_ZH)
    return out


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


def _valid(m: re.Match[str], text: str) -> bool:
    kind = m.lastgroup
    if kind == "wday":
        mod = (m.group("wmod") or "").lower()
        if mod in ("", "on"):
            if _EVERY_LIST_RE.search(text, 0, m.start()) or _PLURAL_PART_RE.match(text, m.end("wd")):
                return False
            clause = _CLAUSE_RE.split(text[: m.start()])[-1]
            if _FREQUENCY_RE.search(clause):  # "I usually swim on Friday", not "I usually run, but on Friday I swam"
                return False
        if _EVERY_AFTER_RE.match(text, m.end()):
            return False
    elif kind == "monly" and (_EVERY_AFTER_RE.match(text, m.end()) or _EVERY_BEFORE_RE.search(text, 0, m.start())):
        return False  # "in March every year"
    if kind == "monly":
        word = m.group("m4")
        if word.lower() in ("may", "march") and word[0].islower():
            return False  # "in may", "last march" written lower-case: too ambiguous
    elif kind in ("mdy", "dmy", "my"):
        word = m.group("m1") or m.group("m2") or m.group("m3")
        if word.lower() in ("may", "mar", "march") and word[0].islower():
            return False
    return True


def resolve_time(text: str, said_at: datetime, tense: str = "present") -> TimeMention | None:
    """The first time expression in ``text`` resolved against ``said_at`` (``None`` when there is none).

    ``tense`` ("past", "present" or "future") disambiguates bare weekdays and dates without a year.
    A naive ``said_at`` is taken as UTC.
    """
    if not text:
        return None
    candidates = _candidates(text)
    if not candidates:
        return None
    if said_at.tzinfo is None:
        said_at = said_at.replace(tzinfo=UTC)
    best: tuple[re.Match[str], datetime, str, bool] | None = None
    for rx in candidates:
        for m in rx.finditer(text):
            if best is not None and m.start() > best[0].start():
                break
            if not _valid(m, text):
                continue
            try:
                when, granularity, explicit = _resolve(m, said_at, tense)
            except (ValueError, OverflowError, StopIteration, IndexError):
                continue
            if best is None or m.start() < best[0].start() or m.end() > best[0].end():
                best = (m, when, granularity, explicit)
            break
    if best is None:
        return None
    m, when, granularity, explicit = best
    end = m.end()
    if granularity in ("day", "part_of_day"):
        c = _CLOCK_RE.match(text, end)
        if c:
            if c.group("noon"):
                hour, minute = (0 if c.group("noon").lower() == "midnight" else 12), 0
            elif c.group("h24"):
                hour, minute = int(c.group("h24")), int(c.group("mi24"))
            else:
                hour, minute = int(c.group("h")) % 12, int(c.group("mi") or 0)
                if c.group("ap").lower().startswith("p"):
                    hour += 12
            if hour < 24 and minute < 60:
                when = when.replace(hour=hour, minute=minute)
                granularity = "minute"
                end = c.end()
    kind = m.lastgroup
    since = bool(_SINCE_RE.search(text, max(0, m.start() - 12), m.start())) or (
        (kind == "year" and m.group("ymod").lower() == "since") or (kind == "monly" and m.group("mmod").lower() == "since")
    )
    return TimeMention(
        when=when,
        granularity=granularity,
        text=text[m.start() : end].strip(),
        start=m.start(),
        end=end,
        explicit=explicit,
        since=since,
    )


_DATE_KINDS = frozenset({"iso", "slash", "dmy", "mdy", "my", "year", "season"})


def find_calendar_dates(text: str) -> list[tuple[int, int, str]]:
    """Spans of calendar dates and years in ``text`` (for DATE entities): ``(start, end, surface)``.

    Relative expressions ("yesterday", "last week") are not calendar dates and are not returned. For
    "in 2019" only "2019" is returned.
    """
    out: list[tuple[int, int, str]] = []
    for rx in _candidates(text):
        if rx is not _RE_PERIOD and rx is not _RE_MONTH and rx is not _RE_NUMERIC:
            continue
        for m in rx.finditer(text):
            kind = m.lastgroup
            if kind not in _DATE_KINDS or not _valid(m, text):
                continue
            if kind == "year":
                s, e = m.span("yr")
            elif kind == "dmy" and m.group(0).lower().startswith("the"):
                s, e = m.start("d1"), m.end()
            elif kind == "season":
                s, e = m.start("sname"), m.end()
            else:
                s, e = m.span()
            surface = text[s:e].strip().rstrip(".,")
            if any(s < b and a < s + len(surface) for a, b, _ in out):
                continue
            out.append((s, s + len(surface), surface))
    out.sort()
    return out
