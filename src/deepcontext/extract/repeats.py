"""A subject named again in its own sentence, as a careful writer puts it: "User still eats meat, but
they have cut down a lot", not "..., but User has cut down a lot"; "User thinks they should quit",
not "User thinks User should quit".

Only the sentence's own subject is replaced, only where it opens a later clause (before its verb) or
owns something ("their"), and only when no one else is named in between who "they" could mean
(another name, a relative, he / she / they...). A replacement that would change what the rules read
from the sentence (its slots) is not made.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from deepcontext.extract.verbs import is_base_verb, lemmas_of
from deepcontext.language.gazetteer import ADVERBS, IRREGULAR_PAST, KIN, words

__all__ = ["they_for_repeats"]

#: the verb after a plural "they"
_PLURAL = {
    "is": "are",
    "was": "were",
    "has": "have",
    "does": "do",
    "isn't": "aren't",
    "wasn't": "weren't",
    "hasn't": "haven't",
    "doesn't": "don't",
}
_MODALS = words(
    """can could will would shall should may might must can't couldn't won't wouldn't shouldn't mustn't
    cannot had hadn't did didn't"""
)
#: words that open a clause: a subject after one is the clause's own
_OPENERS = words(
    """and but so because since when whenever while if though although as after before until unless once
    then that or yet where"""
)
#: anyone else "they" could mean
_OTHERS = words("he she him her his hers they them we us") | frozenset(KIN)
_WORD_RE = re.compile(r"[A-Za-z][\w'-]*")


def they_for_repeats(text: str, subject: str, slots: Callable[[str], object] | None = None) -> str:
    """``text`` (about ``subject``, whom it opens with) with the subject's later mentions as "they" /
    "their" where a careful writer would put them. ``slots``: a function giving what the rules read
    from a text; a replacement that changes it is not made."""
    if not text.startswith(subject + " ") or text.startswith(subject + " and ") or text.count(subject) < 2:
        return text
    mention = re.compile(rf"(?<![\w'-]){re.escape(subject)}(?P<poss>'s)?(?![\w-])(?!'(?!s\b))")
    out: list[str] = []
    kept = 0  # how far the text is copied into out
    seen = len(subject)  # end of the last mention: who is named after it may block the next
    for m in mention.finditer(text, len(subject)):
        between, seen = text[seen : m.start()], m.end()
        if _someone_else(between):
            continue
        if m["poss"]:
            out += [text[kept : m.start()], "their"]
            kept = m.end()
            continue
        verb = _clause_verb(text, m)
        if verb is None:
            continue
        start, end, plural = verb
        out += [text[kept : m.start()], "they", text[m.end() : start], plural]
        kept = end
    if not out:
        return text
    new = "".join(out) + text[kept:]
    if slots is not None and slots(new) != slots(text):
        return text
    return new


def _someone_else(between: str) -> bool:
    """Whether ``between`` names anyone "they" could mean instead of the subject."""
    for w in _WORD_RE.findall(between):
        if w[0].isupper() or w.lower() in _OTHERS or w.lower().removesuffix("'s") in _OTHERS:
            return True
    return False


def _clause_verb(text: str, m: re.Match[str]) -> tuple[int, int, str] | None:
    """Where the verb of the clause a mention opens is, and its form after "they"; None when the
    mention does not open a clause (an object: "asked Sam to call User back")."""
    before = _WORD_RE.findall(text[: m.start()])
    opens = not before or before[-1].lower() in _OPENERS or text[: m.start()].rstrip().endswith((",", ";", ":"))
    pos = m.end()
    for w in _WORD_RE.finditer(text, pos):
        if text[pos : w.start()].strip():  # punctuation first: no verb follows
            return None
        low = w.group(0).lower()
        if low in ADVERBS or low in ("not", "never", "also", "still", "just", "really", "finally"):
            pos = w.end()
            continue
        if low in _PLURAL:
            return w.start(), w.end(), _PLURAL[low]
        if low in _MODALS:
            return w.start(), w.end(), w.group(0)
        if not opens:
            return None
        verbs = lemmas_of(low).get("VERB", ())
        if low in IRREGULAR_PAST or (low.endswith("ed") and verbs):
            return w.start(), w.end(), w.group(0)
        if low.endswith("s") and verbs and not is_base_verb(low):
            base = next((v for v in verbs if low.startswith(v[:-1])), verbs[0])
            return w.start(), w.end(), base
        return None
    return None
