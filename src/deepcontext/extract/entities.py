"""A rule-based named-entity recogniser: capitalised spans, gazetteers, suffixes and cue phrases.

``find_entities(text)`` returns :class:`EntitySpan` objects (start, end, surface name, type), in order
and without overlaps: gazetteer phrases first (longest first), then runs of capitalised tokens joined
through "of", "the", "de", "&"... ("Bank of America"), technology names unambiguous in lower case
("kubernetes"), and calendar dates and years as DATE. Pronouns, weekdays and months alone, kinship
words and a capitalised sentence opener that is not known ("Yesterday", "Nice") are no entities.

The type comes from the gazetteer, a cue for a person ("my friend X", "X and I"), an organisation,
location or event suffix ("Corp", "... Street", "... Festival"), a title or common first name, cue
phrases ("work at X", "in X", "using X", "a dog named X"), else other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deepcontext.extract.entity_cues import LEFT, NAMED
from deepcontext.extract.sentences import URL_RE
from deepcontext.language.gazetteer import (
    COMPANIES,
    EVENT_NAMES,
    EVENT_SUFFIXES,
    FIRST_NAMES,
    IMPERATIVE_VERBS,
    KIN,
    LANGUAGES,
    LOCATION_HEADS,
    LOCATION_SUFFIXES,
    LOCATION_WORDS,
    MULTIWORD,
    NATIONALITIES,
    NOT_NOUN_AFTER,
    ORG_HEADS,
    ORG_SUFFIXES,
    PET_NOUNS,
    PRODUCTS,
    REQUEST_VERBS,
    STOPCAPS,
    STOPCAPS_ALWAYS,
    TECH,
    TECH_CI,
    TITLES,
    words,
)
from deepcontext.language.timeparse import find_calendar_dates
from deepcontext.types import EntityType

__all__ = ["EntitySpan", "find_entities", "gazetteer_type"]


@dataclass(slots=True)
class EntitySpan:
    """An entity mention in a text."""

    start: int
    end: int
    name: str
    type: EntityType
    possessive: bool = False  # written "Sarah's"
    attributes: dict[str, Any] = field(default_factory=dict)


_L = "A-Za-zÀ-ÖØ-öø-ɏ"
_DIGIT_RE = re.compile(r"\d")
_NEXT_WORD_RE = re.compile(r" ([a-z][a-z-]*)")
_TOKEN_BODY = rf"(?:[{_L}0-9&+#'-]|\.(?=[{_L}0-9]))*"
# a capitalised token ("Acme", "McDonald's", "C++", "U.S") or a camel-cased product name ("iPhone", "macOS")
_CAP_TOKEN_RE = re.compile(rf"(?<![{_L}0-9'.&+#-])(?:[A-ZÀ-ÖØ-Þ]|[a-z]+[A-Z]){_TOKEN_BODY}")
_FIRST_WORD_RE = re.compile(rf"[{_L}0-9]")
_LOWER_WORD_RE = re.compile(r"[a-z][a-z0-9+#.-]*[a-z0-9+#]|[a-z]")
_I_FORMS = frozenset({"I", "I'm", "I've", "I'll", "I'd"})
_CONNECTORS = frozenset({"of", "the", "de", "da", "del", "di", "du", "la", "le", "van", "von", "der", "den", "&"})
# Words that read as a technology name but are ordinary English at the start of a sentence.
_AMBIGUOUS = words(
    """go swift rust ruby java r c word switch target chef puppet spring express unity arch atom bun node signal
    teams cursor llama galaxy pixel rails spark lambda helm jest vite babel prettier excel yarn zoom slack uber
    apple amazon meta shell visa gap sun claude gemini copilot rest d3 qt wasm bluetooth pip chrome edge
    premiere illustrator final nice reading bath mobile victoria georgia jordan florence chelsea austin
    phoenix eugene"""
)
_TITLE_TELLS = words("at in on to for with my her his is was are and from by our their your it this that has have had")
_MW_FIRST = frozenset(n.split(" ", 1)[0] for n in MULTIWORD)
_MW_CI = {k: v for k, v in TECH_CI.items() if " " in k}
_TECH_CI_WORDS = frozenset(TECH_CI)
_LOWER_TECH_RE = re.compile(
    r"(?<![\w.-])(?:"
    + "|".join(re.escape(k) for k in sorted(TECH_CI, key=len, reverse=True) if k[0].islower())
    + r")(?![\w-]|\.\w)"
)
_STRONG = frozenset({EntityType.TECHNOLOGY, EntityType.PRODUCT, EntityType.ORGANIZATION, EntityType.EVENT})
_EMPHASIS = STOPCAPS | frozenset({"love", "hate", "best", "worst", "much", "so", "really", "never", "always", "not"})
_PRODUCT_HEADS = COMPANIES | frozenset({"Google", "Microsoft", "Apple", "Amazon", "Samsung", "Sony", "Nintendo"})

_ADJ = r"(?:older|younger|little|big|baby|twin|best|old|new|close|dear|lovely|oldest|youngest|eldest|step|late|good)"
# kinship words are captured generically (group "kin") and checked against KIN in Python
_PERSON_LEFT_RE = re.compile(
    rf"(?:'s|\bmy|\bhis|\bher|\bour|\btheir|\byour|\ba|\bthe)\s+(?:{_ADJ}\s+)?(?P<kin>[a-z-]+)\s*,?\s*$"
    rf"|\b(?:with|met|meet|meeting|texted|called|told|asked|hugged|married|dating|"
    rf"thanks|thank|invited|helped)\s+$"
    rf"|\b(?:mr|mrs|ms|dr|prof)\.?\s+$"
)
_PERSON_RIGHT_RE = re.compile(
    rf"\s*(?:,\s*)?(?:and\s+(?:I|me)\b|is\s+(?:my|\w+'s)\s+(?:{_ADJ}\s+)?(?P<k1>[a-z-]+)|,\s*(?:my|\w+'s)\s+(?P<k2>[a-z-]+)"
    rf"|\s*\((?:my\s+)?(?P<k3>[a-z-]+)\))"
)
_PET_POSS_LEFT_RE = re.compile(r"(?:'s|\bmy|\bour|\bhis|\bher|\btheir|\byour)\s+(?:[a-z-]+\s+)?(?P<noun>[a-z]+)\s*,?\s*$")
_NAMED_LEFT_RE = re.compile(r"\b(?:named|called)\s+$")
_LAST_WORDS_RE = re.compile(r"[a-z-]+")
_LEFT_CUES = tuple((re.compile(c.words), c.type) for c in LEFT)
_NAMED_CUES = tuple((re.compile(c.words), c.type) for c in NAMED)
_PERSON_NOUNS = frozenset(KIN) | words("guy girl man woman boy lady person kid friend teacher doctor coach neighbor neighbour")


def _is_kin(word: str | None) -> bool:
    if not word:
        return False
    return word in KIN or (word.endswith("s") and word[:-1] in KIN)


def _noun_before(text: str, nouns: frozenset[str]) -> str | None:
    """A noun of ``nouns`` among the last words of ``text`` (up to ~12 characters back), singular."""
    found: list[str] = _LAST_WORDS_RE.findall(text[-24:])
    for w in reversed(found[-3:]):
        if w in nouns:
            return w
        if w.endswith("s") and w[:-1] in nouns:
            return w[:-1]
    return None


def _person_cue(left_low: str, text: str, end: int) -> bool:
    """Something around the span says it is a person: "my friend X", "met X", "X and I", "X is my sister"."""
    m = _PERSON_LEFT_RE.search(left_low)
    if m and (m.group("kin") is None or _is_kin(m.group("kin"))):
        return True
    r = _PERSON_RIGHT_RE.match(text, end)
    if r is None:
        return False
    return r.lastgroup is None or _is_kin(r.group(r.lastgroup))


def gazetteer_type(name: str) -> EntityType | None:
    """The type a gazetteer gives ``name`` (surface form), else ``None``."""
    if name in EVENT_NAMES:
        return EntityType.EVENT
    if name in TECH:
        return EntityType.PRODUCT if name in PRODUCTS else EntityType.TECHNOLOGY
    if name in COMPANIES:
        return EntityType.ORGANIZATION
    if name in LOCATION_WORDS:
        return EntityType.LOCATION
    if name in LANGUAGES:
        return EntityType.CONCEPT
    canon = TECH_CI.get(name.lower())
    if canon is not None:
        return EntityType.PRODUCT if canon in PRODUCTS else EntityType.TECHNOLOGY
    return None


def _strip_possessive(tok: str) -> tuple[str, bool]:
    if tok.endswith("'s") and tok not in COMPANIES and tok not in EVENT_NAMES:
        return tok[:-2], True
    if tok.endswith("'"):
        return tok[:-1], True
    return tok.rstrip("-"), False


_DIRECTIONS = frozenset(
    {"New", "North", "South", "East", "West", "Upper", "Lower", "San", "Santa", "Saint", "St", "St.", "Los", "Las"}
)


def _type_span(
    text: str, start: int, end: int, name: str, toks: list[str], initial: bool, known: dict[str, EntityType | None]
) -> tuple[EntityType, dict[str, Any]] | None:
    """Type a capitalised span; ``None`` when it should not be an entity after all.

    Cheap, decisive evidence first (a known name, a technology / organisation / event gazetteer entry,
    a suffix, a title); the cue phrases around the span only for the rest.
    """
    low = name.lower()
    attrs: dict[str, Any] = {}
    in_known = low in known
    known_type = known.get(low)
    if known_type is not None:
        return known_type, attrs
    gaz = gazetteer_type(name)
    first, last = toks[0], toks[-1]
    multi = len(toks) > 1
    if gaz is None and multi:
        if first in _PRODUCT_HEADS and last not in ORG_SUFFIXES:
            gaz = EntityType.PRODUCT  # "Google Maps", "Amazon Prime"
        elif last in ORG_SUFFIXES or (first in ORG_HEADS and len(toks) > 2):
            if last in ("Museum", "Gallery") or first == "Museum":
                return EntityType.LOCATION, attrs
            return EntityType.ORGANIZATION, attrs
        elif last in LOCATION_SUFFIXES or (first in LOCATION_HEADS and first not in _DIRECTIONS):
            return EntityType.LOCATION, attrs
        elif last in EVENT_SUFFIXES:
            return EntityType.EVENT, attrs
        elif first in TITLES or first.rstrip(".") in TITLES:
            return EntityType.PERSON, attrs
    if gaz in _STRONG and not (initial and not multi and low in _AMBIGUOUS):
        return gaz, attrs  # a technology, product, organisation or event name: no cue needed
    left_low = text[max(0, start - 48) : start].lower()
    person_cue = _person_cue(left_low, text, end)
    if initial and not in_known and not multi:
        if gaz is None and first not in FIRST_NAMES and not person_cue:
            return None  # "Yesterday", "Visiting", an unknown capitalised word opening the sentence
        if low in _AMBIGUOUS and not person_cue:
            return None
    if name in NATIONALITIES and name not in LANGUAGES and gaz is None:
        return None  # "Canadian", "Italian food": adjectives
    if name in LANGUAGES and not multi:
        nxt = _NEXT_WORD_RE.match(text, end)
        if nxt and nxt.group(1) not in NOT_NOUN_AFTER and not nxt.group(1).endswith("ly"):
            return None  # "Italian food", "Spanish class": an adjective here
    pet_m = _PET_POSS_LEFT_RE.search(left_low) if gaz is None and not multi else None
    if pet_m and pet_m.group("noun") in PET_NOUNS:
        attrs["kind"] = pet_m.group("noun")
        return EntityType.OTHER, attrs  # "Caroline's dog Max", "my cat, Luna"
    named_m = _NAMED_LEFT_RE.search(left_low) if gaz is None else None
    if named_m:
        before = left_low[: named_m.start()]
        pet = _noun_before(before, PET_NOUNS)
        if pet:
            attrs["kind"] = pet
            return EntityType.OTHER, attrs
        for rx, kind in _NAMED_CUES:
            if rx.search(before):
                return kind, attrs
        if _noun_before(before, _PERSON_NOUNS) or first in FIRST_NAMES:
            return EntityType.PERSON, attrs
    if (
        person_cue
        and len(toks) <= 3
        and (gaz is None or gaz in (EntityType.LOCATION, EntityType.CONCEPT) or first in FIRST_NAMES)
    ):
        return EntityType.PERSON, attrs
    if gaz is not None:
        return gaz, attrs
    if first in FIRST_NAMES and len(toks) <= 3:
        return EntityType.PERSON, attrs
    if in_known or named_m:
        return EntityType.OTHER, attrs
    nxt = _NEXT_WORD_RE.match(text, end)
    if nxt and nxt.group(1) not in NOT_NOUN_AFTER and not nxt.group(1).endswith("ly"):
        # "a CLI tool", "a LGBTQ support group": a modifier; the cue is about the noun
        return None if name.isupper() else (EntityType.OTHER, attrs)
    for rx, kind in _LEFT_CUES:
        if rx.search(left_low):
            return kind, attrs
    if first in _DIRECTIONS and multi:
        return EntityType.LOCATION, attrs
    return EntityType.OTHER, attrs


def find_entities(
    text: str, known: dict[str, EntityType | None] | None = None, *, first_is_initial: bool = True
) -> list[EntitySpan]:
    """Entity mentions in one sentence.

    ``known`` maps lower-cased names the caller already knows (the speaker, earlier entities) to a type
    (``None``: type unknown); a known name is an entity even at the start of a sentence.
    ``first_is_initial=False`` treats the first token as a mid-sentence one (text embedded in CJK).
    """
    known = known or {}
    if ("/" in text or "@" in text) and URL_RE.search(text):
        text = URL_RE.sub(lambda m: " " * len(m.group(0)), text)
    low_text = text.lower()
    spans: list[EntitySpan] = []
    # lower-case technology names ("python", "kubernetes", "vs code")
    if not _TECH_CI_WORDS.isdisjoint(_LOWER_WORD_RE.findall(low_text)) or any(k in low_text for k in _MW_CI):
        for m in _LOWER_TECH_RE.finditer(text):
            canon = TECH_CI[m.group(0).lower()]
            spans.append(EntitySpan(m.start(), m.end(), canon, gazetteer_type(canon) or EntityType.TECHNOLOGY))
    # only capitalised tokens matter from here on: their gaps tell runs apart
    toks = [(m.start(), m.end(), m.group(0)) for m in _CAP_TOKEN_RE.finditer(text)]
    if not toks:
        return _with_dates(text, spans)
    first_word = _FIRST_WORD_RE.search(text)
    first_pos = first_word.start() if first_word and first_is_initial else -1
    allcaps = sum(1 for t in toks if len(t[2]) > 1 and t[2].isupper())
    shouting = allcaps >= 3 and allcaps >= 0.6 * len(low_text.split())
    # "I Love My New Job At Google": capitalised function words in the middle give title case away
    n_words = len(low_text.split())
    title_case = sum(1 for t in toks if t[0] != first_pos and t[2].lower() in _TITLE_TELLS) >= 2 or (
        n_words >= 5 and len(toks) >= 0.85 * n_words
    )
    gazetteer_only = shouting or title_case
    n = len(toks)
    used = [False] * n

    # 1. gazetteer phrases, longest first
    for i in range(n):
        if toks[i][2] not in _MW_FIRST:
            continue
        for size in (5, 4, 3, 2):
            j = i + size - 1
            if j >= n or any(used[i : j + 1]):
                continue
            phrase = text[toks[i][0] : toks[j][1]]
            name, poss = _strip_possessive(phrase) if phrase.endswith(("'s", "'")) else (phrase, False)
            if name not in MULTIWORD:
                continue
            etype = gazetteer_type(name)
            if etype is None:
                continue
            spans.append(EntitySpan(toks[i][0], toks[i][0] + len(name), name, etype, poss))
            for k in range(i, j + 1):
                used[k] = True
            break

    # 2. runs of capitalised tokens
    i = 0
    while i < n:
        if used[i]:
            i += 1
            continue
        s, _, t = toks[i]
        if gazetteer_only:
            name, poss = _strip_possessive(t)
            g = gazetteer_type(name)
            if g is not None or name.lower() in known:
                surface = TECH_CI.get(name.lower(), name) if name.isupper() else name
                spans.append(EntitySpan(s, s + len(name), surface, g or known.get(name.lower()) or EntityType.OTHER, poss))
            i += 1
            continue
        run = [i]
        while True:
            last_tok = toks[run[-1]][2]
            if last_tok.endswith(("'s", "'")) or last_tok in _I_FORMS:
                break
            k = run[-1] + 1
            if k >= n or used[k] or toks[k][2] in _I_FORMS or toks[k][2] == last_tok:
                break  # "told User User is": a repeated name is two mentions
            gap = text[toks[run[-1]][1] : toks[k][0]]
            if gap == " " or gap == " & " or (gap == ". " and last_tok in TITLES):
                run.append(k)
                continue
            if gap[:1] == " " and gap[-1:] == " " and gap[1:-1].lower() in _CONNECTORS:
                run.append(k)  # "Bank of America", "University of Texas"
                continue
            break
        j = run[-1]
        i = j + 1
        initial = s == first_pos or (s > 0 and text[:s].rstrip()[-1:] in (":", '"', "(", "—", "-") and first_is_initial)
        members = list(run)
        while members:
            low = toks[members[0]][2].lower()
            base = low.removesuffix("'s")
            if base in STOPCAPS_ALWAYS or (
                initial
                and (
                    base in STOPCAPS
                    or base in IMPERATIVE_VERBS
                    or base in REQUEST_VERBS
                    or (base.endswith(("ing", "ly")) and base not in known)
                )
            ):
                members.pop(0)  # what follows a dropped opener keeps its position ("Happy Birthday")
                continue
            break
        if members:
            cut = next((m for m in members if toks[m][2].lower() in STOPCAPS_ALWAYS), None)
            if cut is not None:  # a weekday or pronoun inside: keep the part before it
                members = [m for m in members if m < cut]
        if not members:
            continue
        a, b = members[0], members[-1]
        raw = text[toks[a][0] : toks[b][1]]
        name, poss = _strip_possessive(raw)
        if not name or (len(name) == 1 and name not in ("R", "C")):
            continue
        if name[0].islower() and gazetteer_type(name) is None:
            continue  # camel case that is not a known product ("iPhone" is, "uA" is not)
        if name.isupper() and len(name) > 2 and name.lower() in _EMPHASIS:
            continue
        tok_names = [toks[m][2] for m in members]
        tok_names[-1] = _strip_possessive(tok_names[-1])[0]
        typed = _type_span(text, toks[a][0], toks[a][0] + len(name), name, tok_names, initial, known)
        if typed is None:
            continue
        etype, attrs = typed
        spans.append(EntitySpan(toks[a][0], toks[a][0] + len(name), name, etype, poss, attrs))
    return _with_dates(text, spans)


def _with_dates(text: str, spans: list[EntitySpan]) -> list[EntitySpan]:
    """Add calendar dates (they win over an overlapping span) and sort by position."""
    if _DIGIT_RE.search(text):
        for s, e, surface in find_calendar_dates(text):
            spans = [sp for sp in spans if sp.end <= s or sp.start >= e]
            spans.append(EntitySpan(s, e, surface, EntityType.DATE))
    spans.sort(key=lambda sp: sp.start)
    return spans
