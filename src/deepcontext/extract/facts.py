"""Sentence-level decisions of the rule-based extractor: keep or skip, memory type, tense, importance,
confidence. Pure functions over strings, every pattern compiled once.

Skipped: questions, greetings, thanks, reactions, requests to the assistant, vague "it / that"
sentences, and anything with fewer than three content words once rewritten. Procedural: an
imperative or a procedure marker ("make sure", "step 2"); episodic: a resolved time or a past action;
semantic: everything else. Importance starts at 0.4 and adds the bonus of the best two categories
shown (identity, health, family, preferences, plans, possessions, procedures; see ``_BONUS``), 0.2
for an explicit "remember", 0.05 per named entity (at most 0.1), less 0.15 for chit-chat, clamped to
[0.1, 0.95]. Confidence is 0.8, 0.55 when hedged, 0.5 for a joke, 0.7 (0.5) from the assistant.
"""

from __future__ import annotations

import re

from deepcontext.extract.forms import Form
from deepcontext.extract.lead_forms import OPENERS, REACTIONS, REMEMBER, REPORTED, TAGS
from deepcontext.extract.skip_forms import skip_pattern
from deepcontext.language.gazetteer import (
    CONTENT_STOP,
    IMPERATIVE_VERBS,
    IRREGULAR_PAST,
    KIN,
    NOT_PAST_ED,
    REQUEST_VERBS,
    words,
)

__all__ = [
    "confidence_of",
    "content_word_count",
    "importance_of",
    "is_episodic_action",
    "is_procedural",
    "is_question",
    "is_skippable",
    "starts_with_third_pronoun",
    "strip_lead",
    "tense_of",
]

# --- leading words that carry nothing ---------------------------------------------------------------------


def _any(table: tuple[Form, ...]) -> str:
    return "|".join(f.words for f in table)


_LEAD_RE = re.compile(
    rf"^(?:(?:(?:{_any(OPENERS)})(?:[\s,!.:;…-]+|$))|(?:(?:{_any(REACTIONS)})[,!.:;…]+\s*))+",
    re.IGNORECASE,
)
_REMEMBER_RE = re.compile(rf"^(?:please\s+)?(?:{_any(REMEMBER)})(?:\s+that)?[\s,:;-]+", re.IGNORECASE)
_REPORT_RE = re.compile(rf"^(?:{_any(REPORTED)})(?:\s+(?:that|before|earlier))*[\s,:;-]*", re.IGNORECASE)
_TAG_Q_RE = re.compile(rf"[,;]\s*(?:and\s+)?(?:{_any(TAGS)})\s*\?+\s*$", re.IGNORECASE)


def strip_lead(sentence: str) -> tuple[str, bool]:
    """Drop interjections and discourse markers at the start, and "remember that" / "I told you that".

    Returns the rest and whether the speaker asked for it to be remembered. A tag question at the end
    ("..., you?") is dropped too.
    """
    s = sentence
    remember = False
    for _ in range(3):
        before = s
        m = _LEAD_RE.match(s)
        if m and m.end() < len(s):
            s = s[m.end() :]
        elif m:
            return "", False
        m = _REMEMBER_RE.match(s)
        if m:
            s = s[m.end() :]
            remember = True
        m = _REPORT_RE.match(s)
        if m and m.end() < len(s):
            s = s[m.end() :]
        if s == before:
            break
    if "?" in s:
        t = _TAG_Q_RE.search(s)
        if t:
            s = s[: t.start()] + "."
    return s.strip(), remember


# --- questions, filler, requests ------------------------------------------------------------------------

_WH = words("what what's whats how how's why who who's whom whose where where's when which")
_AUX_Q = words(
    """is are am was were do does did can could would will shall should may might have has had isn't aren't
    don't doesn't didn't won't wouldn't couldn't shouldn't haven't hasn't"""
)
_Q_SUBJECTS = words("you u i we they he she it there this that your my the anyone anybody someone ya")
_FIRST_WORDS_RE = re.compile(r"[a-z']+", re.IGNORECASE)
_THIRD_PRONOUN_RE = re.compile(r"^(?:he|she|they|him|her|them|his|their)\b", re.IGNORECASE)
_POLITE_RE = re.compile(r"^(?:please|pls|plz|kindly|just|now)[\s,]+", re.IGNORECASE)
_SKIP_RE = {role: skip_pattern(role) for role in ("user", "assistant")}


def is_question(sentence: str) -> bool:
    """A question: a question mark, or an interrogative opening without final punctuation."""
    s = sentence.rstrip()
    if not s:
        return False
    if s.endswith(("?", "？")) or "?" in s[-3:]:
        return True
    if s.endswith((".", "!", "。", "！")):
        return False
    words = _FIRST_WORDS_RE.findall(s[:40].lower())
    if not words:
        return False
    if words[0] in _WH:
        return True
    return words[0] in _AUX_Q and len(words) > 1 and words[1] in _Q_SUBJECTS


def is_skippable(sentence: str, *, role: str = "user") -> bool:
    """Greeting, thanks, reaction, a request to the assistant, or a vague "it / that" sentence (the
    forms of :mod:`deepcontext.extract.skip_forms`), or a user's sentence opening with a verb that
    asks the assistant for something ("Book a table for two")."""
    if (_SKIP_RE.get(role) or _SKIP_RE["assistant"]).match(sentence):
        return True
    if role == "user":
        rest = _POLITE_RE.sub("", sentence, count=1)
        first = _FIRST_WORDS_RE.match(rest)
        if first and first.group(0).lower() in REQUEST_VERBS and not _PROC_MARKER_RE.search(sentence):
            return True
    return False


def starts_with_third_pronoun(sentence: str) -> bool:
    """The sentence opens with he / she / they / his / her...: it needs the name it refers to."""
    return bool(_THIRD_PRONOUN_RE.match(sentence))


_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def content_word_count(text: str) -> int:
    """Words that say something: not function words, fillers, time adverbs (the speaker's name counts)."""
    return sum(1 for w in _WORD_RE.findall(text.lower()) if w not in CONTENT_STOP)


# --- procedural ---------------------------------------------------------------------------------------------

_PROC_MARKER_RE = re.compile(
    r"\b(?:make\s+sure|be\s+sure\s+to|remember\s+to|don't\s+forget\s+to|do\s+not\s+forget\s+to|the\s+trick\s+is|"
    r"the\s+key\s+is|the\s+secret\s+is|the\s+best\s+way\s+to|the\s+way\s+to|step\s+\d+|first,?\s+\w+.*\bthen\b|"
    r"always\s+(?:use|run|check|make|keep|put|add|start|remember|test|back\s+up|commit|save|wash|set)|"
    r"never\s+(?:use|run|commit|push|put|leave|forget|store|share|skip|delete))",
    re.IGNORECASE,
)
_SPEAKER_SUBJECT_RE = re.compile(r"(?:^|[\s,;:(])(?:I|i|we|We)(?:'m|'ve|'d|'ll)?\s")
_IMPERATIVE_RE = re.compile(
    r"^(?:(?:to|in\s+order\s+to)\s+[^,]{2,80},\s*|(?:if|when|whenever|before|after|once|while)\s+[^,]{2,80},\s*)?"
    r"(?:(?:first(?:ly)?|then|next|finally|after\s+that|afterwards|also|just|please|now|second(?:ly)?|lastly),?\s+)*"
    r"(?:(?:always|never|don't|do\s+not|dont|also|just)\s+)*(?P<verb>[a-z]+)\b",
    re.IGNORECASE,
)


def is_procedural(sentence: str, *, list_item: bool = False) -> bool:
    """How-to knowledge: an imperative (possibly after "to X," / "if X," / "first"), or a procedure marker."""
    m = _IMPERATIVE_RE.match(sentence)
    if m:
        verb = m.group("verb").lower()
        if verb in IMPERATIVE_VERBS and verb not in REQUEST_VERBS:
            return True
        if verb in REQUEST_VERBS and (list_item or m.group(0).lower().startswith(("to ", "if ", "when", "before", "after"))):
            return True
    if _PROC_MARKER_RE.search(sentence):  # "Things I always keep at home" says what the speaker does
        return _SPEAKER_SUBJECT_RE.search(sentence) is None
    return False


# --- tense and episodic -----------------------------------------------------------------------------------

_FUTURE_RE = re.compile(
    r"\b(?:will|won't|'ll|going\s+to|gonna|plan(?:s|ning)?\s+to|about\s+to|next|tomorrow|tonight|upcoming|"
    r"this\s+coming|in\s+(?:a|an|\d+|two|three|a\s+few)\s+(?:days?|weeks?|months?|years?)|intend(?:s)?\s+to)\b",
    re.IGNORECASE,
)
_PAST_WORDS = words("yesterday ago last was were did had went")
_NOT_BEFORE_PAST = words(
    """a an the is are am be being get gets getting very so too more most really quite i'm you're we're they're
    he's she's it's that's"""
)
_PERFECT_AUX = words("have has had i've we've you've they've he's she's it's i'd we'd they'd")
_PRESENT_BE = words("i'm you're we're they're he's she's it's that's is am are be being")
_STATIVE_PAST = words("was were had did knew thought felt said meant")
_ACTION_PREV = words(
    """i we he she they you just finally recently already also then and first once really actually even who
    both"""
)
_EP_WORD_RE = re.compile(r"[A-Za-z][a-z'-]*")
_PROGRESSIVE_RE = re.compile(
    r"\b(?:was|were)\s+(?:\w+ing\b|(?:at|in)\s+(?:the|a|an|[A-Z])|there\b|out\b|away\b|on\s+(?:a|the|my|vacation|holiday))",
)
_DURATION_RE = re.compile(
    r"\bsince\b|\bfor\s+(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|many|several|a\s+few"
    r"|the\s+past|the\s+last)\s+\w*\s*(?:years?|months?|weeks?|days?|decades?|ages|a\s+while|while)\b",
    re.IGNORECASE,
)
_PERFECT_RE = re.compile(
    r"\b(?:have|has|'ve|had)\s+(?:just\s+|recently\s+|already\s+|finally\s+|once\s+)?"
    r"(?:(?!been\b|got\b|gotten\b|had\b|liked\b|loved\b|hated\b|enjoyed\b|wanted\b|needed\b|preferred\b|"
    r"owned\b|believed\b|used\b|lived\b|worked\b|known\b)[a-z]+ed|been\s+to|gone|seen|done|met|won|lost|made|taken|visited|"
    r"finished|started|bought|sold|built|written|flown|driven|eaten|run)\b",
)


def tense_of(text: str) -> str:
    """ "past", "future" or "present", from auxiliaries, time words and verb forms."""
    if _FUTURE_RE.search(text):
        return "future"
    prev = ""
    for w in _EP_WORD_RE.findall(text):
        lw = w.lower()
        if lw in _PAST_WORDS or lw in IRREGULAR_PAST:
            return "past"
        if lw.endswith("ed") and len(lw) > 4 and lw not in NOT_PAST_ED and prev not in _NOT_BEFORE_PAST:
            return "past"
        prev = lw
    return "present"


def is_episodic_action(text: str) -> bool:
    """A past action or event (without needing a date): "went", "visited", "just finished", "was at"."""
    words = _EP_WORD_RE.findall(text)
    prev = ""
    prev_raw = ""
    for w in words:
        lw = w.lower()
        if prev in _PERFECT_AUX:
            prev, prev_raw = lw, w
            continue  # a present perfect: decided below ("have visited" yes, "have lived here since" no)
        subject_before = prev in _ACTION_PREV or prev in KIN or (prev_raw[:1].isupper() and prev not in _PRESENT_BE)
        if lw in IRREGULAR_PAST and lw not in _STATIVE_PAST and subject_before:
            return True
        if lw.endswith("ed") and len(lw) > 4 and lw not in NOT_PAST_ED and (subject_before or prev in ("was", "were", "got")):
            return True
        prev, prev_raw = lw, w
    if _PROGRESSIVE_RE.search(text):
        return True
    # "I have visited Japan" is an event; "I've lived here since 2018 / for ten years" is a state
    return bool(_PERFECT_RE.search(text)) and not _DURATION_RE.search(text)


# --- importance and confidence ------------------------------------------------------------------------------


def _cat(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Single words by category (looked up in the sentence's word set), then a few phrases.
_CATEGORY_WORDS: dict[str, frozenset[str]] = {
    "identity": _cat(
        """born job career profession developer engineer teacher nurse doctor student studies studying graduated
        degree nationality identifies pronouns transgender gay lesbian bisexual queer retired married divorced
        single widowed name age"""
    ),
    "health": _cat(
        """allergic allergy allergies diagnosed diagnosis medication medications medicine disease diabetes
        diabetic asthma pregnant pregnancy surgery injury injured vegetarian vegan gluten lactose kosher halal
        celiac therapy therapist anxiety depression adhd autism autistic cancer sick illness hospital migraine
        migraines sober diet weight gym workout fitness sleep insomnia"""
    ),
    "family": _cat(
        """sister brother mom mum mother dad father son daughter kid kids children child baby husband wife spouse
        partner boyfriend girlfriend fiance fiancé fiancee fiancée friend friends family parents grandma grandpa
        grandmother grandfather cousin aunt uncle niece nephew wedding engaged dating colleague boss dog cat
        puppy kitten pet"""
    ),
    "preference": _cat(
        """love loves loved like likes prefer prefers preferred favorite favourite hate hates dislike dislikes
        enjoy enjoys passionate obsessed"""
    ),
    "plan": _cat(
        """plan plans planning planned will goal goals dream hope hopes intend intends upcoming deadline
        appointment interview trip moving"""
    ),
    "possession": _cat("has have own owns bought adopted car house apartment"),
    "explicit": _cat("remember important importantly never always must crucial critical essential"),
    "chitchat": _cat("weather tired bored boring lol haha lmao sleepy hungry nap rainy sunny"),
}
_WORD_CATEGORY: dict[str, str] = {w: c for c, ws in _CATEGORY_WORDS.items() for w in ws}
_PHRASE_CATEGORIES = (
    ("name is", "identity"),
    ("years old", "identity"),
    ("work at", "identity"),
    ("works at", "identity"),
    ("work for", "identity"),
    ("works for", "identity"),
    ("work as", "identity"),
    ("works as", "identity"),
    ("live in", "identity"),
    ("lives in", "identity"),
    ("moved to", "identity"),
    ("grew up", "identity"),
    ("is from", "identity"),
    ("i'm from", "identity"),
    ("blood pressure", "health"),
    ("can't stand", "preference"),
    ("fan of", "preference"),
    ("going to", "plan"),
    ("want to", "plan"),
    ("wants to", "plan"),
    ("next week", "plan"),
    ("next month", "plan"),
    ("next year", "plan"),
    ("don't forget", "explicit"),
    ("make sure", "explicit"),
)
_IMPORTANCE_WORD_RE = re.compile(r"[a-z][a-zé]*")


_BONUS = {"identity": 0.25, "health": 0.25, "family": 0.2, "preference": 0.15, "plan": 0.15, "possession": 0.1, "procedure": 0.1}
_REL_CATEGORY = {
    "works_at": "identity",
    "works_as": "identity",
    "studies_at": "identity",
    "lives_in": "identity",
    "from": "identity",
    "born_in": "identity",
    "moved_to": "identity",
    "likes": "preference",
    "dislikes": "preference",
    "prefers": "preference",
    "allergic_to": "health",
    "has": "possession",
}
_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|i\s+think|i\s+guess|i\s+believe|i\s+suppose|not\s+(?:\w+\s+)?sure|"
    r"might|may\s+be|kind\s+of|sort\s+of|apparently|i\s+heard|supposedly|if\s+i\s+remember|iirc|could\s+be|"
    r"seems\s+like|not\s+certain|i\s+don't\s+know\s+if|i\s+doubt|likely|unlikely|i\s+reckon|i\s+feel\s+like)\b",
    re.IGNORECASE,
)
_JOKE_RE = re.compile(r"\b(?:jk|just\s+kidding|kidding|joking|lol|lmao|/s)\b|😂|🤣", re.IGNORECASE)


def importance_of(
    text: str,
    *,
    relations: list[str] | tuple[str, ...] = (),
    named_entities: int = 0,
    remember: bool = False,
    procedural: bool = False,
) -> float:
    """Importance in [0.1, 0.95] by the rules in the module docstring."""
    cats: set[str] = set()
    low = text.lower()
    for w in _IMPORTANCE_WORD_RE.findall(low):
        c = _WORD_CATEGORY.get(w)
        if c is not None:
            cats.add(c)
    for phrase, c in _PHRASE_CATEGORIES:
        if phrase in low:
            cats.add(c)
    explicit = remember or "explicit" in cats
    chitchat = "chitchat" in cats
    cats.discard("explicit")
    cats.discard("chitchat")
    for r in relations:
        c = _REL_CATEGORY.get(r)
        if c:
            cats.add(c)
        elif r.endswith("_of") or r in ("married_to",):
            cats.add("family")
    if procedural:
        cats.add("procedure")
    bonuses = sorted((_BONUS[c] for c in cats), reverse=True)[:2]
    score = 0.4 + sum(bonuses) + (0.2 if explicit else 0.0) + min(0.1, 0.05 * named_entities)
    if chitchat:
        score -= 0.15
    return round(min(0.95, max(0.1, score)), 3)


def confidence_of(text: str, *, from_assistant: bool = False) -> tuple[float, bool]:
    """Confidence and whether the statement is hedged."""
    hedged = bool(_HEDGE_RE.search(text))
    if _JOKE_RE.search(text):
        return 0.5, True
    if from_assistant:
        return (0.5 if hedged else 0.7), hedged
    return (0.55 if hedged else 0.8), hedged
