"""Possessives as a careful writer puts them: "User broke their wrist", not "User broke User's wrist";
"the servers of Priya's team went down", not "Priya's team's servers went down"."""

from __future__ import annotations

import re

from deepcontext.extract.replacements import subject_of
from deepcontext.extract.verbs import lemmas_of

__all__ = ["tidy_possessives"]

# what may follow the head noun of a chain for the chain to end there: a verb, a preposition, the end
_VERBISH = (
    r"(?:is|was|are|were|has|have|had|will|would|can|could|got|went|came|broke|died|and|but|in|on|at|for|with|"
    r"to|from|of|[a-z]+ed)"
)
_VERBISH_RE = re.compile(rf"{_VERBISH}$")
_CHAIN_RE = re.compile(r"\b(?P<owner>[A-Z][\w-]*)'s (?P<mids>(?:[a-z][\w-]*'s )+)(?P<words>[\w-]+(?: [a-z][\w-]*){0,2})")


def tidy_possessives(text: str, speaker: str) -> str:
    """``text`` with its subject's own things as "their" once the subject is named ("User lost their
    keys", "Sam's team is migrating their database"), and a chain of two possessives turned round.
    ``speaker`` is who "User and their wife" can be."""
    subject = subject_of(text)
    if subject.startswith(speaker + " and ") or subject == speaker:
        subject = speaker
    return _unchain(_their(text, subject)) if subject else _unchain(text)


def _their(text: str, subject: str) -> str:
    """ "User lost User's keys" -> "User lost their keys", up to where the subject is named again as a
    subject ("User told their boss User needs a raise")."""
    lead = subject + " "
    if not text.startswith(lead):
        return text
    if text.startswith(lead + "and "):  # "User and Sam gave ... their": whose? only "User and their wife"
        return text.replace(f"{lead}and {subject}'s ", f"{lead}and their ", 1)
    own = re.compile(rf"\b{re.escape(subject)}'s\s")
    # up to a new clause: the subject again, or a comma ("..., they are a great escape and get Sam's
    # mind going": whose mind would "their" be?)
    again = re.compile(rf"\b{re.escape(subject)}\b(?!')|[,;:(]")
    stop = again.search(text, len(lead))
    end = stop.start() if stop else len(text)
    return lead + own.sub("their ", text[len(lead) : end]) + text[end:]


def _verbish(word: str) -> bool:
    """A word that can follow a noun phrase's head: an auxiliary, a preposition, an inflected verb."""
    if _VERBISH_RE.match(word):
        return True
    verbs = lemmas_of(word).get("VERB", ())
    return bool(verbs) and word not in verbs  # an inflected verb: "won", "looks", "flooded"


def _head(words: list[str], rest: str) -> int:
    """How many of ``words`` (after a chain's last possessive) name its head: one or two, followed by a
    verb, a preposition or the end; 0 when neither is."""
    for n in (1, 2):
        if n > len(words) or (n == 2 and (_verbish(words[1]) or "NOUN" not in lemmas_of(words[1]))):
            break
        after = words[n] if n < len(words) else None
        if after is None and (not rest or rest[0] in ".,;!?") or after is not None and _verbish(after):
            return n
    return 0


def _unchain(text: str) -> str:
    def turn(m: re.Match[str]) -> str:
        # "A's b's c's d" -> "the d of the c of A's b"
        words = m.group("words").split(" ")
        n = _head(words, text[m.end() :].lstrip())
        if n == 0:
            return m.group(0)
        mids = [w.removesuffix("'s") for w in m.group("mids").split()]
        inner = "".join(f"the {w} of " for w in reversed(mids[1:]))
        out = f"the {' '.join(words[:n])} of {inner}{m.group('owner')}'s {mids[0]}"
        tail = " ".join(words[n:])
        out = out[0].upper() + out[1:] if m.start() == 0 else out
        return f"{out} {tail}" if tail else out

    return _CHAIN_RE.sub(turn, text)
