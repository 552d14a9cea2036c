"""A rule checker for memory text: the defects a rewrite can leave behind, and what a memory must
not still say (a pronoun without its referent, a date relative to nothing).

:func:`defects` reports, per text: ``agreement`` (a named or possessed singular subject with a base-form
verb, "Ana work at"; a verb joined by "and" to a third-person verb left in the base form, "lives in
Lisbon and work at"), ``doubled`` ("on on", "the the"), ``prepositions`` ("since in 2024", "on in the
week"), ``quote-wrapper`` ("Maya said: ..."), ``possessive`` ("Ana's's"), ``article`` ("a apple"),
``spacing`` (double spaces, a space before punctuation), ``capital`` (lower-case start), ``end``
(no final punctuation), ``possessive-chain`` ("Priya's team's servers"), ``self-possessive`` ("User
broke User's wrist": "their"), ``repeated-subject`` (the subject named again where a careful writer
says "they": "User is tired because User worked late"), ``glued`` (episodes listed with their dates and semicolons instead of
one sentence) and ``emoji``. :func:`unresolved` reports ``pronoun`` (a memory opening with he / she / it /
they / his / her..., or saying we / our / us) and ``relative-date`` (yesterday, next month, three
days ago...). English text only: Chinese memories are checked for dates alone.
"""

from __future__ import annotations

import re

from deepcontext.extract.repeats import they_for_repeats
from deepcontext.extract.verbs import is_base_verb, lemmas_of
from deepcontext.language.gazetteer import words
from deepcontext.language.unnamed import parsed

__all__ = ["defects", "unresolved"]

_WORD_RE = re.compile(r"[A-Za-z][\w'-]*")
_MODAL_LIKE = words("can could will would shall should may might must did does do to not never")
_SUBJECT_RE = re.compile(r"(?:^|[,;]\s+|\b(?:and|but|that|because|when|so)\s+)(?P<s>[A-Z][a-z]+)\s+(?P<v>[a-z]+)\b")
_COMPOUND_RE = re.compile(r"\b(?:and|or|&)\s+$")
_VBZ_AND_RE = re.compile(r"\b(?P<vz>[a-z]+s)\b(?P<mid>[^.;]{1,60}?)\band\s+(?P<v>[a-z]+)\b(?P<after>\s+[a-z0-9]|\s*[.;,!]|$)")
_DOUBLED_RE = re.compile(r"\b(on|in|at|the|a|an|is|was|has|to|of|and|for|with)\s+\1\b", re.IGNORECASE)
_PREP_PAIR_RE = re.compile(
    r"\b(?:on|in|at|since|from|during|by|until)\s+(?:on|in|at)\s+(?!least\b|the\s+(?:morning|evening|night|afternoon))",
    re.IGNORECASE,
)
_QUOTE_RE = re.compile(r"^[A-Z][\w' ]{0,40}\s(?:said|says|wrote|told\s+\w+):\s")
_POSS_RE = re.compile(r"'s's\b")
_CHAIN_RE = re.compile(r"\b[\w-]+'s [\w-]+'s\b")
_LEAD_NAME_RE = re.compile(r"^([A-Z][\w-]*) (?!and\b)")
# consolidation that lists episodes instead of saying what they share: "...(2024-05-01); ...(2024-06-02)"
_GLUED_RE = re.compile(r"\([^()]*\d{4}[^()]*\)\s*;")
_EMOJI_RE = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF]")
_ARTICLE_RE = re.compile(r"\ba\s+(?![Uu]ni|[Uu]s[eu]|[Oo]ne|[Ee]u|[Uu]r)[aeiouAEIOU][a-z]")
_SPACING_RE = re.compile(r"\S {2,}\S|\s[,.;:!?](?:\s|$)")
_TO_VERB_RE = re.compile(r"\bto ([a-z]+)\b")
_NEW_CLAUSE_RE = re.compile(
    r"\b(?:can|could|will|would|should|may|might|must|did|didn't|don't|doesn't)\s|"
    r",\s+(?:they|it|we|you|he|she|i)\b|\s-\s"
)

_PRONOUN_START_RE = re.compile(r"^(?:he|she|it|they|his|her|its|their|them|him|this|these|those)\b", re.IGNORECASE)
_WE_RE = re.compile(r"(?<![\w'-])(?:we|us|our|ours|ourselves)(?![\w'-])", re.IGNORECASE)
_RELATIVE_RE = re.compile(
    r"\b(?:yesterday|today|tomorrow|tonight|last\s+night|this\s+(?:morning|afternoon|evening)"
    r"|(?:last|next|this|coming)\s+(?:week|weekend|month|year|summer|winter|spring|autumn|fall|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)"
    r"|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|several)\s+(?:days?|weeks?|months?|years?)\s+ago"
    r"|in\s+(?:\d+|a|an|one|two|three|four|five|a\s+few)\s+(?:days?|weeks?|months?|years?))\b",
    re.IGNORECASE,
)
_ZH_RELATIVE_RE = re.compile(r"昨天|前天|今天|明天|后天|上周|下周|上个月|下个月|去年|明年|今年")


def _lemma_tags(word: str) -> set[str]:
    return set(lemmas_of(word))


def _common_word(word: str) -> bool:
    """A capitalised word that is an English word (a sentence's first word), not a name."""
    return word in _FUNCTION or bool(lemmas_of(word))


_FUNCTION = words("i you we they the a an to never always also just then first this that these those there")


def _agreement(text: str) -> list[str]:
    out: list[str] = []
    for m in _SUBJECT_RE.finditer(text):
        v = m.group("v")
        if v in _MODAL_LIKE or not is_base_verb(v) or "ADV" in _lemma_tags(v):
            continue  # "Tess still needs": an adverb, not the verb
        if _COMPOUND_RE.search(text, 0, m.start("s")) or _common_word(m.group("s").lower()):
            continue  # "Jo and Ana live", "The rent is", "Never deploy on Fridays"
        out.append(f"agreement: {m.group('s')} {v}")
    for m in _VBZ_AND_RE.finditer(text):
        vz, v = m.group("vz"), m.group("v")
        if vz.endswith("ss") or not is_base_verb(vz[:-1]) and not is_base_verb(vz[:-2]) and vz != "has" and vz != "is":
            continue
        mid = m.group("mid")
        if not is_base_verb(v) or v in _MODAL_LIKE or _TO_VERB_RE.search(mid) or _NEW_CLAUSE_RE.search(mid):
            continue  # "could share and help", "movies, they are ... and get": another verb's partner
        after = m.group("after").strip()
        if (not after or after[:1] in ".;,!") and "NOUN" in lemmas_of(v):
            continue  # "has a cat and dog."
        out.append(f"agreement: {vz} ... and {v}")
    return out


def defects(text: str) -> list[str]:
    """Grammar defects of one memory text (see the module docstring); empty when it reads well."""
    t = text.strip()
    if not t:
        return ["empty"]
    if not t.isascii() and re.search(r"[\u4e00-\u9fff]", t):
        return []
    r = parsed(t)  # "The user ..." read as the rules' placeholder, a name like any other
    out = _agreement(r)
    for m in _DOUBLED_RE.finditer(t):
        out.append(f"doubled: {m.group(0)}")
    for m in _PREP_PAIR_RE.finditer(t):
        out.append(f"prepositions: {m.group(0).strip()}")
    if _QUOTE_RE.search(r):
        out.append("quote-wrapper")
    if _POSS_RE.search(t):
        out.append("possessive")
    for m in _CHAIN_RE.finditer(t):
        out.append(f"possessive-chain: {m.group(0)}")
    if (lead := _LEAD_NAME_RE.match(r)) is not None and _self_possessive(r[lead.end() :], lead.group(1)):
        out.append(f"self-possessive: {lead.group(1)}'s")  # "User broke User's wrist": "their"
    if lead is not None and they_for_repeats(r, lead.group(1)) != r:
        out.append(f"repeated-subject: {lead.group(1)}")  # "User is tired because User worked late": "they"
    if _GLUED_RE.search(t):
        out.append("glued")
    if _EMOJI_RE.search(t):
        out.append("emoji")
    for m in _ARTICLE_RE.finditer(t):
        out.append(f"article: {m.group(0)}")
    if _SPACING_RE.search(t):
        out.append("spacing")
    if t[0].islower():
        out.append("capital")
    if t[-1] not in ".!?\"')":
        out.append("end")
    return out


def _self_possessive(rest: str, name: str) -> bool:
    """``name``'s in the clause ``name`` is the subject of (up to a comma or ``name`` named again)."""
    end = re.search(rf"[,;:(]|\b(?:{re.escape(name)}|they)\b(?!')", rest)  # "they": the name said again
    return re.search(rf"\b{re.escape(name)}'s\s", rest[: end.start() if end else len(rest)]) is not None


def unresolved(text: str) -> list[str]:
    """``pronoun`` and / or ``relative-date`` when the memory still needs its conversation to be read."""
    out: list[str] = []
    t = text.strip()
    if _ZH_RELATIVE_RE.search(t):
        out.append("relative-date")
    if _PRONOUN_START_RE.match(t) or _WE_RE.search(t):
        out.append("pronoun")
    if _RELATIVE_RE.search(t) and "relative-date" not in out:
        out.append("relative-date")
    return out
