"""Rule-based relation extraction over a rewritten (third-person) sentence.

The sentence has already been rewritten ("I work at Acme" -> "Caroline works at Acme") and its entities
found, so a subject is always an entity span: the speaker, a named person, an organisation. A rule is a
predicate pattern ending where its object starts; the subject is the entity just before the predicate,
separated only by auxiliaries and adverbs ("Caroline has really been working at ..."), or the subject of
the previous predicate when the verb phrases are coordinated ("... and works at ..."). ``we`` maps to the
speaker when the caller says so.

Objects are entity spans, or, for preferences and possessions, short lower-case phrases (1-3 words,
"hiking", "two kids", "cooking" from "to cook"); lists are followed ("hiking, swimming and reading").
Negation flips likes into dislikes and drops other relations; wishes and conditionals ("would love to",
"wants to") drop the relation; future plans keep it with ``planned: true``; past states ("worked at",
"used to live in") carry ``past: true``.

Relations: works_at, works_as, colleague_of, studies_at, lives_in, from, born_in, moved_to, visited, likes,
dislikes, prefers, allergic_to, uses, has, learns, plays, speaks, member_of, and family / social ones
(sister_of, brother_of, mother_of, father_of, child_of, married_to, partner_of, friend_of, ...), which
read "<named person> <relation> <owner>": "Caroline's sister Sarah" -> (Sarah, sister_of, Caroline).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.gazetteer import (
    CONTENT_STOP,
    HAS_NOUNS,
    INSTRUMENTS_SPORTS,
    JOB_NOUNS,
    KIN,
    LANGUAGES,
    NATIONALITIES,
    NOT_NOUN_AFTER,
    PET_NOUNS,
    words,
)
from deepcontext.types import EntityType

__all__ = ["RelationHit", "find_relations", "gerund"]


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
_PLACE_OK = frozenset({T.LOCATION, T.OTHER, T.ORGANIZATION, T.EVENT})
_ORG_OK = frozenset({T.ORGANIZATION, T.OTHER, T.PRODUCT, T.TECHNOLOGY})
_LOC_OK = frozenset({T.LOCATION, T.OTHER})
_ANY_THING = frozenset({T.ORGANIZATION, T.OTHER, T.PRODUCT, T.TECHNOLOGY, T.LOCATION, T.EVENT, T.CONCEPT,
                        T.PERSON, T.PREFERENCE})
_SCHOOL_OK = frozenset({T.ORGANIZATION, T.OTHER})
_TECH_OK = frozenset({T.TECHNOLOGY, T.PRODUCT, T.OTHER, T.CONCEPT})

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
_NEG_RE = re.compile(r"\b(?:not|never|no\s+longer|doesn't|don't|didn't|isn't|wasn't|won't|can't|cannot|hasn't|haven't)\b", re.IGNORECASE)
_WISH_RE = re.compile(r"\b(?:would|could|should|might|may|'d|wants?\s+to|wanted\s+to|hopes?\s+to|hoping\s+to|wish(?:es)?)\b", re.IGNORECASE)
_FUTURE_RE = re.compile(r"\b(?:will|'ll|going\s+to|gonna|plans?\s+to|planning\s+to|about\s+to)\b", re.IGNORECASE)
_PERFECT_GAP_RE = re.compile(r"\b(?:has|have|'ve|'s)\b", re.IGNORECASE)
_USED_TO_RE = re.compile(r"\bused\s+to\b", re.IGNORECASE)
_DET_RE = re.compile(r"(?:the|a|an|some|this|that|these|those|his|her|their|its|our|my)\s+", re.IGNORECASE)
_MODIFIED_RE = re.compile(r" ([a-z][a-z-]+)")
_CALLED_RE = re.compile(r"(?:(?:the|a|an|this)\s+)?(?:[\w-]+\s+){0,2}?(?:called|named)\s+", re.IGNORECASE)
_AND_RE = re.compile(r"\s*(?:,|and|&)\s*")
_CLAUSE_OPEN_RE = re.compile(r"(?:^|[,;:]\s*|\b(?:and|but|so|when|because|then|after|before|while|since)\s+)(?:\W*[\w'-]+\W+){0,3}$", re.IGNORECASE)
_OVER_RE = re.compile(r"\s+(?:over|to|rather\s+than|instead\s+of|more\s+than)\s+", re.IGNORECASE)
_LIST_RE = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+)")
_PHRASE_RE = re.compile(r"[A-Za-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,5}")
_PHRASE_STOP = CONTENT_STOP | words(
    """in on at with for from to by about during since because when while and or but so than as if that which
    who whom every each all very too really lot lots much more most now then today tomorrow yesterday there
    here it them him her me us you someone something anything everything nothing people time times
    day days week weeks month months year years morning night weekend way ways back again together anymore
    either especially also even instead though although like one two three four five six seven eight nine ten
    eleven twelve few couple several ago"""
)
_BAD_FIRST = words("be being been doing going getting having making it its this that those these")

_ADJ = r"(?:older|younger|little|big|baby|twin|best|old|new|close|dear|lovely|oldest|youngest|eldest|step|late|good|amazing|wonderful|sweet)"
_NUM = r"(?:a|an|one|two|three|four|five|six|seven|\d+|another|the)"


def gerund(verb: str) -> str:
    """``cook`` -> ``cooking``, ``hike`` -> ``hiking``, ``swim`` -> ``swimming``, ``lie`` -> ``lying``."""
    v = verb.lower()
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")) and len(v) > 2:
        return v[:-1] + "ing"
    vowels = "aeiou"
    groups = sum(1 for i, c in enumerate(v) if c in vowels and (i == 0 or v[i - 1] not in vowels))
    if (len(v) >= 3 and groups == 1 and v[-1] not in vowels + "wxy" and v[-2] in vowels and v[-3] not in vowels):
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
        elif lw in _PHRASE_STOP or lw.endswith(("'s", "ly")) or not w[0].islower():
            if out and out[-1].endswith("ing") and lw in ("the", "a", "an") and len(out) < 3:
                continue  # "playing the guitar" -> "playing guitar"
            break
        out.append(lw)
        end = w_end
        if len(out) == 3:
            break
    if not out or out[0] in _BAD_FIRST or out[0] in _PHRASE_STOP:
        return None
    return " ".join(out), end


@dataclass(slots=True)
class _Ctx:
    text: str
    spans: list[EntitySpan]
    by_start: dict[int, EntitySpan]
    we_subject: str | None
    last_subjects: list[str]
    out: list[RelationHit]
    future: bool = False


def _span_at(ctx: _Ctx, pos: int) -> tuple[EntitySpan | None, int]:
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


def _objects(ctx: _Ctx, pos: int, allowed: frozenset[EntityType], phrases: bool) -> list[tuple[str, EntitySpan | None]]:
    out: list[tuple[str, EntitySpan | None]] = []
    first_kind = ""
    sep = ""
    while len(out) < 6:
        sp, p = _span_at(ctx, pos)
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
        c = _LIST_RE.match(ctx.text, end)
        if not c:
            break
        sep = c.group(0)
        pos = c.end()
    return out


def _subjects(ctx: _Ctx, pos: int) -> tuple[list[str], str]:
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
                    if (sp.end <= prev.start and sp.type is T.PERSON and not sp.possessive
                            and _AND_RE.fullmatch(text, sp.end, prev.start) and _CLAUSE_OPEN_RE.search(text, 0, sp.start)):
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


def _main_subject(ctx: _Ctx) -> str | None:
    """The subject opening the sentence ("Last year, Caroline ..."), for coordinated verb phrases."""
    for sp in ctx.spans:
        if sp.possessive:
            continue
        if sp.type in (T.PERSON, T.OTHER) and _OPENER_RE.match(ctx.text[: sp.start]):
            return sp.name
        return None
    return None


def _modality(gap: str) -> tuple[bool, bool, bool, bool]:
    """negated, wish, future, used_to"""
    return (bool(_NEG_RE.search(gap)), bool(_WISH_RE.search(gap)), bool(_FUTURE_RE.search(gap)),
            bool(_USED_TO_RE.search(gap)))


def _emit(ctx: _Ctx, subjects: list[str], relation: str, targets: list[tuple[str, EntitySpan | None]],
          phrase_type: EntityType | None, retype: dict[EntityType, EntityType] | None, props: dict[str, Any],
          attrs: dict[str, Any] | None = None) -> None:
    for s in subjects:
        for name, sp in targets:
            if name.lower() == s.lower():
                continue
            ttype = phrase_type if sp is None else (retype or {}).get(sp.type)
            ctx.out.append(RelationHit(s, relation, name, ttype, dict(props), dict(attrs or {})))


# --- simple predicate rules -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Rule:
    relation: str
    triggers: frozenset[str]
    pattern: re.Pattern[str]
    allowed: frozenset[EntityType]
    phrases: bool = False
    phrase_type: EntityType | None = None
    retype: dict[EntityType, EntityType] | None = None
    past_words: frozenset[str] = frozenset()
    negatable: bool = False  # negation turns it into `negated_relation`
    negated_relation: str | None = None
    keep_future: bool = True


def _rx(p: str) -> re.Pattern[str]:
    """A rule's predicate: case-insensitive, verbose (whitespace in the pattern is layout)."""
    return re.compile(p, re.IGNORECASE | re.VERBOSE)


def _t(text: str) -> frozenset[str]:
    return frozenset(text.split())


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "works_at",
        _t("work works worked working job employed intern interns interned interning internship position role gig hired"),
        _rx(r"""\b(?: work(?:s|ed|ing)? | employed | intern(?:s|ed|ing)? | hired\s+(?:by|at)
                | (?:got|has|had|have|landed|started|starts|accepted|took|found|holds?|held)\s+
                  (?:a\s+|an\s+|the\s+|\w+'s\s+)?(?:new\s+|first\s+|dream\s+|summer\s+|full-time\s+|part-time\s+)?
                  (?:job|position|role|internship|gig) )
              \s+ (?:(?:full[- ]time|part[- ]time|remotely|there|now|currently)\s+)?
              (?:as\s+(?:a|an)\s+(?:[\w-]+\s+){1,3}?)? (?:at|for)\s+"""),
        _ORG_OK, retype={T.OTHER: T.ORGANIZATION}, past_words=_t("worked interned held had"),
    ),
    _Rule(
        "colleague_of", _t("work works worked working"), _rx(r"\bwork(?:s|ed|ing)?\s+(?:closely\s+)?with\s+"),
        frozenset({T.PERSON}), past_words=_t("worked"),
    ),
    _Rule(
        "studies_at",
        _t("study studies studied studying student enrolled graduated graduate graduates attend attends attended "
           "attending major majoring majored degree phd"),
        _rx(r"""\b(?: (?:stud(?:y|ies|ied|ying)|enrolled|graduated|graduates|graduate|student|major(?:s|ed|ing)?)
                      (?:\s+[\w-]+){0,3}?\s+(?:at|from)\s+
                | attend(?:s|ed|ing)?\s+ )"""),
        frozenset({T.ORGANIZATION, T.OTHER}), retype={T.OTHER: T.ORGANIZATION},
        past_words=_t("studied graduated attended majored"),
    ),
    _Rule(
        "lives_in", _t("live lives lived living based reside resides resided residing settled"),
        _rx(r"""\b(?:live[sd]?|living|resid(?:es?|ed|ing)|based|settled)\s+
              (?:(?:now|currently|still|happily|right|alone|together|here|there|full-time)\s+)?
              (?:with\s+(?:[\w']+\s+){1,3})? (?:in|near)\s+"""),
        _LOC_OK, retype={T.OTHER: T.LOCATION}, past_words=_t("lived resided"),
    ),
    _Rule(
        "from", _t("from grew raised"),
        _rx(r"""\b(?: (?:is|was|comes|came|hails|are)\s+(?:originally\s+)?from | grew\s+up\s+in
                | (?:was\s+)?raised\s+in )\s+"""),
        _LOC_OK, retype={T.OTHER: T.LOCATION},
    ),
    _Rule("born_in", _t("born"), _rx(r"\bborn\s+(?:and\s+raised\s+)?in\s+"), _LOC_OK, retype={T.OTHER: T.LOCATION}),
    _Rule(
        "moved_to", _t("moved move moves moving relocated relocate relocates relocating"),
        _rx(r"\b(?:moved|moves|moving|move|relocat(?:ed|es|ing|e))\s+(?:back\s+|here\s+|out\s+|over\s+)?to\s+"),
        _LOC_OK, retype={T.OTHER: T.LOCATION},
    ),
    _Rule(
        "visited",
        _t("visited visit visits visiting went go goes going gone been traveled travelled travel travels traveling "
           "travelling flew fly flies flying trip vacation vacationed holiday drove"),
        _rx(r"""\b(?: visit(?:ed|s|ing)?\s+
                | (?:went|go|goes|going|gone|been|travel(?:l?ed|l?ing|s)?|flew|fl(?:y|ies|ying)|drove|driving|trip
                    |vacation(?:ed|ing)?|holiday(?:ed|ing)?)\s+(?:back\s+|out\s+)?(?:to|in)\s+ )"""),
        _PLACE_OK, retype={T.OTHER: T.LOCATION},
    ),
    _Rule(
        "likes",
        _t("love loves loved loving enjoy enjoys enjoyed enjoying like likes liked adore adores adored into fan "
           "passionate fond obsessed crazy addicted"),
        _rx(r"""\b(?: lov(?:e|es|ed|ing) | enjoy(?:s|ed|ing)? | lik(?:e|es|ed) | ador(?:e|es|ed)
                | (?:is|was|are|has\s+been|have\s+been)\s+
                  (?:really\s+|so\s+|very\s+|super\s+|totally\s+|also\s+|always\s+been\s+)?
                  (?:into|passionate\s+about|fond\s+of|obsessed\s+with|crazy\s+about
                    |(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+)?fan\s+of|addicted\s+to) )\s+"""),
        _ANY_THING, phrases=True, phrase_type=T.PREFERENCE, negatable=True, negated_relation="dislikes",
        keep_future=False,
    ),
    _Rule(
        "dislikes", _t("hate hates hated dislike dislikes disliked stand detest detests loathe loathes fan into"),
        _rx(r"""\b(?: hat(?:e|es|ed) | dislik(?:e|es|ed) | detests? | loathes?
                | (?:can't|cannot|can\s+not|couldn't)\s+stand
                | (?:(?:is|was)\s+not|isn't)\s+(?:really\s+)?(?:a\s+)?(?:big\s+|huge\s+)?(?:fan\s+of|into) )\s+"""),
        _ANY_THING, phrases=True, phrase_type=T.PREFERENCE, negatable=True, keep_future=False,
    ),
    _Rule(
        "prefers", _t("prefer prefers preferred"), _rx(r"\bprefer(?:s|red)?\s+"), _ANY_THING, phrases=True,
        phrase_type=T.PREFERENCE, negatable=True, keep_future=False,
    ),
    _Rule(
        "allergic_to", _t("allergic"), _rx(r"\ballergic\s+to\s+"), _ANY_THING, phrases=True,
        phrase_type=T.CONCEPT, negatable=True,
    ),
    _Rule(
        "uses",
        _t("use uses used using code codes coded coding program programs programming programmed write writes wrote "
           "writing develop develops developed developing build builds built building"),
        _rx(r"""\b(?: us(?:e|es|ed|ing)(?!\s+to\b)\s+
                | (?:cod(?:e|es|ed|ing)|program(?:s|med|ming)?|writ(?:e|es|ing)|wrote|develop(?:s|ed|ing)?
                    |build(?:s|ing)?|built)\s+
                  (?:(?:mostly|mainly|primarily|only|everything|apps|things|websites?|software|stuff|tools|services
                     |backends?)\s+)?
                  (?:in|with)\s+ )"""),
        _TECH_OK, retype={T.OTHER: T.TECHNOLOGY}, negatable=True, keep_future=False,
    ),
    _Rule(
        "learns", _t("learn learns learned learnt learning study studies studied studying taking"),
        _rx(r"""\b(?: learn(?:s|ed|t|ing)? | stud(?:y|ies|ied|ying)
                | taking\s+(?:\w+\s+)?(?:classes|lessons|a\s+class|a\s+course)\s+(?:in|on) )\s+
              (?!at\b|from\b|in\b|for\b|with\b|abroad\b|hard\b)(?:how\s+)?"""),
        frozenset({T.CONCEPT, T.TECHNOLOGY, T.PRODUCT}), phrases=True, phrase_type=T.CONCEPT, negatable=True,
        keep_future=False,
    ),
    _Rule(
        "owns", _t("run runs ran own owns owned founded co-founded cofounded opened"),
        _rx(r"\b(?:runs?|ran|owns?|owned|(?:co-?)?founded|opened)\s+"),
        frozenset({T.ORGANIZATION}), past_words=_t("ran owned"),
    ),
    _Rule(
        "member_of",
        _t("member joined join joins joining belongs belong part volunteer volunteers volunteered volunteering"),
        _rx(r"""\b(?: (?:is|was|became|becomes)\s+(?:a\s+)?(?:proud\s+|founding\s+|active\s+|new\s+)?member\s+of
                | joined | joins | joining | belongs?\s+to | (?:is|was)\s+(?:a\s+)?part\s+of
                | volunteer(?:s|ed|ing)?\s+(?:at|with|for) )\s+"""),
        frozenset({T.ORGANIZATION, T.OTHER, T.EVENT}), retype={T.OTHER: T.ORGANIZATION},
    ),
    _Rule(
        "speaks", _t("speak speaks spoke speaking fluent native"),
        _rx(r"""\b(?: speak(?:s|ing)? | spoke | (?:is\s+)?fluent\s+in
                | (?:is\s+)?(?:a\s+)?native\s+(?:\w+\s+)?speaker\s+of )\s+
              (?:some\s+|a\s+little\s+|fluent\s+|basic\s+|conversational\s+)?"""),
        frozenset({T.CONCEPT}), negatable=True,
    ),
    _Rule(
        "married_to", _t("married"), _rx(r"\bmarried\s+to\s+"), frozenset({T.PERSON, T.OTHER}),
        retype={T.OTHER: T.PERSON},
    ),
    _Rule(
        "partner_of", _t("engaged dating"), _rx(r"\b(?:engaged\s+to|dating)\s+"), frozenset({T.PERSON, T.OTHER}),
        retype={T.OTHER: T.PERSON}, keep_future=False,
    ),
    _Rule(
        "friend_of", _t("friends"), _rx(r"\b(?:best\s+|good\s+|close\s+|old\s+)?friends\s+with\s+"),
        frozenset({T.PERSON, T.OTHER}), retype={T.OTHER: T.PERSON},
    ),
)


_PLANNABLE = frozenset({"visited", "moved_to", "works_at", "studies_at", "lives_in", "member_of"})


def _apply_rule(ctx: _Ctx, rule: _Rule) -> None:
    for m in rule.pattern.finditer(ctx.text):
        subjects, gap = _subjects(ctx, m.start())
        if not subjects:
            continue
        negated, wish, future, used_to = _modality(gap)
        if wish or (future and not rule.keep_future):
            continue
        relation = rule.relation
        if negated:
            if not rule.negatable or rule.negated_relation is None:
                continue
            relation = rule.negated_relation
        targets = _objects(ctx, m.end(), rule.allowed, rule.phrases)
        if relation == "speaks":
            targets = [(n, sp) for n, sp in targets if n in LANGUAGES]
        if relation == "learns":
            targets = [(n, sp) for n, sp in targets if sp is None or sp.type is not T.CONCEPT or n in LANGUAGES]
        if not targets:
            continue
        props: dict[str, Any] = {}
        first = m.group(0).split()[0].lower()
        if used_to or (first in rule.past_words and not _PERFECT_GAP_RE.search(gap)):
            props["past"] = True  # "worked at", "used to live in"; not "has lived in"
        if future or (ctx.future and relation in _PLANNABLE):
            props["planned"] = True
        if relation == "prefers":
            o = _OVER_RE.search(ctx.text, m.end())
            if o:
                other = _objects(ctx, o.end(), rule.allowed, True)
                if other:
                    props["over"] = other[0][0]
        ctx.last_subjects = subjects
        _emit(ctx, subjects, relation, targets, rule.phrase_type, rule.retype, props)


# --- custom rules -----------------------------------------------------------------------------------------

_JOB_RE = re.compile(
    r"\b(?:is|was|has\s+been|had\s+been|became|becomes|is\s+now|works?\s+as|worked\s+as|working\s+as|"
    r"(?:got|landed|started|accepted|took|found|has|had)\s+(?:a|an|the|\w+'s)\s+(?:new\s+|first\s+|dream\s+)?"
    r"(?:job|position|role)\s+as|employed\s+as)\s+(?:a|an)\s+(?P<phrase>[\w+#.-]+(?:\s+[\w+#.-]+){0,3})",
    re.IGNORECASE,
)
_AFTER_JOB_RE = re.compile(r"\s+(?:(?:working|employed|based)\s+)?(?:at|for|with|in)\s+(?:the\s+)?")
_JOB_STOP = words("the and or who that which with at for in of from to but is was very really big huge")


def _jobs(ctx: _Ctx) -> None:
    for m in _JOB_RE.finditer(ctx.text):
        # the job noun is the first word of the next four that is one ("senior Python developer")
        found = None
        for w in _OBJ_WORD_RE.finditer(ctx.text, m.start("phrase"), m.end("phrase")):
            lw = w.group(0).lower()
            if lw in _JOB_STOP:
                break
            if lw in JOB_NOUNS or (lw.endswith("s") and lw[:-1] in JOB_NOUNS):
                found = w
                break
        if found is None:
            continue
        noun = found.group(0).lower().rstrip("s") if found.group(0).lower() not in JOB_NOUNS else found.group(0).lower()
        subjects, gap = _subjects(ctx, m.start())
        subjects = [s for s in subjects if _type_of(ctx, s) in (T.PERSON, None)]
        if not subjects:
            continue
        negated, wish, future, used_to = _modality(gap)
        if negated or wish:
            continue
        props: dict[str, Any] = {}
        if used_to or m.group(0).split()[0].lower() in ("was", "worked") or "had been" in m.group(0).lower():
            props["past"] = True
        if future:
            props["planned"] = True
        ctx.last_subjects = subjects
        end = found.end()
        title = ctx.text[m.start("phrase") : end]
        if noun == "student":
            relation_after = "studies_at"
        else:
            relation_after = "works_at"
            _emit(ctx, subjects, "works_as", [(title, None)], T.CONCEPT, None, props)
        a = _AFTER_JOB_RE.match(ctx.text, end)
        if a:
            sp, _ = _span_at(ctx, a.end())
            allowed = _ORG_OK if relation_after == "works_at" else _SCHOOL_OK
            if sp is not None and not sp.possessive and sp.type in allowed:
                _emit(ctx, subjects, relation_after, [(sp.name, sp)], None, {T.OTHER: T.ORGANIZATION}, props)


def _type_of(ctx: _Ctx, name: str) -> EntityType | None:
    for sp in ctx.spans:
        if sp.name == name:
            return sp.type
    return None


# the kinship / pet word is captured generically and checked against the word lists in Python
_POSS_KIN_RE = re.compile(
    rf"\s+(?:{_ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)(?:\s*,\s*|\s+)(?:(?:who\s+is|whose\s+name\s+is|named|called|is\s+named|is\s+called)\s+)?",
    re.IGNORECASE,
)
_POSS_NAME_IS_RE = re.compile(rf"\s+(?:{_ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)'s\s+name\s+is\s+", re.IGNORECASE)
_HOME_RE = re.compile(
    r"\s+(?:home\s+country|hometown|home\s+town|native\s+country|birthplace|homeland)(?:\s*,\s*|\s+(?:is|was)\s+|\s+)"
    r"(?:the\s+)?",
    re.IGNORECASE,
)
_IS_POSS_RE = re.compile(r"\s*(?:,\s*|\s+(?:is|was)\s+)$")
_IS_KIN_AFTER_RE = re.compile(rf"'s\s+(?:{_ADJ}\s+){{0,2}}(?P<kin>[a-z-]+)\b", re.IGNORECASE)


def _kin_noun(word: str) -> tuple[str, bool] | None:
    """A kinship or pet noun in singular, and whether it was plural ("friends" -> ("friend", True))."""
    w = word.lower()
    if w in KIN or w in PET_NOUNS:
        return w, False
    if w.endswith("s") and (w[:-1] in KIN or w[:-1] in PET_NOUNS):
        return w[:-1], True
    return None


def _kin_relation(kin: str) -> tuple[str, bool]:
    """The relation for a kinship / pet noun and whether it is a pet (``has``)."""
    k = kin.lower()
    if k in KIN:
        return KIN[k], False
    return "has", True


def _possessives(ctx: _Ctx) -> None:
    """"Caroline's sister Sarah", "Caroline's dog Max", "Caroline's sister's name is Sarah", "Sarah is Caroline's sister"."""
    text = ctx.text
    for owner in ctx.spans:
        if not owner.possessive or owner.type is not T.PERSON:
            continue
        after = owner.end + 2 if text.startswith("'s", owner.end) else owner.end + 1
        m = _POSS_NAME_IS_RE.match(text, after) or _POSS_KIN_RE.match(text, after)
        noun = _kin_noun(m.group("kin")) if m else None
        if m and noun is not None:
            kin, plural = noun
            relation, pet = _kin_relation(kin)
            pos = m.end()
            names: list[EntitySpan] = []
            while True:
                sp = ctx.by_start.get(pos)
                if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.name == owner.name or sp.possessive:
                    break
                names.append(sp)
                c = _LIST_RE.match(text, sp.end) if plural else None
                if not c:
                    break
                pos = c.end()
            for sp in names:
                if pet:
                    ctx.out.append(RelationHit(owner.name, "has", sp.name, T.OTHER, {}, {"kind": kin}))
                else:
                    ctx.out.append(RelationHit(sp.name, relation, owner.name, T.PERSON if sp.type is T.OTHER else None))
        h = _HOME_RE.match(text, after)
        if h:  # "Caroline's home country Sweden", "Caroline's hometown is Leeds"
            sp = ctx.by_start.get(h.end())
            if sp is not None and sp.type in _LOC_OK and not sp.possessive:
                ctx.out.append(RelationHit(owner.name, "from", sp.name, T.LOCATION if sp.type is T.OTHER else None))
        # "Sarah is Caroline's sister"
        k = _IS_KIN_AFTER_RE.match(text, owner.end)
        if k and k.group("kin").lower() in KIN:
            for sp in reversed(ctx.spans):
                if sp.end <= owner.start:
                    if _IS_POSS_RE.fullmatch(text[sp.end : owner.start]) and sp.type in (T.PERSON, T.OTHER) and not sp.possessive:
                        relation, _ = _kin_relation(k.group("kin"))
                        ctx.out.append(RelationHit(sp.name, relation, owner.name, T.PERSON if sp.type is T.OTHER else None))
                    break


_HAS_NAMED_RE = re.compile(
    rf"\b(?:ha(?:s|d|ve)|got|owns?|owned|adopt(?:ed|s)?|bought|rescued|gets|is\s+getting)\s+{_NUM}\s+"
    rf"(?:[\w-]+\s+){{0,2}}?(?P<noun>[a-z]+)\s*,?\s+(?:who\s+is\s+|whose\s+name\s+is\s+)?(?:named|called)\s+",
    re.IGNORECASE,
)
_HAS_THING_RE = re.compile(
    rf"\b(?:ha(?:s|d|ve)|owns?|owned|adopt(?:ed|s)?|bought|rescued)\s+(?P<obj>{_NUM}\s+[\w-]+(?:\s+[\w-]+){{0,2}})",
    re.IGNORECASE,
)
_NAMED_AFTER_RE = re.compile(r"\s*,?\s+(?:who\s+is\s+)?(?:named|called)\b", re.IGNORECASE)
_OBJ_WORD_RE = re.compile(r"[\w-]+")
_AND_NAMED_RE = re.compile(
    rf"\s*,?\s+(?:and\s+)?{_NUM}\s+(?:[\w-]+\s+){{0,2}}?(?P<noun>[a-z]+)\s*,?\s+(?:named|called)\s+",
    re.IGNORECASE,
)
_ARTICLE_RE = re.compile(r"^(?:a|an|the|another|one)\s+", re.IGNORECASE)


def _has(ctx: _Ctx) -> None:
    for rx, named in ((_HAS_NAMED_RE, True), (_HAS_THING_RE, False)):
        for m in rx.finditer(ctx.text):
            subjects, gap = _subjects(ctx, m.start())
            if not subjects:
                continue
            negated, wish, future, used_to = _modality(gap)
            if negated or wish or future:
                continue
            props = {"past": True} if used_to or m.group(0).lower().startswith("had") else {}
            if named:
                noun = m.group("noun").lower()
                if noun.endswith("s") and noun[:-1] in PET_NOUNS | KIN.keys():
                    noun = noun[:-1]
            else:
                # the first possession word among the next words: "a golden retriever", "two kids"
                tokens = list(_OBJ_WORD_RE.finditer(ctx.text, m.start("obj"), m.end("obj")))
                cut = next((i for i, w in enumerate(tokens) if i > 0 and w.group(0).lower() in HAS_NOUNS), None)
                if cut is None or _NAMED_AFTER_RE.match(ctx.text, tokens[cut].end()):
                    continue
                noun = tokens[cut].group(0).lower()
                obj_text = ctx.text[m.start("obj") : tokens[cut].end()]
            ctx.last_subjects = subjects
            if named:
                sp, _ = _span_at(ctx, m.end())
                if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.possessive:
                    continue
                plural = m.group("noun").lower().endswith("s") and noun != m.group("noun").lower()
                while sp is not None:
                    if noun in KIN:
                        for s in subjects:
                            ctx.out.append(RelationHit(sp.name, KIN[noun], s, T.PERSON if sp.type is T.OTHER else None, props))
                    else:
                        pet = noun in PET_NOUNS or noun.rstrip("s") in PET_NOUNS
                        kind = noun.rstrip("s") if noun not in PET_NOUNS and pet else noun
                        for s in subjects:
                            ctx.out.append(RelationHit(s, "has", sp.name, T.OTHER if pet else None, props, {"kind": kind}))
                    if plural:  # "two cats named Milo and Luna"
                        c = _LIST_RE.match(ctx.text, sp.end)
                        nxt = ctx.by_start.get(c.end()) if c else None
                        if nxt is not None and nxt.type in (T.PERSON, T.OTHER) and not nxt.possessive:
                            sp = nxt
                            continue
                    more = _AND_NAMED_RE.match(ctx.text, sp.end)  # "... and a daughter named Mia"
                    if not more:
                        break
                    noun = more.group("noun").lower()
                    sp = ctx.by_start.get(more.end())
                    if sp is None or sp.type not in (T.PERSON, T.OTHER) or sp.possessive:
                        break
            else:
                obj = _ARTICLE_RE.sub("", obj_text.lower()).strip()
                parts = obj.split()
                if len(parts) > 3:
                    obj = " ".join(parts[-3:])
                _emit(ctx, subjects, "has", [(obj, None)], T.CONCEPT, None, props)


_CATEGORY_TYPES = {
    **dict.fromkeys(words("band group team company brand restaurant cafe café bar store shop club label"), T.ORGANIZATION),
    **dict.fromkeys(
        words("singer artist actor actress author writer musician player rapper athlete person comedian director poet painter"),
        T.PERSON,
    ),
    **dict.fromkeys(words("city country place destination spot beach park town island"), T.LOCATION),
    **dict.fromkeys(words("movie film book novel show series song album game app podcast"), T.PRODUCT),
}


def _category_retype(category: str) -> dict[EntityType, EntityType] | None:
    """"favourite band" -> a band is an organisation (when the recogniser said "other")."""
    t = _CATEGORY_TYPES.get(category.split()[-1].rstrip("s") if category else "") or _CATEGORY_TYPES.get(category)
    return {T.OTHER: t} if t else None


_FAV_RE = re.compile(
    r"'s\s+(?:(?:all-time|all\s+time|absolute|current|new)\s+)?favou?rite\s+(?P<cat>[a-z][a-z -]{0,25}?)\s+(?:is|was|are|has\s+always\s+been)\s+",
    re.IGNORECASE,
)
_FAV_AFTER_RE = re.compile(r"\s+(?:is|was|are)\s+$", re.IGNORECASE)
_IS_FAV_RE = re.compile(r"'s\s+(?:(?:all-time|absolute|current|new)\s+)?favou?rite\b(?:\s+(?P<cat>[a-z][a-z-]{1,20}))?", re.IGNORECASE)


def _favourites(ctx: _Ctx) -> None:
    text = ctx.text
    for owner in ctx.spans:
        if not owner.possessive or owner.type is not T.PERSON:
            continue
        m = _FAV_RE.match(text, owner.end)
        if m:
            targets = _objects(ctx, m.end(), _ANY_THING, True)
            cat = m.group("cat").strip().lower()
            _emit(ctx, [owner.name], "prefers", targets, T.PREFERENCE, _category_retype(cat), {"category": cat})
            continue
        f = _IS_FAV_RE.match(text, owner.end)
        if f:  # "Sushi is Caroline's favourite food" / "Taylor Swift is Caroline's favorite singer"
            before = text[: owner.start]
            g = _FAV_AFTER_RE.search(before)
            if not g:
                continue
            subj_end = g.start()
            target: tuple[str, EntitySpan | None] | None = None
            for sp in ctx.spans:
                if sp.end == subj_end and not sp.possessive:
                    target = (sp.name, sp)
            if target is None:
                words = re.findall(r"[A-Za-z][a-z'-]*", before[max(0, subj_end - 30) : subj_end])
                if 1 <= len(words) <= 3 and words and all(w.lower() not in _PHRASE_STOP for w in words):
                    target = (" ".join(words).lower(), None)
                elif words and words[-1].lower() not in _PHRASE_STOP:
                    target = (words[-1].lower(), None)
            if target is not None:
                cat = (f.group("cat") or "").lower()
                props = {"category": cat} if cat else {}
                _emit(ctx, [owner.name], "prefers", [target], T.PREFERENCE, _category_retype(cat), props)


_PAIR_RE = re.compile(
    r"\b(?:are|were|became|become|have\s+been|got|just\s+got)\s+(?:best\s+|good\s+|close\s+|old\s+|happily\s+)?"
    r"(?P<rel>friends|siblings|sisters|brothers|colleagues|coworkers|co-workers|roommates|neighbors|neighbours|married"
    r"|engaged|cousins|partners)\b",
    re.IGNORECASE,
)
_PAIR_REL = {"friends": "friend_of", "siblings": "sibling_of", "sisters": "sister_of", "brothers": "brother_of",
             "colleagues": "colleague_of", "coworkers": "colleague_of", "co-workers": "colleague_of",
             "roommates": "roommate_of", "neighbors": "neighbor_of", "neighbours": "neighbor_of",
             "married": "married_to", "engaged": "partner_of", "cousins": "cousin_of", "partners": "partner_of"}


def _pairs(ctx: _Ctx) -> None:
    for m in _PAIR_RE.finditer(ctx.text):
        subjects, gap = _subjects(ctx, m.start())
        if len(subjects) != 2 or _NEG_RE.search(gap):
            continue
        a, b = subjects
        if _type_of(ctx, a) not in (T.PERSON, T.OTHER) or _type_of(ctx, b) not in (T.PERSON, T.OTHER):
            continue
        ctx.out.append(RelationHit(a, _PAIR_REL[m.group("rel").lower()], b, None))


_ALLERGY_RE = re.compile(
    r"\b(?:has|have|had)\s+(?:an?\s+)?(?:severe\s+|mild\s+|bad\s+)?(?P<what>[a-z]+(?:\s+[a-z]+)?)\s+allerg(?:y|ies)\b",
    re.IGNORECASE,
)


def _allergy(ctx: _Ctx) -> None:
    for m in _ALLERGY_RE.finditer(ctx.text):
        subjects, gap = _subjects(ctx, m.start())
        if not subjects or _NEG_RE.search(gap):
            continue
        _emit(ctx, subjects, "allergic_to", [(m.group("what").lower(), None)], T.CONCEPT, None, {})


_PLAYS_RE = re.compile(r"\bplay(?:s|ed|ing)?\s+(?:the\s+|some\s+|a\s+lot\s+of\s+|lots\s+of\s+|in\s+a\s+)?", re.IGNORECASE)


def _plays(ctx: _Ctx) -> None:
    for m in _PLAYS_RE.finditer(ctx.text):
        subjects, gap = _subjects(ctx, m.start())
        if not subjects:
            continue
        negated, wish, _, used_to = _modality(gap)
        if negated or wish:
            continue
        sp, _ = _span_at(ctx, m.end())
        targets: list[tuple[str, EntitySpan | None]] = []
        if sp is not None and sp.type in (T.PRODUCT, T.OTHER, T.EVENT) and not sp.possessive:
            targets = [(sp.name, sp)]
        else:
            word = re.match(r"[a-z-]+", ctx.text[m.end() :])
            if word and word.group(0).lower() in INSTRUMENTS_SPORTS:
                targets = [(word.group(0).lower(), None)]
        if targets:
            ctx.last_subjects = subjects
            _emit(ctx, subjects, "plays", targets, T.CONCEPT, None, {"past": True} if used_to else {})


_CUSTOM: tuple[tuple[frozenset[str], Callable[[_Ctx], None]], ...] = (
    (_t("is was been became becomes works worked working job employed"), _jobs),
    (_t("has had have got own owns owned adopted adopts bought rescued gets getting"), _has),
    (_t("favorite favourite"), _favourites),
    (_t("friends siblings sisters brothers colleagues coworkers co-workers roommates neighbors neighbours married "
        "engaged cousins partners"), _pairs),
    (_t("allergy allergies"), _allergy),
    (_t("play plays played playing"), _plays),
)


def find_relations(text: str, spans: list[EntitySpan], words: frozenset[str] | set[str], *,
                   we_subject: str | None = None, future: bool = False) -> list[RelationHit]:
    """Relations stated in one rewritten sentence.

    ``spans`` are its entities (from :func:`~deepcontext.extract.entities.find_entities`), ``words`` its
    lower-case word set (used to skip rules cheaply), ``we_subject`` the entity "we" stands for;
    ``future`` says the sentence speaks of the future (a trip "next Friday"), which marks moves, visits
    and jobs as ``planned``.
    """
    ctx = _Ctx(text, spans, {sp.start: sp for sp in spans}, we_subject, [], [], future)
    if any(sp.possessive for sp in spans):
        _possessives(ctx)
    for triggers, fn in _CUSTOM:
        if not triggers.isdisjoint(words):
            fn(ctx)
    for rule in _RULES:
        if not rule.triggers.isdisjoint(words):
            _apply_rule(ctx, rule)
    # deduplicate, keep the first
    seen: set[tuple[str, str, str]] = set()
    out: list[RelationHit] = []
    for r in ctx.out:
        key = (r.source.lower(), r.relation, r.target.lower())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
