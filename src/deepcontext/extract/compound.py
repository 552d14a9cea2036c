"""Compound statements split into their facts: "User lives in Leeds and teaches maths at Parkside"
is two facts, so a later move supersedes where the user lives and leaves where they teach.

A fact is split only where a part states a single-valued fact (a slot,
:mod:`deepcontext.extract.slots`) that no other part states, and every part stands as a fact of its
own (it states a slot, or says at least three content words besides its subject): everything else
("User went to the lake and swam", "User lives in Leeds and loves it", "User packed up and moved to
Denver") stays one memory, as it was said.
"""

from __future__ import annotations

import re

from deepcontext.extract.facts import content_word_count
from deepcontext.extract.replacements import subject_of
from deepcontext.extract.slots import find_slots

__all__ = ["split_compound"]

# where two clauses meet: ", and", "and", ";", ", but" (a comma alone joins list items more often)
_JOIN_RE = re.compile(r"\s*;\s+|,?\s+(?:and|but|while|plus)\s+(?:also\s+|now\s+|still\s+)?", re.IGNORECASE)
# a clause that opens with its own subject: a name, "User's sister", a pronoun
_OWN_SUBJECT_RE = re.compile(r"^(?:[A-Z][\w'-]*|(?:he|she|they|we|it)\b)")
# a clause that opens with a verb ("teaches maths at ..."): it shares the first clause's subject
_VERB_START_RE = re.compile(r"^(?:[a-z]+(?:s|ed)|has|is|was|got|took|left|drives|goes|works)\b")
_MAX_PARTS = 4
# content words a clause without a slot needs besides its subject: three when it borrows the other
# clause's subject ("packed up and moved" stays whole), two when it names its own ("User is lactose
# intolerant", "User is learning the shamisen")
_MIN_WORDS = 3
_MIN_WORDS_OWN_SUBJECT = 2
# a clause that leans on the other one: "... and loves it", "... and started there today"
_DANGLING_RE = re.compile(r"\b(?:it|there|them|then|one|too|as\s+well)\b|\b(?:that|this)\s*$", re.IGNORECASE)


def _keys(text: str, speaker: str) -> set[str]:
    return {s.key for s in find_slots(text, speaker)}


def split_compound(text: str, speaker: str) -> list[str]:
    """``text`` as one or more facts (each ending as ``text`` does); ``[text]`` when it is not a
    compound of distinct single-valued facts."""
    body = text.rstrip()
    end = body[-1] if body and body[-1] in ".!" else "."
    body = body.rstrip(".!")
    subject = subject_of(body)
    if not subject:
        return [text]
    parts: list[str] = []
    rest = body
    for _ in range(_MAX_PARTS - 1):
        cut = _split_once(rest, subject, speaker)
        if cut is None:
            break
        left, rest = cut
        parts.append(left)
    if not parts:
        return [text]
    parts.append(rest)
    keys = [_keys(p, speaker) for p in parts]
    if len(set().union(*keys)) < sum(map(len, keys)):
        return [text]  # two parts state the same slot: one fact said twice, keep it whole
    return [p + end for p in parts]


def _split_once(body: str, subject: str, speaker: str) -> tuple[str, str] | None:
    """The first join where a side states a slot the other does not and both stand as facts (the
    right side given the left's subject when it has none)."""
    for m in _JOIN_RE.finditer(body):
        left, right = body[: m.start()].strip(" ,"), body[m.end() :].strip()
        if not left or not right:
            continue
        borrowed = bool(_VERB_START_RE.match(right))
        if borrowed:
            right = f"{subject} {right}"
        elif not _OWN_SUBJECT_RE.match(right) or right.split()[0].lower() in ("he", "she", "they", "we", "it"):
            continue  # a pronoun subject is read with the whole sentence
        if _DANGLING_RE.search(right):
            continue
        lk, rk = _keys(left, speaker), _keys(right, speaker)
        if (lk or rk) and not lk & rk and _says_enough(left, lk, own=True) and _says_enough(right, rk, own=not borrowed):
            return left, right
    return None


def _says_enough(clause: str, keys: set[str], *, own: bool) -> bool:
    """A clause stands as a fact of its own: it states a slot, or says enough content words besides
    its subject ("loves hiking in the Dales" does; "packed up" does not). ``own``: the clause names
    its subject itself."""
    if keys:
        return True
    subject = subject_of(clause)
    need = _MIN_WORDS_OWN_SUBJECT if own else _MIN_WORDS
    return content_word_count(clause) - content_word_count(subject) >= need
