"""The parts relation rules are built from: the hit, the sentence being read, its subjects before a
predicate, its objects after one, and the modality between them (negation, wishes, plans, past)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deepcontext.extract.entities import EntitySpan
from deepcontext.language.gazetteer import (
    CONTENT_STOP,
    LANGUAGES,
    NATIONALITIES,
    NOT_NOUN_AFTER,
    words,
)
from deepcontext.types import EntityType

__all__ = [
    "ADJ",
    "ANY_THING",
    "LIST_RE",
    "LOC_OK",
    "NEG_RE",
    "NUM",
    "ORG_OK",
    "PHRASE_STOP",
    "PLACE_OK",
    "RelCtx",
    "RelationHit",
    "SCHOOL_OK",
    "T",
    "TECH_OK",
    "emit",
    "gerund",
    "modality_of",
    "objects_after",
    "span_at",
    "subjects_before",
]


@dataclass(slots=True)
class RelationHit:
    source: str
    relation: str
    target: str
    target_type: EntityType | None = None  # type for the target entity (new phrase, or a retyped span)
    properties: dict[str, Any] = field(default_factory=dict)
    target_attributes: dict[str, Any] = field(default_factory=dict)


T = EntityType
_SUBJECT_TYPES = frozenset({T.PERSON, T.OTHER, T.ORGANIZATION})
PLACE_OK = frozenset({T.LOCATION, T.OTHER, T.ORGANIZATION, T.EVENT})
ORG_OK = frozenset({T.ORGANIZATION, T.OTHER, T.PRODUCT, T.TECHNOLOGY})
LOC_OK = frozenset({T.LOCATION, T.OTHER})
ANY_THING = frozenset({T.ORGANIZATION, T.OTHER, T.PRODUCT, T.TECHNOLOGY, T.LOCATION, T.EVENT, T.CONCEPT, T.PERSON, T.PREFERENCE})
SCHOOL_OK = frozenset({T.ORGANIZATION, T.OTHER})
TECH_OK = frozenset({T.TECHNOLOGY, T.PRODUCT, T.OTHER, T.CONCEPT})

_AUX_WORDS = (
    r"is|was|are|were|has|have|had|will|would|could|should|might|may|can|does|did|do|doesn't|didn't|don't|"
    r"isn't|wasn't|hasn't|haven't|won't|wouldn't|can't|cannot|not|never|no\s+longer|been|being|also|still|"
    r"really|currently|now|just|actually|usually|always|often|sometimes|recently|finally|already|started|"
    r"starts|began|begun|going\s+to|gonna|plans\s+to|planning\s+to|planned\s+to|wants\s+to|wanted\s+to|"
    r"hopes\s+to|hoping\s+to|used\s+to|loves\s+to|likes\s+to|absolutely|totally|definitely|originally|mostly|"
    r"generally|both|then|later|soon|once|even|kind\s+of|sort\s+of|happily|proudly|officially|personally|"
    r"honestly|truly|seriously|genuinely|especially|particularly|mainly|primarily|only|literally|basically|"
    r"eventually|again|to|'s|'d|'ll"
)
_AUX_GAP_RE = re.compile(rf"\s*(?:,\s*)?(?:(?:{_AUX_WORDS})\s+)*", re.IGNORECASE)
# "we" or a coordinating word, then a few words that _AUX_GAP_RE must accept
_WE_RE = re.compile(r"(?:^|[\s,;])(?:we|we're|we've|we'll)\s+(?P<gap>(?:[\w']+\s+){0,5})$", re.IGNORECASE)
_COORD_RE = re.compile(r"(?:\band|\bbut|\bthen|\bso|,)\s+(?P<gap>(?:[\w']+\s+){0,5})$", re.IGNORECASE)
NEG_RE = re.compile(
    r"\b(?:not|never|no\s+longer|doesn't|don't|didn't|isn't|wasn't|won't|can't|cannot|hasn't|haven't)\b", re.IGNORECASE
)
_WISH_RE = re.compile(
    r"\b(?:would|could|should|might|may|'d|wants?\s+to|wanted\s+to|hopes?\s+to|hoping\s+to|wish(?:es)?)\b", re.IGNORECASE
)
_FUTURE_RE = re.compile(r"\b(?:will|'ll|going\s+to|gonna|plans?\s+to|planning\s+to|about\s+to)\b", re.IGNORECASE)
_USED_TO_RE = re.compile(r"\bused\s+to\b", re.IGNORECASE)
_DET_RE = re.compile(r"(?:the|a|an|some|this|that|these|those|his|her|their|its|our|my)\s+", re.IGNORECASE)
_MODIFIED_RE = re.compile(r" ([a-z][a-z-]+)")
_CALLED_RE = re.compile(r"(?:(?:the|a|an|this)\s+)?(?:[\w-]+\s+){0,2}?(?:called|named)\s+", re.IGNORECASE)
_AND_RE = re.compile(r"\s*(?:,|and|&)\s*")
_CLAUSE_OPEN_RE = re.compile(
    r"(?:^|[,;:]\s*|\b(?:and|but|so|when|because|then|after|before|while|since)\s+)(?:\W*[\w'-]+\W+){0,3}$", re.IGNORECASE
)
LIST_RE = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+)")
_PHRASE_RE = re.compile(r"[A-Za-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,5}")
PHRASE_STOP = CONTENT_STOP | words(
    """in on at with for from to by about during since because when while and or but so than as if that which
    who whom every each all very too really lot lots much more most now then today tomorrow yesterday there
    here it them him her me us you someone something anything everything nothing people time times
    day days week weeks month months year years morning night weekend way ways back again together anymore
    either especially also even instead though although like one two three four five six seven eight nine ten
    eleven twelve few couple several ago along across through into onto over under near around behind beside
    between past toward towards without within upon outside inside throughout beyond"""
)
_BAD_FIRST = words("be being been doing going getting having making it its this that those these")

ADJ = r"(?:older|younger|little|big|baby|twin|best|old|new|close|dear|lovely|oldest|youngest|eldest|step|late|good|amazing|wonderful|sweet)"
NUM = r"(?:a|an|one|two|three|four|five|six|seven|\d+|another|the)"


def gerund(verb: str) -> str:
    """``cook`` -> ``cooking``, ``hike`` -> ``hiking``, ``swim`` -> ``swimming``, ``lie`` -> ``lying``."""
    v = verb.lower()
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")) and len(v) > 2:
        return v[:-1] + "ing"
    vowels = "aeiou"
    groups = sum(1 for i, c in enumerate(v) if c in vowels and (i == 0 or v[i - 1] not in vowels))
    if len(v) >= 3 and groups == 1 and v[-1] not in vowels + "wxy" and v[-2] in vowels and v[-3] not in vowels:
        return v + v[-1] + "ing"
    return v + "ing"


_WORD_RE = re.compile(r"[A-Za-z][a-zA-Z'-]*")
_PHRASE_GAP_RE = re.compile(r"[ ]+")


def _phrase(text: str, pos: int) -> tuple[str, int] | None:
    """A short lower-case phrase starting at ``pos`` (1-3 words), and where it ends in ``text``."""
    words: list[tuple[str, int]] = []
    p = pos
    while len(words) < 6:
        m = _WORD_RE.match(text, p)
        if not m:
            break
        words.append((m.group(0), m.end()))
        g = _PHRASE_GAP_RE.match(text, m.end())
        if not g:
            break
        p = g.end()
    if not words:
        return None
    first = words[0][0]
    if first[0].isupper():
        if first not in NATIONALITIES and first not in LANGUAGES:
            return None  # a capitalised word that is not an entity: not a preference we understand
        words[0] = (first.lower(), words[0][1])
    out: list[str] = []
    end = pos
    items = words
    if first == "to" and len(words) > 1 and words[1][0].isalpha() and words[1][0].islower():
        out.append(gerund(words[1][0]))  # "to cook" -> "cooking"
        end = words[1][1]
        items = words[2:]
    for w, w_end in items:
        lw = w.lower()
        if out and ((w.isupper() and len(w) <= 3) or w in NATIONALITIES or w in LANGUAGES):
            pass  # "reality TV", "cooking Italian food"
        elif lw in PHRASE_STOP or lw.endswith(("'s", "ly")) or not w[0].islower():
            if out and out[-1].endswith("ing") and lw in ("the", "a", "an") and len(out) < 3:
                continue  # "playing the guitar" -> "playing guitar"
            break
        out.append(lw)
        end = w_end
        if len(out) == 3:
            break
    if not out or out[0] in _BAD_FIRST or out[0] in PHRASE_STOP:
        return None
    return " ".join(out), end


@dataclass(slots=True)
class RelCtx:
    text: str
    spans: list[EntitySpan]
    by_start: dict[int, EntitySpan]
    we_subject: str | None
    last_subjects: list[str]
    out: list[RelationHit]
    future: bool = False


def span_at(ctx: RelCtx, pos: int) -> tuple[EntitySpan | None, int]:
    sp = ctx.by_start.get(pos)
    if sp is None:
        m = _DET_RE.match(ctx.text, pos)
        if m:
            sp = ctx.by_start.get(m.end())
            pos = m.end()
        if sp is None:
            c = _CALLED_RE.match(ctx.text, pos)  # "a startup called Nimbus Labs"
            if c and ctx.by_start.get(c.end()) is not None:
                pos = c.end()
                sp = ctx.by_start[pos]
    return sp, pos


def objects_after(ctx: RelCtx, pos: int, allowed: frozenset[EntityType], phrases: bool) -> list[tuple[str, EntitySpan | None]]:
    out: list[tuple[str, EntitySpan | None]] = []
    first_kind = ""
    sep = ""
    while len(out) < 6:
        sp, p = span_at(ctx, pos)
        if sp is not None:
            if sp.possessive or sp.type not in allowed or (first_kind and first_kind != "span"):
                break
            m = _MODIFIED_RE.match(ctx.text, sp.end)
            if m and m.group(1) not in NOT_NOUN_AFTER and not m.group(1).endswith("ly"):
                break  # "a LGBTQ support group", "Google headquarters": the entity only modifies a noun
            out.append((sp.name, sp))
            end = sp.end
            first_kind = first_kind or "span"
        elif phrases and (not first_kind or first_kind == "phrase"):
            if ctx.by_start.get(p) is not None:
                break
            got = _phrase(ctx.text, p)
            if got is None:
                break
            if out and not (got[0].endswith("ing") and out[0][0].endswith("ing")) and "," not in sep:
                break  # "hiking and swims" is a new verb phrase, not a list item
            out.append((got[0], None))
            end = got[1]
            first_kind = "phrase"
        else:
            break
        c = LIST_RE.match(ctx.text, end)
        if not c:
            break
        sep = c.group(0)
        pos = c.end()
    return out


def subjects_before(ctx: RelCtx, pos: int) -> tuple[list[str], str]:
    """Subjects of a predicate starting at ``pos`` and the auxiliary text between."""
    text = ctx.text
    prev = None
    for sp in ctx.spans:
        if sp.end <= pos:
            prev = sp
        else:
            break
    if prev is not None and not prev.possessive and prev.type in _SUBJECT_TYPES:
        gap = text[prev.end : pos]
        if _AUX_GAP_RE.fullmatch(gap):
            names = [prev.name]
            # "Sarah and Caroline went": a pair of people opening the clause
            if prev.type is T.PERSON:
                for sp in ctx.spans:
                    if (
                        sp.end <= prev.start
                        and sp.type is T.PERSON
                        and not sp.possessive
                        and _AND_RE.fullmatch(text, sp.end, prev.start)
                        and _CLAUSE_OPEN_RE.search(text, 0, sp.start)
                    ):
                        names.insert(0, sp.name)
            return names, gap
    window = text[max(0, pos - 80) : pos]
    if ctx.we_subject:
        m = _WE_RE.search(window)
        if m and _AUX_GAP_RE.fullmatch(m.group("gap")):
            return [ctx.we_subject], m.group(0)
    m = _COORD_RE.search(window)
    if m and _AUX_GAP_RE.fullmatch(m.group("gap")):
        if ctx.last_subjects:
            return list(ctx.last_subjects), m.group(0)
        main = _main_subject(ctx)
        if main:
            return [main], m.group(0)
    return [], ""


_OPENER_RE = re.compile(r"^\W*(?:[\w'-]+\W+){0,4}$")


def _main_subject(ctx: RelCtx) -> str | None:
    """The subject opening the sentence ("Last year, Caroline ..."), for coordinated verb phrases."""
    for sp in ctx.spans:
        if sp.possessive:
            continue
        if sp.type in (T.PERSON, T.OTHER) and _OPENER_RE.match(ctx.text[: sp.start]):
            return sp.name
        return None
    return None


def modality_of(gap: str) -> tuple[bool, bool, bool, bool]:
    """negated, wish, future, used_to"""
    return (bool(NEG_RE.search(gap)), bool(_WISH_RE.search(gap)), bool(_FUTURE_RE.search(gap)), bool(_USED_TO_RE.search(gap)))


def emit(
    ctx: RelCtx,
    subjects: list[str],
    relation: str,
    targets: list[tuple[str, EntitySpan | None]],
    phrase_type: EntityType | None,
    retype: dict[EntityType, EntityType] | None,
    props: dict[str, Any],
    attrs: dict[str, Any] | None = None,
) -> None:
    for s in subjects:
        for name, sp in targets:
            if name.lower() == s.lower():
                continue
            ttype = phrase_type if sp is None else (retype or {}).get(sp.type)
            ctx.out.append(RelationHit(s, relation, name, ttype, dict(props), dict(attrs or {})))
