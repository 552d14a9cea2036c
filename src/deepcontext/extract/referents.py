"""What a pronoun points to: the one person the last sentences named, the last thing talked about
("our event pipeline", "a Subaru", the one organisation or place named), and when an "It is / has"
sentence is about that thing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from deepcontext.extract.entities import EntitySpan
from deepcontext.extract.facts import content_word_count
from deepcontext.extract.resolve import thing_phrase
from deepcontext.extract.slots import OBJECT_PRONOUN_RE, pronoun_attributes
from deepcontext.language.gazetteer import IRREGULAR_PAST
from deepcontext.types import EntityType

__all__ = ["IT_STATE_RE", "PRONOUN_START_RE", "Referents", "it_is_thing", "name_pronoun", "single_person", "single_thing"]


PRONOUN_START_RE = re.compile(r"^(?P<p>He|She|he|she)(?P<c>'s)?\s+|^(?P<poss>His|Her|his|her)\s+(?=[a-z])")


# "It is a small bakery", "It has four-wheel drive": what the thing named before is or has
# (present tense: "It was the best trip" judges an experience, which the last thing named rarely is)
IT_STATE_RE = re.compile(r"^It(?:'s|\s+is|\s+has)\s+(?P<rest>[a-z].*)$")


# ... unless "it" is no thing: weather, time, or a clause moved to the end ("It is hard to say")
_IT_DUMMY_RE = re.compile(
    r"^(?:been|getting|going|raining|snowing|pouring|windy|sunny|cloudy|freezing|cold|hot|warm|chilly|humid|late|"
    r"early|time|about|like|just|not|(?:(?:so|very|really|too|quite|a\s+bit|kind\s+of)\s+)?[a-z]+\s+(?:to|that|how|when|"
    r"for\s+\w+\s+to)\b)",
    re.IGNORECASE,
)


_SPEAKER_FIRST_RE = re.compile(r"^(?:I|I'm|I've|I'd|We|We're|We've|My|Our)\s", re.IGNORECASE)
_PLURAL_END_RE = re.compile(r"[^su]s$")
_THIRD_PERSON_RE = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their)\b", re.IGNORECASE)


_THING_TYPES = frozenset({EntityType.ORGANIZATION, EntityType.PRODUCT, EntityType.LOCATION, EntityType.TECHNOLOGY})


@dataclass(slots=True)
class Referents:
    """What a pronoun can point to: the last single person named, and the sentences said so far
    (read back for the last thing talked about only when an "It" needs it)."""

    person: str | None = None
    #: the message that named ``person``
    person_in: int = -1
    #: the people taking part in the conversation (message names, the user's display name)
    participants: frozenset[str] = frozenset()
    #: (sentence, speaker, the one named thing it mentions), newest last
    said: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    #: the relatives a pronoun with no antecedent can be, by "gender|attribute" (see ExtractionContext)
    kin: dict[str, str] = field(default_factory=dict)

    def relative(self, sentence: str, pronoun: str) -> str | None:
        """Whom a "She ..." / "He ..." (or a moved "him" / "her") that no earlier sentence names stands
        for: the one relative of that sex whose fact of the same kind is stored ("daughter" for "She
        moved to Brightwater Primary" when her school is known), else None."""
        if self.person is not None or not self.kin:
            return None
        gender = "f" if pronoun.lower() in ("she", "her") else "m"
        found = {k for a in pronoun_attributes(sentence) if (k := self.kin.get(f"{gender}|{a}"))}
        return found.pop() if len(found) == 1 else None

    def name_object(self, text: str, speaker: str) -> str:
        """``text`` with a moved "him" / "her" named as the relative it stands for ("User moved him to Elm
        Park Primary" -> "User moved User's son to Elm Park Primary"), when :meth:`relative` knows."""
        m = OBJECT_PRONOUN_RE.search(text)
        kin = self.relative(text, m.group("p")) if m is not None else None
        return text if m is None or kin is None else f"{text[: m.start('p')]}{speaker}'s {kin}{text[m.end('p') :]}"

    def thing(self, before: int) -> tuple[str | None, bool]:
        """The last thing talked about in the sentences before ``before``, and whether "it" surely
        means it: the only thing its sentence named ("a new job at Stripe" names two), singular,
        in a sentence about the speaker ("I bought a Subaru"; in "Painting's a fun way to express my
        feelings" the thing is the subject)."""
        for text, speaker, named in reversed(self.said[:before]):
            here = thing_phrase(text, speaker) if len(text) >= 6 and text.isascii() else None
            thing = here or named
            if thing:
                sure = (
                    not (here and named and named.lower() not in here.lower())
                    and _about_speaker(text)
                    and _PLURAL_END_RE.search(thing) is None
                )
                return thing, sure
        return None, True

    def companion(self, named_here: str | None, index: int) -> str | None:
        """Who "we" includes besides the speaker: the one person this sentence names, else the one the
        same message named before; never someone taking part in the conversation (told something,
        not a companion by being addressed)."""
        who = named_here or (self.person if self.person_in == index else None)
        return None if who is None or who.lower() in self.participants else who


def _about_speaker(text: str) -> bool:
    """The sentence's subject is the speaker: "I ...", "My ...", or no subject ("Bought a Kia Niro")."""
    if _SPEAKER_FIRST_RE.match(text):
        return True
    first = text.split(" ", 1)[0].lower()
    return first in IRREGULAR_PAST or (first.endswith("ed") and len(first) > 4)


def it_is_thing(rest: str, thing: str | None, sure: bool) -> bool:
    """Whether the "It" of "It is / has <rest>" is ``thing``: the one thing named, a predicate saying
    something of its own about it, no dummy "it" (weather, time, "It is hard to ...") and no person it
    would leave unnamed."""
    return (
        thing is not None
        and sure
        and content_word_count(rest) >= 2
        and _IT_DUMMY_RE.match(rest) is None
        and _THIRD_PERSON_RE.search(rest) is None
    )


def single_thing(spans: list[EntitySpan]) -> str | None:
    """The one named organisation, product or place a sentence mentions, if exactly one."""
    cands = [sp.name for sp in spans if sp.type in _THING_TYPES and not sp.possessive]
    return cands[0] if len(cands) == 1 else None


def name_pronoun(s: str, p: re.Match[str], name: str) -> str:
    """ "She starts ..." -> "Jo starts ...", "She's a beagle" -> "Jo is a beagle", "Her boss ..." ->
    "Jo's boss ..."."""
    rest = s[p.end() :]
    if p.group("p") is None:
        return name + "'s " + rest
    if p.group("c"):  # "she's been" is "has been", else "is"
        aux = "has" if rest.startswith(("been ", "got ", "had ")) or rest.split(" ", 1)[0].endswith("ed") else "is"
        return f"{name} {aux} {rest}"
    return name + " " + rest


def single_person(spans: list[EntitySpan], speaker: str) -> str | None:
    """The one named person or pet a sentence introduces (for "He..." / "She..." next), if exactly one."""
    cands = [
        sp.name
        for sp in spans
        if sp.type in (EntityType.PERSON, EntityType.OTHER) and sp.name.lower() != speaker.lower() and not sp.possessive
    ]
    return cands[0] if len(cands) == 1 else None
