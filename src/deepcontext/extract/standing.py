"""Standing facts about a person: what holds every time a decision is made for them.

Allergies and intolerances, diets, preferences and dislikes, habits and routines, constraints
(health, mobility, budget, fears, schedule) and standing instructions to the assistant ("always
answer in Spanish", "call me Sasha"). A question asking for a recommendation or a decision for the
user ("What dessert should I bring?") rarely names them, so search gives them a leg of their own
for such questions (:mod:`deepcontext.retrieve.profile`). :func:`standing_kind` reads a fact or a
user's message, first or third person; nothing here is specific to a topic or a data set.
"""

from __future__ import annotations

import re

from deepcontext.extract.gazetteer import LANGUAGES

__all__ = ["HARD_KINDS", "STANDING_KEY", "is_request_for_user", "standing_kind"]

#: metadata key of a standing memory; its value is the kind
STANDING_KEY = "standing"

#: standing facts that bind every decision, not only the ones on their topic
HARD_KINDS = frozenset({"allergy", "diet", "constraint", "instruction"})

_ME = r"(?:i|me|my|i'm|i've|i'd|user|user's|\w+'s)"
#: what a standing instruction asks answers to be given in: any language or unit system
_IN_FORMS = "|".join(
    sorted(
        (re.escape(w.lower()) for w in (*LANGUAGES, "celsius", "fahrenheit", "kelvin", "metric", "imperial")),
        key=len,
        reverse=True,
    )
)
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("allergy", re.compile(
        r"\b(?:allerg\w*|intoleran\w*|celiac|coeliac|epipen|anaphyla\w*|reacts?\s+badly\s+to|sensitive\s+to|"
        r"breaks?\s+out\s+in\s+hives|(?:can't|cannot|can\s+not)\s+(?:eat|have|tolerate|digest)|"
        r"(?:don't|doesn't)\s+get\s+along\s+with)\b", re.IGNORECASE)),
    ("diet", re.compile(
        r"\b(?:vegetarian|vegan|pescatarian|pescetarian|kosher|halal|keto|paleo|gluten-free|dairy-free|"
        r"low-(?:sodium|salt|carb|fat|sugar)|diabet\w*|teetotal|sober|(?:don't|doesn't|never|do\s+not|does\s+not)\s+"
        r"(?:eat|drink|touch)|avoids?\s+\w+|(?:on|follows?)\s+a\s+[\w-]+\s+diet)\b", re.IGNORECASE)),
    ("instruction", re.compile(
        rf"\b(?:(?:please|always|never|don't|do\s+not)\s+(?:\w+\s+){{0,3}}?(?:answer|reply|respond|write|talk|speak|"
        rf"call|schedule|book|remind|use|give|send|keep|email|text|suggest|recommend|mention|ask)|call\s+{_ME}\b|"
        rf"from\s+now\s+on|when\s+you\s+(?:\w+\s+){{0,3}}?\w+\s*,\s*(?:please\s+)?(?:give|use|tell|show|send|write|keep|add)|keep\s+(?:your|the)\s+answers|(?:answers|replies)\s+(?:short|brief|in)|"
        rf"(?:wants?|likes?|prefers?)\s+(?:\w+\s+){{0,2}}(?:emailed|in\s+(?:{_IN_FORMS})))\b",
        re.IGNORECASE)),
    ("constraint", re.compile(
        r"\b(?:wheelchair|crutches|budget|afford|terrified|afraid|phobia|fear\s+of|scared\s+of|seasick|"
        r"motion\s+sick|carsick|airsick|(?:bad|injured|broken|weak|sore)\s+(?:knee|back|hip|ankle|wrist|shoulder)|"
        r"(?:knee|back|hip|ankle|wrist|shoulder)s?\s+(?:is|are|has\s+been|have\s+been)\s+(?:bad|injured|broken|weak|sore)|surgery|injur\w*|(?:doesn't|don't|does\s+not|do\s+not)\s+(?:have|own)\s+a\s+(?:car|driving|licen)|"
        r"driving\s+licen[cs]e|night\s+shifts?|toddler|newborn|pregnan\w*|disabilit\w*|blind|deaf|hearing\s+aid|"
        r"mobility|(?:can't|cannot)\s+(?:walk|climb|drive|swim|sit|lift))\b", re.IGNORECASE)),
    ("habit", re.compile(
        r"\b(?:every\s+(?:morning|evening|night|day|week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|"
        r"sunday)|each\s+(?:morning|evening|day|night)|usually|always|never|goes?\s+to\s+bed|wakes?\s+up|routine|"
        r"meditat\w*|prays?|fasts?|fasting|(?:times|twice|once)\s+a\s+(?:day|week)|only\s+(?:drinks?|eats?))\b",
        re.IGNORECASE)),
    ("preference", re.compile(
        r"\b(?:prefers?|preferred|favou?rite|loves?|likes?|enjoys?|hates?|dislikes?|(?:can't|cannot)\s+stand|"
        r"not\s+a\s+(?:big\s+)?fan|fan\s+of|rather|(?:is|am|are)\s+into)\b", re.IGNORECASE)),
)
# a request about a decision to make now, for the user (not a question about advice given once:
# "Which book did Anna recommend?" is not one)
_REQUEST_RE = re.compile(
    r"\b(?:(?:should|shall)\s+(?:i|we|the\s+user|my|our|he|she|they)|(?:i|we)\s+should|"
    r"(?:can|could|would)\s+you\s+(?:recommend|suggest|plan|help|pick|choose|draft|write)|"
    r"(?:^|[.!]\s*)(?:please\s+)?(?:recommend|suggest|plan|pick|choose|draft|write|help)\b|"
    r"(?:what|which|when|where|how)\s+(?:[\w']+\s+){0,4}?should\b|"
    r"any\s+(?:ideas|tips|advice|suggestions)|tips\s+for\s+(?:my|our)|help\s+me|what\s+(?:can|could)\s+(?:i|we)\b|"
    r"(?:would|is)\s+(?:it\s+)?(?:be\s+)?a\s+good\s+(?:idea|choice|option|time)|"
    r"explain\s+how\s+(?:i|we)|how\s+(?:should|can|could)\s+(?:i|we|the\s+user))\b",
    re.IGNORECASE,
)


def standing_kind(text: str) -> str | None:
    """The kind of standing fact ``text`` states (see the module docstring), or None."""
    if text.rstrip().endswith("?"):
        return None
    for kind, rx in _KINDS:
        if rx.search(text):
            return kind
    return None


def is_request_for_user(query: str) -> bool:
    """Whether a question asks for a recommendation or a decision (something standing facts bear on)."""
    return bool(_REQUEST_RE.search(query))
