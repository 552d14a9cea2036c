"""A user introducing themselves: "I'm Tomas", "my name is Olga", "call me Bea", "Kofi here".

:func:`introduced_name` returns the name when a user turn introduces its speaker, else ``None``. The
word after the cue must be one the entity recogniser takes for a person (a known first name, or an
unknown capitalised word), not a place, nationality, language, organisation or common word: "I'm
Italian", "I'm in Paris", "I'm a nurse" and "I'm tired" name no one.
"""

from __future__ import annotations

import re

from deepcontext.extract.entities import find_entities
from deepcontext.extract.verbs import is_base_verb
from deepcontext.language.gazetteer import ADVERBS, CONTENT_STOP, JOB_NOUNS, LANGUAGES, NATIONALITIES, STOPCAPS, TITLES
from deepcontext.types import EntityType

__all__ = ["introduced_name"]

_NAME = r"(?P<name>[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ'-]+(?:\s+[A-ZÀ-ÖØ-Þ][a-zà-öø-ÿ'-]+)?)"
# after "I'm X" the sentence ends or goes on to something else; "I'm Jo Smith from..." is a name too
_AFTER = r"(?=\s*(?:$|[,.!?;:)—–-])|\s+(?i:and|from|by|here|btw|but)\b)"
# the cues read in any case, the name only capitalised
_INTRO_RES = [
    re.compile(rf"(?i:(?:^|[,.!?;:]\s*|\b(?:hi|hey|hello|hiya)\b[\s,!]*)(?:i'm|i\s+am|im)\s+){_NAME}{_AFTER}"),
    re.compile(rf"(?i:\bmy\s+name(?:'s|\s+is)\s+){_NAME}"),
    re.compile(rf"(?i:\bcall\s+me\s+){_NAME}"),
    re.compile(rf"^\s*(?i:(?:(?:hi|hey|hello)[\s,!]+)?(?:it's\s+|this\s+is\s+)?){_NAME}(?i:\s+here\b)"),
    # after a greeting, "this is X" / "it's X" opens a message as a phone call does
    re.compile(rf"^\s*(?i:(?:hi|hey|hello|hiya)(?:\s+there)?[\s,!]+(?:this\s+is|it's|it\s+is)\s+){_NAME}{_AFTER}"),
]
# endings of adjectives ("Hopeful", "Nervous"); participles are told by their verb
_ADJECTIVE_RE = re.compile(r"(?:ful|ous|ive|able|ible|less|ish)$")
# what follows a name as its apposition, not a clause of its own
_APPOSITION_RE = re.compile(r"\s*(?i:a|an|the|one\s+of)\s")
_PEOPLES = NATIONALITIES | LANGUAGES | TITLES  # written capitalised
_COMMON = STOPCAPS | CONTENT_STOP | ADVERBS | JOB_NOUNS  # written lower-case


def _word_ok(word: str) -> bool:
    low = word.lower()
    return word[0].isupper() and word not in _PEOPLES and low not in _COMMON and not is_base_verb(low)


def introduced_name(text: str) -> str | None:
    """The name a user gives themselves in ``text``, else ``None``."""
    for i, rx in enumerate(_INTRO_RES):
        for m in rx.finditer(text):
            name = _name_at(text, m, EntityType.LOCATION if i in (1, 2) else None)  # "my name is Jordan"
            if name:
                return name
    return None


def _adjective(word: str) -> bool:
    if word.endswith("ed"):  # "Retired", "Married", "Stressed" (not "Fred", "Ahmed")
        stem = word[:-2]
        return any(is_base_verb(v) for v in (stem, stem + "e", stem[:-1], stem[:-1] + "y"))
    if word.endswith("ing"):  # "Moving", "Leaving" (not "Sterling")
        return any(is_base_verb(v) for v in (word[:-3], word[:-3] + "e", word[:-4]))
    return bool(_ADJECTIVE_RE.search(word))


def _name_at(text: str, m: re.Match[str], also: EntityType | None) -> str | None:
    name, start = m.group("name"), m.start("name")
    if not all(_word_ok(w) for w in name.split()):
        return None
    # the recogniser reads the name where it stands; a sentence-initial "Kofi here" is read after "with"
    spans = find_entities(text) if start > 0 else find_entities(f"with {name}")
    shift = 0 if start > 0 else start - len("with ")
    for s in spans:
        if s.start + shift == start and s.type in (EntityType.PERSON, EntityType.OTHER, also):
            if s.type is not EntityType.PERSON and _adjective(name.split()[0].lower()):
                return None  # "I'm Excited", "I'm Engaged": a word the recogniser does not know as a name

            return s.name if s.name.split()[0] == name.split()[0] else name.split()[0]
    return None


_LEAD_RE = re.compile(
    rf"^\s*(?i:(?:(?:hi|hey|hello|hiya)\b(?:\s+there\b)?[\s,!]*)?(?:(?:i'm|i\s+am|im|my\s+name(?:'s|\s+is)|(?:just\s+)?call\s+me|this\s+is|it's|it\s+is)\s+)?)"
    rf"{_NAME}(?i:\s+here)?(?:\s*(?:[,.;!:—–-]+\s*|\s+(?i:and)\s+|$))"
)


def drop_introduction(sentence: str, speaker: str) -> str:
    """``sentence`` without its opening self-introduction by ``speaker`` ("Hey, I'm Tomas, I share a
    flat" -> "I share a flat"; "" when the sentence is only that): the name is the speaker's already."""
    m = _LEAD_RE.match(sentence)
    if m is None or m.group("name").split()[0] != speaker.split()[0] or introduced_name(sentence[: m.end()]) is None:
        return sentence
    rest = sentence[m.end() :]
    if _APPOSITION_RE.match(rest):  # "I'm Maya, a data engineer at ...": the rest says who she is
        return sentence
    return rest[:1].upper() + rest[1:]
