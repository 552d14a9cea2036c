"""Resolve time expressions in a sentence against the moment it was said.

``resolve_time("I went to Paris last week", said_at, tense="past")`` returns a :class:`TimeMention`
whose ``when`` is the start of the period meant (a week its Monday, a season its first month,
northern hemisphere; parts of a day fixed hours), in ``said_at``'s timezone, with its granularity.
It reads relative days and periods ("yesterday", "last weekend", "3 weeks ago", "in 2 months"),
weekdays (``last`` / ``next`` / ``this`` Monday; a bare "on Monday" follows the tense; a habit such as
"every Monday", "on Thursday nights" or "in March every year" is no date and is ignored), calendar dates (a date without a year takes the year that fits the tense) and
a few Chinese expressions (昨天, 上周, 下个月...). The first expression in the sentence wins. What
each expression found means (its words' values, the date arithmetic) is
:mod:`deepcontext.language.time_resolution`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from deepcontext.language.gazetteer import words
from deepcontext.language.time_resolution import _MONTHS, _WEEKDAYS, _resolve

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
# a weekday naming a kind of thing, not a day: "too many Sunday rehearsals", "our Friday drinks"
_MODIFIER_BEFORE_RE = re.compile(r"\b(?:the|my|our|his|her|their|your|many|few|some|those|these|all|no)\s+$", re.IGNORECASE)
_NOUN_AFTER_RE = re.compile(
    r"\s+(?!(?:before|after|of|that|when|morning|afternoon|evening|night|we|i|just|gone|and|or|to|at|in|on)\b)[a-z]{3,}\b"
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


def _valid(m: re.Match[str], text: str) -> bool:
    kind = m.lastgroup
    if kind == "wday":
        mod = (m.group("wmod") or "").lower()
        if mod in ("", "on"):
            if _EVERY_LIST_RE.search(text, 0, m.start()) or _PLURAL_PART_RE.match(text, m.end("wd")):
                return False
            if not mod and _MODIFIER_BEFORE_RE.search(text, 0, m.start()) and _NOUN_AFTER_RE.match(text, m.end("wd")):
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
