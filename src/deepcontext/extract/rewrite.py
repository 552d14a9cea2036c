"""Rewrite first person (a speaker's own words) and second person (an assistant addressing the user) into
third person, keeping the rest of the sentence verbatim.

``rewrite_first_person("I'm a Python developer", "Caroline")`` -> ``"Caroline is a Python developer"``.

Rules: ``I`` becomes the speaker and its verb agrees (am/'m -> is, have/'ve -> has, do -> does, don't ->
doesn't, 'll -> will, 'd -> had before a participle else would, present verbs take -s / -es / -ies; past
forms and modals stay; in a past-tense sentence "read", "put", "cut"... stay). Adverbs between ``I`` and
the verb are skipped ("I really love" -> "loves"). Verbs joined to a rewritten subject by "and" agree
too ("I live in Lisbon and work at Globex" -> "... and works at Globex").
``me`` -> the speaker, ``my`` / ``mine`` -> the speaker + 's, ``myself`` -> themself. In "Sarah and I
went" the verb is already plural and stays. Roman numerals ("World War I") are left alone.
"""

from __future__ import annotations

import re

from deepcontext.extract.verbs import AGREE as _AGREE
from deepcontext.extract.verbs import agree_coordinated, is_base_verb, third_person
from deepcontext.language.gazetteer import (
    ADVERBS,
    IRREGULAR_PARTICIPLES,
    IRREGULAR_PAST,
    words,
)

__all__ = [
    "FIRST_PERSON_RE",
    "SECOND_PERSON_RE",
    "WE_RE",
    "rename_person",
    "rewrite_first_person",
    "rewrite_second_person",
    "third_person",
]

_ADV = "|".join(sorted(ADVERBS, key=len, reverse=True))
_VERB = r"[A-Za-z]+(?:n't)?"

_FP_RE = re.compile(
    rf"""(?<![\w'.-])(?:
        (?P<i>I|i)(?:'(?P<c>m|ve|ll|d|M|VE|LL|D))?(?![\w'-]|\.\w)
        (?P<adv>(?:\s+(?:{_ADV}))*)
        (?:\s+(?P<verb>{_VERB})(?![\w'-]))?
      | (?P<me>me|Me|ME)(?![\w'-])
      | (?P<my>my|My|MY)(?![\w'-])
      | (?P<mine>mine|Mine)(?![\w'-])
      | (?P<myself>myself|Myself)(?![\w'-])
    )""",
    re.VERBOSE,
)
FIRST_PERSON_RE = re.compile(r"(?<![\w'-])(?:I|i(?=['\s])|me|my|mine|myself|Me|My|Mine|Myself)(?![\w-])")
WE_RE = re.compile(r"(?<![\w'-])(?:we|We|us|our|Our|ours|ourselves)(?![\w'-])")
SECOND_PERSON_RE = re.compile(r"(?<![\w'-])(?:[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself)(?![\w-])")

_SP_RE = re.compile(
    rf"""(?<![\w'-])(?:
        (?P<you>[Yy]ou)(?:'(?P<c>re|ve|ll|d))?(?![\w'-])
        (?P<adv>(?:\s+(?:{_ADV}))*)
        (?:\s+(?P<verb>{_VERB})(?![\w'-]))?
      | (?P<your>[Yy]our)(?![\w'-])
      | (?P<yours>[Yy]ours)(?![\w'-])
      | (?P<yourself>[Yy]ourself)(?![\w'-])
    )""",
    re.VERBOSE,
)

_MODALS = words(
    """can could will would shall should may might must can't couldn't won't wouldn't shouldn't mustn't
    didn't wasn't weren't hadn't cannot ought used"""
)
_NOT_VERBS = words(
    """and or but too alone myself yourself personally here there both all as is was has does said
    the a an to of in on at for with from"""
)
_ROMAN_BEFORE = re.compile(
    r"(?:War|Part|Phase|Type|Chapter|Volume|Vol|Act|Season|Level|Class|Stage|Grade|Henry|Louis|Elizabeth|"
    r"Charles|James|George|Edward|William|Richard|Mary|Step|Book|Episode)\s+$"
)
# "Sarah and I", "my wife and I", "me and you and I" at the start of a clause: a plural subject
_COMPOUND_BEFORE = re.compile(
    r"(?:^|[,;:(\"]\s*|\b(?i:when|because|since|that|so|but|then|while|after|before|if|and|yesterday|today)\s+)"
    r"(?:[Mm]y\s+(?:[\w-]+\s+)?[\w-]+|[Oo]ur\s+[\w-]+|(?!I\b|I')[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?"
    r"|[Hh]e|[Ss]he|[Tt]hey|[Yy]ou|[Mm]e|[Hh]im|[Hh]er)"
    r"\s+(?:and|&|or)\s+$"
)
_ME_THEN_I_RE = re.compile(r"\s+I(?:'m|'ve|'ll|'d)?\s")
_CLAUSE_BEFORE = re.compile(
    r"(?:^|[,;:(\"]|\b(?:that|and|but|so|because|since|when|whenever|if|while|as|where|though|although|"
    r"unless|until|after|before|once|now|then)\s*)\s*$",
    re.IGNORECASE,
)


def _is_participle(word: str) -> bool:
    w = word.lower()
    return w in IRREGULAR_PARTICIPLES or (w.endswith("ed") and len(w) > 3) or w == "better"


def _agree_verb(verb: str, past: bool = False) -> str:
    low = verb.lower()
    if low in _AGREE:
        return _AGREE[low] if verb[:1].islower() else _AGREE[low].capitalize()
    if low in _MODALS or low in IRREGULAR_PAST or low in _NOT_VERBS or low.endswith("n't"):
        return verb
    if past and low in _SAME_IN_PAST:
        return verb  # "the book I read last year": "read" is the past here
    if low.endswith("ing") or not low.isalpha():
        return verb
    if low.endswith("ly") and not is_base_verb(low):  # an adverb before the verb: "I barely slept"
        return verb
    if low.endswith("ed"):
        if not is_base_verb(low):  # "need", "feed", "succeed" are present tense
            return verb
    return third_person(verb)


# verbs whose past is their base form: in a past-tense sentence they stay as said
_SAME_IN_PAST = words("read put cut set hit let quit spread cost hurt shut bet burst cast")


def _subject(name: str, contraction: str | None, adv: str, verb: str | None, compound: bool, past: bool = False) -> str:
    c = (contraction or "").lower()
    tail = f" {verb}" if verb else ""
    if compound:  # "Sarah and I are" -> "Sarah and Caroline are"
        had_or_would = " had" if verb and _is_participle(verb) else " would"
        aux = {"m": " am", "ve": " have", "re": " are", "ll": " will", "d": had_or_would}.get(c, "")
        return f"{name}{aux}{adv}{tail}"
    if c:
        aux = {"m": "is", "re": "is", "ve": "has", "ll": "will"}.get(c) or ("had" if verb and _is_participle(verb) else "would")
        return f"{name} {aux}{adv}{tail}"
    if verb is None:
        return f"{name}{adv}"
    return f"{name}{adv} {_agree_verb(verb, past)}"


def rewrite_first_person(sentence: str, speaker: str, *, past: bool = False) -> tuple[str, int]:
    """Replace I / me / my / mine / myself by ``speaker``. Returns the text and the number of changes.
    ``past``: the sentence is in the past tense (a verb whose past is its base form stays)."""
    count = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal count
        if m.group("i"):
            if m.group("i") == "I" and _ROMAN_BEFORE.search(sentence, max(0, m.start() - 12), m.start()):
                return m.group(0)
            compound = bool(_COMPOUND_BEFORE.search(sentence, max(0, m.start() - 40), m.start()))
            count += 1
            out = _subject(speaker, m.group("c"), m.group("adv") or "", m.group("verb"), compound, past)
            return out + _MARK if _agreed(m, compound, past) else out
        count += 1
        if m.group("me"):
            if _ME_THEN_I_RE.match(sentence, m.end()):
                return speaker + " that"  # "told me I'm" -> "told Ana that Ana is"
            return speaker
        if m.group("my") or m.group("mine"):
            return f"{speaker}'s"
        return "themself"

    out = _agree_marked(_FP_RE.sub(repl, sentence))
    if count:
        out = _drop_self_naming(out, speaker)
    return out, count


def _agreed(m: re.Match[str], compound: bool, past: bool = False) -> bool:
    """The subject's present-tense verb took the third person (so must the verbs joined to it)."""
    verb = m.group("verb")
    if compound or verb is None:
        return False
    c = (m.group("c") or "").lower()
    if c:  # "I'm tired and want" -> "is tired and wants"; after will / would the verbs stay
        return c in ("m", "ve")
    return _agree_verb(verb, past) != verb


_MARK = "\x00"  # after a rewritten singular subject and its verb: where coordinated verbs start


def _agree_marked(text: str) -> str:
    """Coordinated verbs of each marked subject agree with it; the marks go."""
    if _MARK not in text:
        return text
    while (k := text.rfind(_MARK)) != -1:
        text = text[:k] + text[k + 1 :]
        text = agree_coordinated(text, k)
    return text


def _drop_self_naming(text: str, speaker: str) -> str:
    """A speaker introducing themself under the name already known: "I'm Maya, a data engineer"
    spoken by Maya reads "Maya is a data engineer", not "Maya is Maya, a data engineer"."""
    s = re.escape(speaker)
    # replacements as functions: a name is text, not a template ("\\1" in it is no group reference)
    text = re.sub(rf"\b{s}(?: is|'s name is) {s}(?: and| ,)? {s}\b", lambda _: speaker, text)  # "... and Maya lives"
    text = re.sub(rf"\b{s} is {s}, ", lambda _: f"{speaker} is ", text)  # "Maya is Maya, a ..."
    return text


def rewrite_second_person(sentence: str, user: str) -> tuple[str, int]:
    """Replace you / your / yours / yourself (an assistant speaking to the user) by ``user``."""
    count = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        if m.group("you"):
            subject = bool(_CLAUSE_BEFORE.search(sentence, max(0, m.start() - 12), m.start()))
            if not subject:  # object position: "I'll remind you tomorrow"
                rest = m.group(0)[len(m.group("you")) :]
                return user + rest
            compound = bool(_COMPOUND_BEFORE.search(sentence, max(0, m.start() - 40), m.start()))
            out = _subject(user, m.group("c"), m.group("adv") or "", m.group("verb"), compound)
            return out + _MARK if _agreed(m, compound) else out
        if m.group("your") or m.group("yours"):
            return f"{user}'s"
        return "themself"

    out = _agree_marked(_SP_RE.sub(repl, sentence))
    return out, count


def rename_person(text: str, former: str, name: str) -> str:
    """``former`` as a whole name (possessive included) replaced by ``name``: "User's sister" -> "Ana's
    sister"; "Ana" -> "Ana Silva" leaves an "Ana Silva" already there as it is."""
    if not former or former == name:
        return text
    rest = name[len(former) :] if name.startswith(former + " ") else ""
    guard = f"(?!{re.escape(rest)}(?![\\w-]))" if rest else ""
    return re.sub(rf"(?<![\w'-]){re.escape(former)}(?![\w-]){guard}", lambda _m: name, text)
