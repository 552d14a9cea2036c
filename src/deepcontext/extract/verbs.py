"""English verbs for the rewrites: the third person of a verb, whether a word is a verb's base form,
and verbs joined by "and" made to agree with a rewritten subject.

Whether a word is a verb's base form (and whether it can also be a noun) comes from lemminflect's
lexicon: a package with its data inside the wheel, loaded on first use (~50 MB), nothing downloaded.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from deepcontext.language.gazetteer import words

__all__ = ["AGREE", "agree_coordinated", "is_base_verb", "lemmas_of", "lexicon", "third_person"]

AGREE = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
    "ain't": "isn't",
    "be": "is",
    "go": "goes",
    "wanna": "wants to",
    "gotta": "has to",
}


def third_person(verb: str) -> str:
    """``love`` -> ``loves``, ``watch`` -> ``watches``, ``study`` -> ``studies``, ``have`` -> ``has``."""
    low = verb.lower()
    if low in AGREE:
        out = AGREE[low]
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = low + "es"
    elif len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        out = low[:-1] + "ies"
    else:
        out = low + "s"
    if len(verb) > 1 and verb.isupper():
        return out.upper()
    return out.capitalize() if verb[:1].isupper() else out


_COORD_RE = re.compile(
    r"\b(?P<and>and|but|then)\s+(?P<adv>(?:(?:also|still|usually|often|sometimes|always|never|really)\s+)?)"
    r"(?P<v>[a-z]+)(?=\s+[A-Za-z0-9]|[.,;!]|$)"
)
_TO_VERB_RE = re.compile(r"\bto ([a-z]+)")
_MODAL_RE = re.compile(r"\b(?:can|could|will|would|shall|should|may|might|must|did|didn't|don't|doesn't|won't|can't)\s")
_NEVER_BASE = words("is was has does goes said the a an to and or but not too as so more less")


@functools.cache
def lexicon() -> Any:
    """lemminflect with its lemma table loaded (about a second, once per process: load it off the
    event loop, e.g. through :meth:`~deepcontext.extract.rules.RuleExtractor.prepare`)."""
    import lemminflect

    lemminflect.getAllLemmas("work")  # the table loads on first use
    return lemminflect


@functools.lru_cache(maxsize=8192)
def lemmas_of(word: str) -> dict[str, tuple[str, ...]]:
    """The lemmas of ``word`` per part of speech ("pears" -> {"NOUN": ("pear",)}); do not mutate."""
    return dict(lexicon().getAllLemmas(word))


@functools.lru_cache(maxsize=8192)
def is_base_verb(word: str) -> bool:
    """``word`` is a verb's base form in lemminflect's lexicon ("work", "sing"; not "pears")."""
    if word in _NEVER_BASE or not word.isalpha():
        return False
    return word in lexicon().getAllLemmas(word, upos="VERB").get("VERB", ())


def agree_coordinated(text: str, subject_end: int) -> str:
    """Verbs after ``subject_end`` joined to a singular subject's verb by "and" / "but" / "then" take the
    third person ("lives in Lisbon and work at Globex" -> "and works at Globex"), up to the next clause
    (a new subject, a modal or an infinitive ends it)."""
    end = len(text)
    for stop in (
        ". ",
        "; ",
        " because ",
        " when ",
        " while ",
        " that ",
        " who ",
        " if ",
        " - ",
        ", they",
        ", it",
        ", we",
        ", you",
        ", he",
        ", she",
        ", i ",
    ):
        k = text.find(stop, subject_end)
        if k != -1:
            end = min(end, k)
    region = text[subject_end:end]
    if " and " not in region and " but " not in region and " then " not in region:
        return text

    def repl(m: re.Match[str]) -> str:
        v = m.group("v")
        # a list ("tea, cake and cook") or the end ("a cat and dog."): a word that can be a noun stays
        tail = m.string[m.end() :]
        listed = tail.startswith(" and ") or not tail[:2].strip(" ").isalnum()
        if not is_base_verb(v) or (listed and "NOUN" in lemmas_of(v)):
            return m.group(0)
        if any(is_base_verb(t) for t in _TO_VERB_RE.findall(m.string, 0, m.start())):
            return m.group(0)  # "likes to read and write books": an infinitive's second verb
        if _MODAL_RE.search(m.string, 0, m.start()):
            return m.group(0)  # "is happy Jo could share and help": the modal's verbs
        return f"{m.group('and')} {m.group('adv')}{third_person(v)}"

    return text[:subject_end] + _COORD_RE.sub(repl, region) + text[end:]
