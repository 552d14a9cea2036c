"""Make a fact stand alone: absolute dates, reported speech, "we" / "our", "it", and verbs that agree.

- :func:`absolute_time` writes a resolved relative expression as a date ("yesterday" said on 2025-03-10
  -> "on 2025-03-09", "next month" -> "in April 2025", "last week" -> "in the week of 2025-03-03").
- :func:`reported_speech` finds "Maya said: ..." / "Maya told me that ..." / "according to Maya, ...";
  the pipeline keeps what was reported, in the reporter's voice.
- :func:`rewrite_we` gives "we" / "our" / "us" an owner: the speaker's team in a sentence about work
  ("we are moving the tables" -> "Maya's team is moving the tables"), else the speaker and whoever the
  turn names with them ("Sam and Jo went to Porto") or "and others"; "our" outside work is the speaker's.
- :func:`thing_phrase` is the last thing a sentence talks about ("Maya maintains our event pipeline"
  -> "the event pipeline"), for an "It ..." that follows.
"""

from __future__ import annotations

import re
from datetime import datetime

from deepcontext.extract.verbs import is_base_verb, third_person
from deepcontext.language.gazetteer import words
from deepcontext.language.timeparse import TimeMention

__all__ = [
    "absolute_time",
    "absolute_time_zh",
    "reported_speech",
    "rewrite_we",
    "thing_phrase",
]

_MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_SEASONS = {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}
_PARTS = {9: "morning", 15: "afternoon", 19: "evening", 20: "night"}


def absolute_time(m: TimeMention) -> str:
    """The moment of a resolved expression written as a date, with the preposition it needs."""
    w: datetime = m.when
    day = w.date().isoformat()
    g = m.granularity
    if g == "day":
        return f"on {day}"
    if g == "part_of_day":
        return f"on the {_PARTS.get(w.hour, 'day')} of {day}"
    if g in ("hour", "minute"):
        return f"on {day} at {w.hour:02d}:{w.minute:02d}"
    if g == "week":
        return f"in the week of {day}"
    if g == "weekend":
        return f"on the weekend of {day}"
    if g == "month":
        return f"in {_MONTH_NAMES[w.month - 1]} {w.year}"
    if g == "season":
        season = _SEASONS.get(w.month, "season")
        return f"in {season} {w.year if w.month != 12 else f'{w.year}-{(w.year + 1) % 100:02d}'}"
    return f"in {w.year}"


def absolute_time_zh(m: TimeMention) -> str | None:
    """The date of a resolved Chinese expression (昨天 -> 2025年4月14日), None for other granularities."""
    w = m.when
    if m.granularity in ("day", "part_of_day", "hour", "minute"):
        return f"{w.year}年{w.month}月{w.day}日"
    if m.granularity == "month":
        return f"{w.year}年{w.month}月"
    if m.granularity == "year":
        return f"{w.year}年"
    if m.granularity == "week":
        return f"{w.date().isoformat()}那周"
    return None


_PREP_BEFORE_RE = re.compile(r"\b(?:on|in|at|during|from|since|by|until|till)\s+$", re.IGNORECASE)


_DET_BEFORE_RE = re.compile(r"\b(?:the|a|an|that|this|whole|entire|every|each|all|my|our|his|her|their|its)\s+$", re.IGNORECASE)
_YEAR_AFTER_RE = re.compile(r"\s+(next|last|this)\s+year\b", re.IGNORECASE)


def with_year(sentence: str, m: TimeMention, said_at: datetime) -> TimeMention:
    """A month or day followed by "next / last / this year" ("in September next year") moved to that
    year, the expression widened to cover it; otherwise ``m`` itself."""
    y = _YEAR_AFTER_RE.match(sentence, m.end)
    if y is None or m.explicit or m.granularity not in ("month", "season", "day"):
        return m
    year = said_at.year + {"next": 1, "last": -1, "this": 0}[y.group(1).lower()]
    try:
        when = m.when.replace(year=year)
    except ValueError:  # 29 February
        when = m.when.replace(year=year, day=28)
    return TimeMention(
        when=when,
        granularity=m.granularity,
        text=sentence[m.start : y.end()],
        start=m.start,
        end=y.end(),
        explicit=False,
        since=m.since,
    )


def write_time(sentence: str, m: TimeMention) -> str:
    """``sentence`` with the relative expression ``m`` replaced by its date (calendar dates stay)."""
    if m.explicit:
        return sentence
    end = m.end
    phrase = absolute_time(m)
    before = sentence[: m.start]
    if _DET_BEFORE_RE.search(before):  # "the whole Saturday" stays a noun phrase: its date follows it
        return sentence[:end] + f" ({phrase.split(' ', 1)[1]})" + sentence[end:]
    if m.since or _PREP_BEFORE_RE.search(before):  # "since last year" -> "since 2024", not "since in 2024"
        phrase = phrase.split(" ", 1)[1]
    out = before + phrase + sentence[end:]
    return out


# --- reported speech ----------------------------------------------------------------------------------

_SAY = r"(?:said|says|told\s+(?:me|us|him|her|them)|mentioned|wrote|explained|announced|confirmed|texted\s+(?:me|us))"
_REPORTER = r"(?P<who>(?:[Mm]y|[Oo]ur)\s+[a-z]+(?:\s+[A-Z][a-z]+)?|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
_REPORT_RE = re.compile(
    rf"^{_REPORTER}\s+{_SAY}(?:\s+(?P<that>that)\b|\s*(?P<colon>[:,])\s*)\s*[\"']?(?P<rest>.+?)[\"']?$"
    rf"|^[Aa]ccording\s+to\s+{_REPORTER.replace('who', 'who2')},\s*(?P<rest2>.+)$"
)
_NOT_REPORTERS = words("i we you he she they it this that there everyone someone nobody people")


def reported_speech(sentence: str) -> tuple[str, str, bool] | None:
    """``(reporter, what was said, quoted)`` of "Maya said: ..." / "Maya said that ...", else None.
    ``quoted``: the words are the reporter's own (their "I" is the reporter)."""
    m = _REPORT_RE.match(sentence)
    if m is None:
        return None
    who = m.group("who") or m.group("who2")
    rest = m.group("rest") or m.group("rest2")
    if not who or not rest or who.lower() in _NOT_REPORTERS or len(rest.split()) < 3:
        return None
    quoted = bool(m.group("colon")) and m.group("colon") == ":" or sentence.rstrip().endswith(('"', "'"))
    return who, rest.strip(), quoted


# --- we / our / us --------------------------------------------------------------------------------------

_WORK_WORDS = words(
    """team teams company startup office work job project projects sprint release releases deploy deployment
    client clients customer customers product products pipeline pipelines service services server servers
    database databases table tables code codebase repo repository api backend frontend app infrastructure
    cluster migration migrating roadmap quarter standup meeting meetings manager boss colleagues coworkers
    department budget launch launched launching shipping ship ships stack vendor contract hiring hire
    analytics dashboard outage incident oncall on-call"""
)
_WE_ANY_RE = re.compile(
    r"(?<![\w'-])(?P<w>[Ww]e|[Oo]ur|[Oo]urs|[Uu]s|[Oo]urselves)(?:'(?P<c>re|ve|ll|d))?(?![\w'-])"
    r"(?P<adv>(?:\s+(?:also|just|really|still|usually|always|never|often|finally|already|"
    r"recently|both|all))*)(?:\s+(?P<verb>[A-Za-z]+)(?![\w'-]))?"
)
_WORD_RE = re.compile(r"[a-z][a-z-]*")
_PLURAL_AGREE = {
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "aren't": "isn't",
    "weren't": "wasn't",
    "haven't": "hasn't",
}


def is_work(text: str) -> bool:
    """The sentence talks about work (its "we" is a team)."""
    return any(w in _WORK_WORDS for w in _WORD_RE.findall(text.lower()))


def rewrite_we(sentence: str, owner: str, companion: str | None = None, *, work: bool | None = None) -> tuple[str, int]:
    """Give "we" / "our" / "us" an owner (see the module docstring). Returns the text and the count."""
    team = is_work(sentence) if work is None else work
    count = 0
    owner_re = re.compile(rf"\b{re.escape(owner)}\b")

    def owner_before(pos: int) -> bool:
        return owner_re.search(sentence, 0, pos) is not None

    def repl(m: re.Match[str]) -> str:
        nonlocal count
        w = m.group("w").lower()
        adv = m.group("adv") or ""
        verb = m.group("verb")
        c = (m.group("c") or "").lower()
        tail = m.group(0)[len(m.group("w")) + (len(c) + 1 if c else 0) :]
        count += 1
        if w in ("our", "ours"):
            if owner_before(m.start()):  # "Maya maintains our pipeline" said by Maya: "their team's"
                return ("their team's" if team else "their") + tail
            who = f"{owner}'s team's" if team else f"{owner}'s"
            return who + tail
        if w == "ourselves":
            return "themselves" + tail
        if w == "us":
            return (f"{owner}'s team" if team else f"{owner} and {companion or 'others'}") + tail
        if not team:  # a plural subject: the verb stays plural
            aux = {"re": " are", "ve": " have", "ll": " will", "d": " would"}.get(c, "")
            return f"{owner} and {companion or 'others'}{aux}{tail}"
        subject = f"{owner}'s team"
        if c:
            aux = {"re": "is", "ve": "has", "ll": "will", "d": "would"}[c]
            return f"{subject} {aux}{tail}"
        if verb is None:
            return subject + tail
        low = verb.lower()
        if low in _PLURAL_AGREE:
            new = _PLURAL_AGREE[low]
        elif is_base_verb(low) and low not in ("can", "will", "would", "should", "could", "may", "might", "must"):
            new = third_person(low)
        else:
            new = low
        return f"{subject}{adv} {new}" + tail[len(adv) + 1 + len(verb) :]

    out = _WE_ANY_RE.sub(repl, sentence)
    return out, count


# --- "it": the thing talked about before -------------------------------------------------------------

_DET_NP_RE = re.compile(
    r"\b(?P<det>the|a|an|our|my|his|her|their|its|this|that|[A-Z][a-z]+'s)\s+"
    r"(?P<np>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2})"
)
_A_NAME_RE = re.compile(r"\b(?:a|an)\s+(?P<name>[A-Z][a-z]+(?:\s+[A-Z][\w-]*)*)\b")
_NP_STOP = words(
    """a an the and or but to of in on at for with from by about as into over after before since until
    last next this that these those every each is are was were be been has have had will would can could
    should may might must do does did not yesterday today tomorrow tonight week month year weekend ago
    because so then when while which who where it its very really quite just also"""
)


def thing_phrase(sentence: str, owner: str | None = None) -> str | None:
    """The last noun phrase with a determiner that is not a person ("our event pipeline" -> "the event
    pipeline"), or None. Possessives other than the owner's keep their owner ("Jo's car")."""
    best: str | None = None
    at = -1
    for m in _A_NAME_RE.finditer(sentence):  # "bought a Subaru": a product, not a person
        best, at = f"the {m.group('name')}", m.start()
    for m in _DET_NP_RE.finditer(sentence):
        if m.start() < at:
            continue
        ws = []
        for w in m.group("np").split():
            if w in _NP_STOP:
                break
            ws.append(w)
        if not ws:
            continue
        det = m.group("det")
        noun = " ".join(ws)
        if det.endswith("'s"):
            best = f"{det} {noun}"
        elif det in ("my",) and owner:
            best = f"{owner}'s {noun}"
        else:
            best = f"the {noun}"
    return best
