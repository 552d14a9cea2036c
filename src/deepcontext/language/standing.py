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

from deepcontext.language.gazetteer import LANGUAGES

__all__ = ["HARD_KINDS", "STANDING_KEY", "admits", "asks_for_time", "bears_on_time", "is_request_for_user", "standing_kind"]

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
    (
        "allergy",
        re.compile(
            r"\b(?:allerg\w*|intoleran\w*|celiac|coeliac|epipen|anaphyla\w*|reacts?\s+badly\s+to|sensitive\s+to|"
            r"breaks?\s+out\s+in\s+hives|(?:can't|cannot|can\s+not)\s+(?:eat|have|tolerate|digest)|"
            r"(?:don't|doesn't)\s+get\s+along\s+with|(?:dangerous|deadly)\s+(?:for|to)\s+(?:me|him|her|them|user)|"
            r"(?:makes?|gives?|sets?\s+off|triggers?|brings?\s+on)\s+(?:me\s+|my\s+|his\s+|her\s+|their\s+|\w+'s\s+)?"
            r"(?:\w+\s+)?(?:asthma|hives|rash(?:es)?|migraines?|headaches?|swell\w*|itch\w*|sneez\w*|wheez\w*))\b",
            re.IGNORECASE,
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:vegetarian|vegan|pescatarian|pescetarian|kosher|halal|keto|paleo|gluten-free|dairy-free|"
            r"low-(?:sodium|salt|carb|fat|sugar)|diabet\w*|teetotal|sober|"
            r"(?:cut|cutting|gave|given|giving)\s+(?:out|up)\s+(?!on\b)(?:\w+\s+){1,2}?(?:completely|entirely|altogether|for\s+good)|"
            r"(?:don't|doesn't|never|do\s+not|does\s+not)\s+"
            r"(?:eat|drink|touch)|avoids?\s+\w+|(?:on|follows?)\s+a\s+[\w-]+\s+diet)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "instruction",
        re.compile(
            rf"\b(?:(?:please|always|never|don't|do\s+not)\s+(?:\w+\s+){{0,3}}?(?:answer|reply|respond|write|talk|speak|"
            rf"call|schedule|book|remind|use|give|send|keep|email|text|suggest|recommend|mention|ask)|call\s+{_ME}\b|"
            rf"from\s+now\s+on|whenever\s+(?:you|u)\s+(?:suggest|recommend|give|write|answer|reply|send|list|mention)|"
            rf"(?:^|[.!;]\s*)be\s+(?:blunt|brutally\s+honest|honest|brief|concise|direct|gentle|frank|straight)\b|"
            rf"when\s+(?:you|u)\s+(?:\w+\s+){{0,4}}?\w+\s*,\s*(?:please\s+)?(?:give|use|tell|show|send|write|keep|add|put|list|"
            rf"include|start|end|mention|format|make|skip|avoid|stick|cite|number|limit)|"
            # how every answer should look: "End your answers with a summary", "two options max"
            rf"(?:^|[.!;]\s*)(?:please\s+)?(?:end|start|begin|finish|open|close|sign|wrap|format|structure|limit|cap)\s+"
            rf"(?:\w+\s+){{0,2}}?(?:your|every|each|all)\s+(?:answers?|replies|reply|responses?|messages?|emails?|lists?)\b|"
            rf"(?:(?:one|two|three|four|five|\d+)\s+(?:options|choices|suggestions|ideas|recommendations|examples|"
            rf"bullets?|bullet\s+points|sentences|paragraphs|lines)\s+(?:max|maximum|tops|at\s+most)|"
            rf"(?:max|maximum\s+of|at\s+most|no\s+more\s+than)\s+(?:one|two|three|four|five|\d+)\s+"
            rf"(?:options|choices|suggestions|ideas|recommendations|examples|bullets?|bullet\s+points|sentences|paragraphs|lines))|"
            rf"keep\s+(?:your|the)\s+answers|(?:answers|replies)\s+(?:short|brief|in)|"
            rf"(?:wants?|likes?|prefers?)\s+(?:\w+\s+){{0,2}}(?:emailed|in\s+(?:{_IN_FORMS}))|"
            # an imperative to the assistant about how to treat the user: "Keep replies short, I read on my phone"
            rf"keep\s+(?:your\s+|the\s+)?(?:replies|answers|responses|messages)\b|"
            rf"(?:don't|do\s+not|never)\s+(?!worry|feel|forget|mind|hesitate|let)\w+\s+(?:\w+\s+){{0,2}}(?:with|to|for)\s+me)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "constraint",
        re.compile(
            r"\b(?:wheelchair|crutches|budget|afford|terrified|afraid|phobia|fear\s+of|scared\s+of|seasick|"
            r"motion\s+sick|carsick|airsick|(?:bad|injured|broken|weak|sore)\s+(?:knee|back|hip|ankle|wrist|shoulder)|"
            r"(?:knee|back|hip|ankle|wrist|shoulder)s?\s+(?:is|are|has\s+been|have\s+been)\s+(?:bad|injured|broken|weak|sore)|surgery|injur\w*|(?:doesn't|don't|does\s+not|do\s+not)\s+(?:have|own)\s+a\s+(?:car|driving|licen)|"
            r"driving\s+licen[cs]e|night\s+shifts?|toddler|newborn|pregnan\w*|disabilit\w*|blind|deaf|hearing\s+aid|"
            r"mobility|(?:can't|cannot)\s+(?:walk|climb|drive|swim|sit|lift)|(?:don't|doesn't|do\s+not|does\s+not)\s+drive|"
            r"(?:^|[.;]\s*)no\s+(?:car|licen[cs]e|driving\s+licen[cs]e)\b|"
            # fears and conditions named without a verb: "pretty claustrophobic", "hard of hearing"
            r"(?:claustro|agora|acro|arachno|aero|hydro|emeto|germo|thalasso)phob\w*|freak(?:s|ed)?\s+(?:me|him|her|them)\s+out|panic\s+attacks?|hard\s+of\s+hearing|hearing\s+loss|"
            r"(?:poor|bad|weak|failing|low)\s+(?:eyesight|vision|hearing)|(?:visually|hearing)\s+impaired|arthritis|"
            r"epilep\w*|chronic\s+\w+|heart\s+condition|"
            # room and care at home: "zero room for anything big", "I look after my dad"
            r"(?<!was\s)(?<!were\s)(?:no|zero|not\s+much|little|limited)\s+(?:\w+\s+)?(?:room|space|storage)\b|dyslex\w*|"
            r"(?:tiny|cramped)\s+(?:studio|apartment|flat|place|room)|"
            r"(?:i|we)\s+(?:\w+\s+)?(?:(?:take|takes|taking)\s+care\s+of|look(?:ing)?\s+after)\s+(?!(?:my|your|our|them|him|her)selv|"
            r"(?:my|your|our|them|him|her)self)|caregiver|needs?\s+(?:my\s+)?help\s+(?:in\s+the|every|at\s+night)|"
            # binding words and rules set by others: "Sundays are sacred", "my lease doesn't allow pets"
            r"no\s+exceptions|non-negotiable|sacred|off-limits|doctor's\s+orders|(?:doesn't|don't|won't)\s+(?:allow|let\s+me)|"
            r"not\s+allowed|no\s+(?:\w+\s+){1,3}for\s+me|(?:money|cash|funds|finances)(?:'s|\s+is|\s+are)\s+tight)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "habit",
        re.compile(
            r"\b(?:every\s+(?:morning|evening|night|day|week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|"
            r"sunday)|each\s+(?:morning|evening|day|night)|usually|always|never|goes?\s+to\s+bed|wakes?\s+up|routine|"
            r"meditat\w*|prays?|fasts?|fasting|(?:times|twice|once)\s+a\s+(?:day|week)|only\s+(?:drinks?|eats?)|daily|"
            r"nightly|weekly|every\s+(?:weekday|other\s+\w+|single\s+day)|weekdays|(?:mon|tues|wednes|thurs|fri|satur|sun)days|"
            r"(?:can't|cannot)\s+(?:\w+\s+){1,3}without|most\s+(?:days|mornings|afternoons|evenings|nights|weekends|weekdays)|"
            r"helps?\s+me\s+(?:wind\s+down|unwind|relax|sleep|focus|calm\s+down))\b",
            re.IGNORECASE,
        ),
    ),
    (
        "preference",
        re.compile(
            r"\b(?:prefers?|preferred|favou?rite|loves?|likes?|enjoys?|hates?|dislikes?|(?:can't|cannot)\s+stand|"
            r"not\s+a\s+(?:big\s+)?fan|fan\s+of|rather|hard\s+(?:no|pass)|no-go|deal-?breaker|"
            r"(?:or|otherwise)\s+(?:i'm|i\s+am|i\s+get)\s+(?:miserable|unhappy|grumpy|cranky|useless|a\s+mess)|"
            r"(?:can't|cannot)\s+(?:handle|deal\s+with)|(?:i'm|i\s+am|not)\s+(?:really\s+|much\s+of\s+)?(?:a|an)\s+(?:\w+\s+)?person\b|"
            r"(?:is|am|are)\s+into|obsessed\s+with|adores?|happiest|"
            r"(?:not|isn't|aren't)\s+(?:really\s+)?(?:my|\w+'s)\s+(?:thing|scene|style|taste|cup\s+of\s+tea)|"
            r"(?:is|are|'s|'re)\s+(?:totally\s+|really\s+)?(?:my|\w+'s)\s+(?:thing|jam|style)|only\s+\w+\s+(?:\w+\s+)?in\s+my|"
            r"makes?\s+(?:me|him|her|them|user)\s+(?:miserable|unhappy|sad|grumpy|anxious|nervous|uncomfortable))\b",
            re.IGNORECASE,
        ),
    ),
)
# a request about a decision to make now, for the user (not a question about advice given once:
# "Which book did Anna recommend?" is not one)
_REQUEST_RE = re.compile(
    r"\b(?:(?:should|shall)\s+(?:i|we|the\s+user|my|our|he|she|they)|(?:i|we)\s+should|"
    r"(?:can|could|would)\s+(?:you|u)\s+(?:recommend|suggest|plan|help|pick|choose|draft|write)|"
    # anything asked of the assistant for the user: "Can you build me...", "Give me a recipe..."
    # (not a recall: "Can you remind me...", "Tell me what I said...")
    r"(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?!remind|tell|show|find)\w+\s+(?:me|us)\b|"
    r"(?:^|[.!]\s*)(?:please\s+)?(?:recommend|suggest|plan|pick|choose|draft|write|help|give|make|build|create|"
    r"explain|compare|outline|teach|walk|translate|put\s+together|come\s+up\s+with)\b|"
    r"(?:what\s+do\s+(?:you|u)\s+think|(?:any\s+|your\s+)?thoughts(?=\s*\?)|your\s+(?:take|opinion))|"
    r"(?:what|which|when|where|how)\s+(?:[\w']+\s+){0,4}?should\b|"
    r"any\s+(?:ideas|tips|advice|suggestions|recommendations)|tips\s+for\s+(?:my|our)|help\s+me|"
    r"(?:what|which|when|where)\s+(?:[\w']+\s+){0,3}?(?:can|could)\s+(?:i|we)\b|"
    r"(?:what|when|where)(?:'s|\s+is|\s+are)\s+(?:a\s+|some\s+)?(?:good|nice|great|decent|reasonable|the\s+best)\b|"
    r"(?:would|is)\s+(?:it\s+)?(?:be\s+)?a\s+good\s+(?:idea|choice|option|time)|"
    r"explain\s+how\s+(?:i|we)|how\s+(?:should|can|could)\s+(?:i|we|the\s+user))\b",
    re.IGNORECASE,
)


# an occasion close at hand: what holds "this weekend" or "tonight" does not hold every time
_OCCASION_RE = re.compile(
    r"\b(?:(?:this|next|coming)\s+(?:weekend|week|morning|afternoon|evening|night|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)|tonight|tomorrow|today|yesterday|last\s+(?:night|week|weekend)|"
    r"on\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day(?!s)|right\s+now|for\s+the\s+(?:weekend|night|day))\b",
    re.IGNORECASE,
)
#: kinds that hold whatever the occasion they are mentioned on ("I'm allergic to cats, so not tonight")
_LASTING_KINDS = frozenset({"allergy", "diet"})


def standing_kind(text: str) -> str | None:
    """The kind of standing fact ``text`` states (see the module docstring), or None."""
    if text.rstrip().endswith("?"):
        return None
    for kind, rx in _KINDS:
        for m in rx.finditer(text):
            if kind in _LASTING_KINDS or not _on_an_occasion(text, m.start()):
                return kind
    return None


def admits(text: str, kind: str) -> bool:
    """Whether ``text`` can state a standing fact of ``kind`` found another way (by the embedding
    model of :mod:`deepcontext.language.standing_model`): not a question, and not said of an occasion
    close at hand unless an allergy or a diet, as for the rules."""
    return not text.rstrip().endswith("?") and (kind in _LASTING_KINDS or not _OCCASION_RE.search(text))


def _on_an_occasion(text: str, at: int) -> bool:
    """Whether the sentence of ``text`` around position ``at`` names an occasion close at hand."""
    start = max(text.rfind(".", 0, at), text.rfind("!", 0, at), text.rfind("?", 0, at)) + 1
    ends = [i for i in (text.find(".", at), text.find("!", at), text.find("?", at)) if i >= 0]
    return bool(_OCCASION_RE.search(text, start, min(ends) if ends else len(text)))


def is_request_for_user(query: str) -> bool:
    """Whether a question asks for a recommendation or a decision (something standing facts bear on)."""
    return bool(_REQUEST_RE.search(query))


# a request whose answer is a time: a day, an hour, a slot in a schedule
_TIME_REQUEST_RE = re.compile(
    r"\b(?:when|what\s+time|which\s+(?:day|days|time|times|hour|hours|week|evening|morning|night)|how\s+(?:early|late)|"
    r"a\s+good\s+time|(?:re)?schedul\w*|agenda|timetable|calendar|itinerary|appointment|slot)\b",
    re.IGNORECASE,
)
# a statement that bears on when things can happen: parts of the day or week, meals, sleep, shifts
_TIME_BOUND_RE = re.compile(
    r"\b(?:mornings?|afternoons?|evenings?|nights?|nightly|daytime|(?:during|in)\s+the\s+day|all\s+day|"
    r"(?:times|once|twice)\s+a\s+(?:day|week)|weekends?|weekdays?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|"
    r"breakfast|lunch|lunchtime|dinner|bedtime|sleeps?|sleeping|naps?|wakes?\s+up|shifts?|schedules?|"
    r"o'clock|\d{1,2}\s*(?:am|pm)|hours|early|late)\b",
    re.IGNORECASE,
)


def asks_for_time(query: str) -> bool:
    """Whether a request's answer is a time (when to do something, a schedule to fill)."""
    return bool(_TIME_REQUEST_RE.search(query))


def bears_on_time(text: str) -> bool:
    """Whether a standing fact constrains when things can happen (sleep, shifts, parts of the day)."""
    return bool(_TIME_BOUND_RE.search(text))
