"""Changes said as events: "User traded the old Golf in for an electric Kia", "User left the chess club
and joined a climbing gym", "User gave up tennis", "User no longer has a cat".

Such a fact ends a thing the subject had, did or belonged to. :func:`ended_things` reads what was
ended; :func:`ends` tells whether a stored fact is the standing statement of that thing ("User drives
a VW Golf", "User is a member of the chess club", "User plays tennis every weekend"), which the new
fact then supersedes. Only standing statements of the same subject are ended: an episode ("User went
to the chess club on Friday"), a plan, a negation or another person's fact stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcontext.extract.replacement_forms import ENDED, PARTED, ROLES, STANDING, SWITCHED, TAKEN_UP
from deepcontext.extract.verbs import is_base_verb
from deepcontext.language.gazetteer import KIN
from deepcontext.language.unnamed import parsed, written

__all__ = ["EndedThing", "Switch", "ended_things", "ends", "standing_thing", "switched_to", "taken_up", "with_new_thing"]

_DET = r"(?:(?:my|our|his|her|their|the|a|an|its|this|that|\w+'s|old|former|beloved|little|trusty)\s+)*"
_THING = r"(?P<t>[\w'&.+-]+(?:\s+[\w'&.+-]+){0,4}?)"
# where the ended thing stops: a conjunction, preposition, time or punctuation
_STOP = (
    r"(?=\s+(?:and|but|for|to|in|on|at|with|because|since|after|before|last|this|these|any|anymore|nowadays|now|back|instead|when|so|as|"
    r"two|three|a\s+few|months?|years?|weeks?)\b|\s*[,;.!]|$)"
)
_VERBS = "|".join(f.words for f in ENDED)
_ENDED_RE = re.compile(rf"\b(?:{_VERBS})\s+{_DET}{_THING}{_STOP}", re.IGNORECASE)
# a standing statement: present tense, holding or doing the thing
_STANDING_RE = re.compile(r"^\s*(?:\S+(?:\s+\S+){0,3}?)\s+(?:" + "|".join(f.words for f in STANDING) + ")", re.IGNORECASE)
# what took the ended thing's place, said in the same fact: "left X and joined Y", "traded X in for Y"
_TAKEN_UP_RE = re.compile(
    rf"(?:{'|'.join(f.words for f in TAKEN_UP)})\s+(?P<new>(?:(?:a|an|the|their|some)\s+)?{_THING}){_STOP}",
    re.IGNORECASE,
)
# "Jo and User split up", "User and Sam got divorced": the subject's partner is what ended
_PARTED_RE = re.compile(
    rf"^(?:(?P<a>[A-Z][\w'-]+) and User|User and (?P<b>[A-Z][\w'-]+))\s+(?:have\s+|had\s+|just\s+|finally\s+)*(?:{'|'.join(f.words for f in PARTED)})\b"
)
_NOT_STANDING_RE = re.compile(
    r"\b(?:not|never|no\s+longer|doesn't|don't|didn't|won't|anymore|used\s+to|will|'ll|going\s+to|"
    r"plans?\s+to|wants?\s+to|would|might|maybe|yesterday|last\s+\w+|went|visited)\b",
    re.IGNORECASE,
)
# a change to a new thing that names no old one, right after its subject: "User finally switched to a Pixel 8"
_SWITCH_RE = re.compile(
    rf"^\s+(?:(?:just|finally|recently|already|now|eventually|also|then|\w+ly)\s+)*(?:{'|'.join(f.words for f in SWITCHED)})\s+"
    rf"(?P<new>(?:(?:a|an|the|their|some)\s+)?{_THING}){_STOP}",
    re.IGNORECASE,
)
_ROLE_RES = tuple(re.compile(f.words, re.IGNORECASE) for f in ROLES)
# a stored role statement: "User's podcast app is Overcast", "User's pension is with Aviva"
_HELD_ROLE_RE = re.compile(
    rf"^(?P<s>User(?:'s\s+[a-z]+)?)'s\s+(?:main\s+)?[a-z][\w -]*?(?:\s+(?:is|are)\s+|'s\s+)(?:with\s+|from\s+)?(?P<thing>(?:(?:a|an|the)\s+)?{_THING}){_STOP}"
)
# "we" said by the user: the household's change is the user's
_WE = "User and others"
# a standing statement said as the state now: "User banks with Monzo now", "User uses Firefox these days"
_NOW_RE = re.compile(r"\b(?:now|these\s+days|nowadays|instead|from\s+now\s+on)\b", re.IGNORECASE)
_THING_AT_RE = re.compile(rf"^\s*(?P<thing>(?:(?:a|an|the|their|some)\s+)?{_THING}){_STOP}", re.IGNORECASE)
# a verb in the present simple after its subject, and the preposition it takes: "User writes with"
_PRESENT_RE = re.compile(r"\s+(?:\w+ly\s+)?(?P<v>[a-z]+)(?:\s+(?:with|at|from|to|on|in|for|by))?(?=\s)")
# after a comma, a clause of its own rather than words describing the thing
_LINKED_RE = re.compile(r",\s*(?:and|but|or|so|while|whereas|because|though|which|who|that)\b", re.IGNORECASE)
_LINKING = frozenset("is are was were it's that's they're i'm he's she's we're has have had".split())
_CLAUSE_END_RE = re.compile(r"\s*[,;]\s*|\s+(?:and|but|while|whereas)\s+", re.IGNORECASE)
_SOFT = frozenset("old former beloved little trusty new".split())
# what one holds of a thing rather than the thing ("cancelled the Riverside membership" ends "is a member
# of Riverside Climbing Centre"): not needed in the standing statement when the thing is named too
_HOLDING = frozenset("membership subscription volunteering job role position contract account plan place".split())
_WORD_RE = re.compile(r"[\w'&+-]+")


@dataclass(frozen=True, slots=True)
class EndedThing:
    """``subject`` stopped having, doing or belonging to ``thing``."""

    subject: str  # as written: "User", "User's son"
    thing: str  # as written: "old Golf", "chess club"


def subject_of(text: str) -> str:
    """The words naming whom a fact is about: "User", "User's son Leo", "Maya"."""
    out: list[str] = []
    for t in text.split():
        if t[:1].isupper() or (out and (out[-1].endswith("'s") or t.lower() in KIN)):
            out.append(t.strip(","))
            continue
        break
    return " ".join(out)


def ended_things(text: str) -> list[EndedThing]:
    """What ``text`` says its subject stopped having, doing or belonging to."""
    text = parsed(text)
    parted = _PARTED_RE.match(text)
    if parted:
        return [EndedThing("User", parted.group("a") or parted.group("b"))]
    subject = subject_of(text)
    if not subject or " and " in subject:
        return []
    out = []
    for m in _ENDED_RE.finditer(text):
        thing = m.group("t").strip()
        if _heads(thing):
            out.append(EndedThing(subject, thing))
    return out


def _stem(w: str) -> str:
    w = w.lower().removesuffix("'s")
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def _heads(thing: str) -> list[set[str]]:
    """The words that name the thing ("old Golf" -> golf), each with its forms ("smoking": smoke)."""
    words = [w for w in _WORD_RE.findall(thing) if w.lower() not in _SOFT and len(w) > 1]
    named = [w for w in words if w.lower() not in _HOLDING]
    return [_forms(w) for w in (named or words)]


def _forms(word: str) -> set[str]:
    w = _stem(word)
    if len(w) > 5 and w.endswith("ing"):  # "quit smoking" ends "smokes"; "gave up running", "runs"
        base = w[:-3]
        return {w, base, base + "e", base[:-1] if len(base) > 2 and base[-1] == base[-2] else base}
    return {w}


def _standing(subject: str, text: str, *, any_verb: bool = False, plural: bool = False) -> tuple[str, str] | None:
    """(verb phrase, its clause) when ``text`` (as the rules read it) is a standing statement by
    ``subject``: "User drives a VW Golf and rides a bike" -> ("User drives", " a VW Golf").
    ``any_verb``: any verb in the present simple will do ("User writes with a Lamy"), not only the
    table's; ``plural``: the subject takes the verb's plural ("we get our veg box from ...")."""
    if not text.startswith(subject + " ") or subject_of(text) != subject:
        return None
    m = _STANDING_RE.match(text) or (_PRESENT_RE.match(text, len(subject)) if any_verb else None)
    if m is None or _NOT_STANDING_RE.search(text) or _ENDED_RE.search(text):
        return None
    if m.re is _PRESENT_RE and not (_is_present_verb(m.group("v")) or (plural and is_base_verb(m.group("v")))):
        return None
    if "," in text[len(subject) : m.end()]:
        return None
    # the thing is in the standing verb's own clause: "studies nursing and works weekends at a Costa"
    # is not ended whole by leaving the Costa (what it says of nursing still holds)
    return text[: m.end()], _CLAUSE_END_RE.split(text[m.end() :], maxsplit=1)[0]


def _is_present_verb(word: str) -> bool:
    """``word`` is a verb's third person singular ("writes", "buys"; not "glasses", "is")."""
    stem = word[:-2] if word.endswith("es") and is_base_verb(word[:-2]) else word[:-1]
    return word.endswith("s") and word not in {"is", "has", "was", "does"} and is_base_verb(stem)


def ends(ended: EndedThing, stored_text: str) -> bool:
    """Whether ``stored_text`` is the standing statement, by the same subject, of what ``ended`` ends."""
    found = _standing(ended.subject, parsed(stored_text))
    if found is None:
        return False
    verb, clause = found
    words = {_stem(w) for w in _WORD_RE.findall(verb[len(ended.subject) :] + " " + clause)}
    heads = _heads(ended.thing)
    return bool(heads) and all(forms & words for forms in heads)


@dataclass(frozen=True, slots=True)
class Switch:
    """``subject`` changed to ``new`` ("a Pixel 8") without naming what it replaced; ``restated``:
    the fact is itself the standing statement of the new thing ("User banks with Monzo now")."""

    subject: str
    new: str
    restated: bool = False


def switched_to(text: str) -> Switch | None:
    """The change to a new thing ``text`` states without naming the old one, or None. A change
    that names what it ends is :func:`ended_things`'."""
    text = parsed(text)
    if _ENDED_RE.search(text):
        return None
    for role in _ROLE_RES:
        if (r := role.match(text)) is not None:
            new = _named(r.group("new"))
            return Switch("User", new) if new and "User" not in new else None
    text, _ = _as_user(text)
    subject = subject_of(text)
    m = _SWITCH_RE.match(" " + text)  # no subject ("Switched to OVO"): the speaker's
    if m is not None:
        subject = ""
    elif subject and " and " not in subject:
        m = _SWITCH_RE.match(text[len(subject) :])
    else:
        return None
    if m is not None:
        new = _named(m.group("new"))
        return Switch(subject or "User", new) if new else None
    if not subject or not _NOW_RE.search(text):
        return None
    new = standing_thing(subject, text)
    return Switch(subject, new, restated=True) if new else None


def standing_thing(subject: str, text: str) -> str | None:
    """The thing ``text`` says ``subject`` has, does or belongs to ("User is on an iPhone 12 at the
    moment": "an iPhone 12"), or None when it is no standing statement of theirs or says more than
    that."""
    text = parsed(text)
    held = _HELD_ROLE_RE.match(text)
    if held is not None and held.group("s") == subject:
        return _named(held.group("thing"))
    text, plural = _as_user(text) if subject == "User" else (text, False)
    found = _standing(subject, text, any_verb=True, plural=plural)
    if found is None or _says_more(text[len(found[0]) + len(found[1]) :]):
        return None  # a compound statement: replacing it would end what else it says
    m = _THING_AT_RE.match(found[1])
    return _named(m.group("thing")) if m is not None else None


def _as_user(text: str) -> tuple[str, bool]:
    """``text`` with "we" said by the user read as the user (the household's fact is theirs), and
    whether it was "we" (whose verb is plural)."""
    if text.startswith(_WE + " "):
        return "User" + text[len(_WE) :], True
    return text, False


def _named(found: str) -> str | None:
    """What a pattern found, without the punctuation after it, when it names a thing."""
    thing = found.strip().rstrip(".,;!")
    return thing if _heads(thing) else None


def _says_more(rest: str) -> bool:
    """Whether what follows a standing statement's clause states something of its own ("and rides a
    bike", ", it's my main hobby"), rather than describe the thing (", nothing fancy", ", the 2022 one")."""
    rest = rest.strip(" .!")
    if not rest:
        return False
    if not rest.startswith(",") or _LINKED_RE.match(rest):
        return True
    return any(w.lower() in _LINKING or _is_present_verb(w) or w == "User" for w in _WORD_RE.findall(rest))


def taken_up(text: str) -> str | None:
    """What the fact says took the ended thing's place ("User left Starling and joined Wise": "Wise";
    "User traded the Corsa in for a Zoe": "a Zoe"), or None."""
    m = _TAKEN_UP_RE.search(parsed(text))
    new = m.group("new").strip().rstrip(".,;!") if m else ""
    return new if new and _heads(new) else None


def with_new_thing(ended: EndedThing, stored_text: str, new: str) -> str | None:
    """The standing statement ``stored_text`` (which ``ended`` ends) said of ``new`` instead: "User
    works at Starling." -> "User works at Wise.", "User plays tennis every Tuesday." -> "User plays
    padel." (what followed the old thing described it, not the new one). None when the
    statement's verb cannot be told from its thing."""
    stored_text = parsed(stored_text)
    m = _STANDING_RE.match(stored_text)
    if m is None:
        return None
    verb = stored_text[: m.end()].rstrip()
    said = {_stem(w) for w in _WORD_RE.findall(verb[len(ended.subject) :])}
    if any(forms & said for forms in _heads(ended.thing)):  # the old thing is inside the verb phrase
        return None
    return written(f"{verb} {new}.")
