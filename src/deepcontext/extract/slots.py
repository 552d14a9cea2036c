"""Single-valued facts of a person ("slots"): where they live, their employer and job, relationship
status, diet, habitual drink, car, school, favourites.

A newer statement of another value supersedes the older memory (:mod:`deepcontext.services.updates`).
:func:`find_slots` reads a fact as the extractors write it ("Maya moved to Porto") and returns the
slots it states, or an *ended* slot ("User doesn't drink tea anymore"). Multi-valued relations,
"also / too / another", plans, wishes, past states and unresolved pronouns never give a slot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcontext.extract.gazetteer import JOB_NOUNS as _GAZ_JOBS
from deepcontext.extract.gazetteer import KIN

__all__ = ["OBJECT_PRONOUN_RE", "Slot", "find_slots", "pronoun_attributes", "same_value"]


_NOT_IN_PATHS = str.maketrans("", "", '"\\')


@dataclass(frozen=True, slots=True)
class Slot:
    """One single-valued fact: ``subject``'s ``attribute`` is ``value`` (or stopped being, ``ended``)."""

    subject: str  # normalised: "user", "maya", "user's sister"
    attribute: str  # residence, employer, job, relationship, diet, drink, car, school, favourite:<what>
    value: str  # normalised value; "" for an ended slot that names none ("lost her job")
    ended: bool = False
    qualifier: str | None = None  # when the habit holds: morning, evening, work...

    @property
    def key(self) -> str:
        """What two facts must share to be about the same slot (without ``"`` and ``\\``: the key is a
        metadata key, looked up as a JSON path, whose labels cannot hold them)."""
        return f"{self.subject}|{self.attribute}".translate(_NOT_IN_PATHS)


_W = r"[\w'&.+-]+"
_VAL = rf"(?P<v>{_W}(?:\s+{_W}){{0,5}})"
_ART = r"(?:(?:a|an|the|his|her|their|our|\w+'s)\s+)?"

DRINKS = frozenset(
    """coffee coffees tea teas espresso espressos latte lattes cappuccino cappuccinos americano flat-white macchiato
    mocha matcha chai rooibos kombucha juice chocolate smoothie smoothies water soda cola coke lemonade milk cocoa
    hot-chocolate beer beers wine wines cider whisky whiskey gin vodka decaf cortado""".split()
)
JOB_NOUNS = _GAZ_JOBS | frozenset(
    """principal headteacher headmaster paramedic midwife optician butcher tailor hairdresser barber cleaner
    janitor porter courier postman postwoman miner welder builder surveyor lifeguard ranger sommelier florist
    jeweller jeweler stylist model clerk dispatcher auditor underwriter actuary notary judge diplomat""".split()
)
_JOB_RE = "|".join(sorted((re.escape(j) for j in JOB_NOUNS), key=len, reverse=True))
_MEALS = frozenset(
    """oatmeal porridge granola cereal muesli toast eggs pancakes yogurt yoghurt bagel bagels croissant croissants
    fruit avocado waffles""".split()
)
_DIETS = {
    "vegetarian": "vegetarian",
    "veggie": "vegetarian",
    "vegan": "vegan",
    "pescatarian": "pescatarian",
    "pescetarian": "pescatarian",
    "flexitarian": "flexitarian",
    "keto": "keto",
    "paleo": "paleo",
    "plant-based": "vegan",
    "carnivore": "carnivore",
    "omnivore": "omnivore",
}
_KIN_RE = "|".join(sorted((re.escape(k) + "s?" for k in KIN), key=len, reverse=True))
_DIET_RE = "|".join(sorted(_DIETS, key=len, reverse=True))
_SCHOOL_NOUNS = frozenset(
    """school academy elementary primary kindergarten preschool pre-school montessori nursery daycare
    high secondary grammar college university gymnasium lyceum""".split()
)
_VEHICLES = frozenset("car suv van truck pickup hatchback sedan minivan convertible wagon jeep".split())
_REL_STATUS = {
    "married": "married",
    "divorced": "divorced",
    "engaged": "engaged",
    "separated": "separated",
    "widowed": "widowed",
    "single": "single",
}
_STOP_VALUE = frozenset(
    """in on at with for from to by since because when while and or but so than as if that which who now
    again anymore instead these this last next every each recently lately currently a an per most many
    several some
    remotely there here too also after before during until near around then nowadays already still
    is was are were has had have every each""".split()
)
_LINKERS = frozenset("of de del da do la le van von the and & upon".split())
_QUANT_RE = re.compile(
    r"^(?:(?:a|an|one|two|three|four|\d+|some|lots\s+of|a\s+lot\s+of|plenty\s+of)\s+)?"
    r"(?:(?:big|small|large|huge|little|strong|hot|iced|cold)\s+)?"
    r"(?:(?:cups?|mugs?|glass(?:es)?|bottles?|pots?|shots?|cans?|pints?|bowls?|servings?)\s+of\s+)?",
    re.IGNORECASE,
)
_LEAD_DET_RE = re.compile(r"^(?:(?:a|an|the|his|her|their|our|its|\w+'s)\s+)+", re.IGNORECASE)

# clauses: facts are split on punctuation and conjunctions; each clause is read on its own
_CLAUSE_SPLIT_RE = re.compile(
    r"\s*[;,:]\s+|\s+(?:and|but|so|because|while|although|though|whereas|before|after|when|once|then)\s+",
    re.IGNORECASE,
)
_COEXIST_RE = re.compile(
    r"\b(?:also|too|as\s+well|another|second|in\s+addition|besides|side\s+job|on\s+the\s+side|both|sometimes|"
    r"occasionally|once\s+in\s+a\s+while|other)\b",
    re.IGNORECASE,
)
_NOT_YET_RE = re.compile(
    r"\b(?:will|'ll|going\s+to|gonna|plans?\s+to|planning\s+(?:to|on)|planned\s+to|thinking\s+(?:about|of)|considering|consider|"
    r"might|(?-i:may)|maybe|would|could|should|wants?\s+to|wanted\s+to|hopes?\s+to|hoping|wish(?:es)?|dreams?\s+of|"
    r"someday|one\s+day|if|unless|next\s+(?:week|month|year|spring|summer|fall|autumn|winter|semester|term)|"
    r"about\s+to|soon|tomorrow|eventually|trying\s+to|tries\s+to|tried)\b",
    re.IGNORECASE,
)
_PAST_STATE_RE = re.compile(
    r"\b(?:used\s+to|lived|grew\s+up|was\s+living|were\s+living|was\s+working|were\s+working|worked|"
    r"back\s+(?:then|when|in)|as\s+a\s+(?:kid|child|teen|teenager|student)|in\s+(?:college|high\s+school)|"
    r"years\s+ago|previously|formerly|at\s+the\s+time|for\s+a\s+(?:week|weekend|month|few\s+days)|"
    r"during\s+(?:the|a|his|her|their)|on\s+(?:vacation|holiday|a\s+trip)|drove|drank|was\s+a|were\s+a|"
    r"was\s+an|had\s+been|was\s+(?:married|engaged|single|vegetarian|vegan)|first\s+met|"
    r"rented)\b",
    re.IGNORECASE,
)
_NEGATED_RE = re.compile(
    r"\b(?:not|never|no(?:es)?\s+longer|doesn't|don't|didn't|isn't|aren't|hasn't|haven't|won't|can't|cannot|"
    r"does\s+not|do\s+not|is\s+not|anymore|any\s+more)\b",
    re.IGNORECASE,
)
_SUBJECT_SKIP = frozenset(
    """is was are were has have had been being be got gets now finally just also recently currently still
    officially already really actually then eventually happily proudly suddenly quietly basically totally
    fully completely strictly since lately nowadays today this year month week morning mornings every each
    days these usually always often mostly said even only newly""".split()
)
#: a possessed noun phrase closing the words before a predicate: its owner and head noun
_OWNED_RE = re.compile(r"(?P<owner>\b[\w-]+'s)\s+(?:[a-z][\w-]*\s+){0,2}(?P<head>[a-z][\w-]*),?$")
_PRONOUNS = frozenset("he she they it him her them his their its you one someone everyone".split())


def _norm_value(raw: str) -> str:
    """Lower case, no determiner, quantity or trailing filler: "two mugs of black tea" -> "black tea"."""
    v = raw.strip(" .,!?;:'\"")
    v = _LEAD_DET_RE.sub("", v)
    v = _QUANT_RE.sub("", v)
    return " ".join(v.lower().split())


def _cut_value(raw: str) -> str:
    """The value at the start of ``raw``: a run of capitalised words ("St Mary's Hospital", "University
    of Porto"), else up to four lower-case words before a preposition or adverb."""
    raw = _QUANT_RE.sub("", _LEAD_DET_RE.sub("", raw.strip()))
    tokens = raw.split()
    if not tokens:
        return ""
    out: list[str] = []
    if tokens[0][:1].isupper():
        for i, t in enumerate(tokens):
            bare = t.strip(".,!?;:")
            if (
                bare[:1].isupper()
                or bare[:1].isdigit()
                or (out and bare.lower() in _LINKERS and i + 1 < len(tokens) and tokens[i + 1][:1].isupper())
            ):
                out.append(bare)
                if bare != t:
                    break
            else:
                break
        # "Italian restaurant", "Oakland office": a capitalised word naming a kind of place
        rest = tokens[len(out) :]
        if len(out) == 1 and out[0] == tokens[0] and rest:
            for t in rest[:2]:
                bare = t.strip(".,!?;:")
                if not bare.islower() or bare in _STOP_VALUE:
                    break
                out.append(bare)
                if bare != t:
                    break
        return " ".join(out)
    for t in tokens:
        bare = t.strip(".,!?;:")
        if not bare or bare.lower() in _STOP_VALUE:
            break
        out.append(bare)
        if bare != t or len(out) == 6:
            break
    return " ".join(out)


def _head(value: str) -> str:
    return value.split()[-1] if value else ""


def _tokens(value: str) -> set[str]:
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in value.replace("-", " ").split()}


def same_value(a: str, b: str) -> bool:
    """Whether two normalised values name the same thing ("tea" and "black tea", "cappuccinos" and
    "cappuccino", "porto" and "porto portugal" do; "madrid" and "porto" do not)."""
    if not a or not b:
        return False
    ta, tb = _tokens(a), _tokens(b)
    return a == b or ta <= tb or tb <= ta


def _subject(before: str, speaker: str) -> str | None:
    """The subject just before a predicate: "User's daughter Mia" -> "mia", "we" -> the speaker; None for
    a pronoun; "" when the clause has none (the fact's first subject applies)."""
    tokens = before.replace(":", " ").split()
    while tokens and tokens[-1].lower().strip(",") in _SUBJECT_SKIP:
        tokens.pop()
    if not tokens:
        return ""
    last = tokens[-1].strip(",").lower()
    if last in ("we", "we've", "we're", "us"):
        return speaker.lower()
    if last in _PRONOUNS:
        return None
    picked: list[str] = []
    for t in reversed(tokens):
        bare = t.strip(",")
        low = bare.lower()
        if picked and low in _SUBJECT_SKIP:  # "Now User drives ...": a capitalised adverb opens the clause
            break
        if (
            bare[:1].isupper()
            or low.endswith("'s")
            or low in KIN
            or low.rstrip("s") in KIN
            or low in ("older", "younger", "little", "big", "baby", "oldest", "youngest", "eldest", "new")
        ):
            picked.append(bare)
            if bare[:1].isupper() and not low.endswith("'s") and len(picked) > 1:
                break
            if len(picked) >= 4:
                break
            continue
        break
    if not picked or not any(p.lower().endswith("'s") for p in picked):
        owned = _OWNED_RE.search(" ".join(tokens))  # "User's best friend", "User's parents": not the owner
        if owned is not None:
            return f"{owned.group('owner').lower()} {owned.group('head').lower()}"
    if not picked:
        return ""
    picked.reverse()
    if len(picked) == 1 and picked[0].lower().endswith("'s"):  # "User's car is ...": the owner
        return picked[0].lower()[:-2]
    words = [p.lower() for p in picked if p.lower() not in ("older", "younger", "little", "big", "baby", "new")]
    # "User's daughter Mia": the child goes by her name
    if (
        len(words) >= 2
        and words[-1][:1].isalpha()
        and picked[-1][:1].isupper()
        and any(w in KIN or w.rstrip("s") in KIN for w in words[:-1])
    ):
        return words[-1]
    while words and not words[0].endswith("'s") and len(words) > 1 and words[0] not in KIN:
        if picked[0][:1].isupper():
            break
        words.pop(0)
    return " ".join(words)


@dataclass(frozen=True, slots=True)
class _Pattern:
    attribute: str
    regex: re.Pattern[str]
    ended: bool = False
    event: bool = False  # a change that happened ("moved to", "switched to"): the past tense is fine
    value: str | None = None  # a fixed value (the relationship status, "retired") instead of the capture
    check: str | None = None  # the value's head must belong to this vocabulary
    of_object: bool = False  # the slot is the verb's object's ("moved Noor to Elm Park"), named in group "o"


def _rx(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


_PATTERNS: tuple[_Pattern, ...] = (
    # --- where they live
    _Pattern(
        "residence",
        _rx(
            rf"\b(?:lives?|living|resides?|residing|(?:is|are)\s+based|settled)\s+"
            rf"(?:(?:now|currently|full-time|permanently|together|alone)\s+)?(?:in|near)\s+{_VAL}"
        ),
    ),
    _Pattern(
        "residence",
        _rx(
            rf"\b(?:moved|moves|moving|relocated|relocates|relocating|emigrated)\s+"
            rf"(?:(?:back|over|house|permanently|for\s+good)\s+)?(?:from\s+[\w'&.-]+(?:\s+[\w'&.-]+){{0,3}}?\s+)?to\s+{_VAL}"
        ),
        event=True,
    ),
    _Pattern(
        "residence",
        _rx(
            rf"\b(?:rents?|renting|owns?|bought|shares?|sharing|found|got|moved\s+into|^\s*into)\s+{_ART}"
            rf"(?:[\w-]+\s+){{0,3}}?(?:apartment|flat|house|home|place|condo|studio|loft|cottage)\s+"
            rf"(?:in|near|outside(?:\s+of)?)\s+{_VAL}"
        ),
        event=True,
    ),
    _Pattern("residence", _rx(rf"\bhome\s+is\s+(?:now\s+)?(?:in\s+)?{_VAL}")),
    _Pattern("residence", _rx(rf"\b(?:no(?:es)?\s+longer|doesn't|does\s+not|don't)\s+lives?\s+in\s+{_VAL}"), ended=True),
    _Pattern("residence", _rx(rf"\b(?:moved|moving)\s+(?:away\s+)?(?:out\s+of|away\s+from)\s+{_VAL}"), ended=True, event=True),
    # --- who they work for, as what
    _Pattern(
        "employer",
        _rx(
            rf"\b(?:works?|working|employed)\s+(?:(?:now|currently|full[- ]time|part[- ]time|"
            rf"remotely)\s+)?(?:as\s+(?:a|an)\s+(?:[\w-]+\s+){{1,3}}?)?(?:at|for|by)\s+{_VAL}"
        ),
    ),
    _Pattern(
        "employer",
        _rx(
            rf"\b(?:started|starts|starting)\s+(?:(?:a\s+)?(?:new\s+)?(?:job|position|role|working)\s+)?"
            rf"(?:at|with)\s+{_VAL}"
        ),
        event=True,
        check="not_school",  # a child starting at a school attends it ("started a job at" still counts)
    ),
    _Pattern("employer", _rx(rf"\b(?:joined|joins)\s+{_VAL}\s+as\s+(?:a|an)\b"), event=True),
    _Pattern(
        "employer",
        _rx(
            rf"\b(?:got|landed|accepted|took|has|have)\s+(?:a|an|the)\s+(?:new\s+|dream\s+)?"
            rf"(?:job|position|role|offer)\s+(?:as\s+(?:a|an)\s+(?:[\w-]+\s+){{1,3}}?)?(?:at|with|from)\s+{_VAL}"
        ),
        event=True,
    ),
    _Pattern("employer", _rx(rf"\bhired\s+(?:by|at)\s+{_VAL}"), event=True),
    _Pattern(
        "employer",
        _rx(rf"\b(?:is|'s|became|as)\s+(?:now\s+)?(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{_JOB_RE})\s+(?:at|for|with)\s+{_VAL}"),
    ),
    _Pattern("employer", _rx(rf"\bnew\s+(?:job|position|role|employer)\s+(?:is\s+)?(?:at|with)\s+{_VAL}"), event=True),
    _Pattern(
        "employer",
        _rx(
            rf"\b(?:quit|left|leaves|quits|leaving|quitting)\s+(?:(?:his|her|their|the|a|\w+'s)\s+)?"
            rf"(?:job|position|role)\s+(?:at|with)\s+{_VAL}"
        ),
        ended=True,
        event=True,
    ),
    _Pattern("employer", _rx(rf"\b(?:no(?:es)?\s+longer|doesn't|does\s+not)\s+works?\s+(?:at|for)\s+{_VAL}"), ended=True),
    _Pattern("employer", _rx(rf"\b(?:laid\s+off|fired|let\s+go)\s+(?:from|by)\s+{_VAL}"), ended=True, event=True),
    _Pattern(
        "employer",
        _rx(r"\b(?:lost|quit)\s+(?:(?:his|her|their|the|\w+'s)\s+)?job\b(?!\s+(?:at|with|as))"),
        ended=True,
        event=True,
        value="",
    ),
    _Pattern(
        "job",
        _rx(rf"\b(?:works?|working|employed|hired|started|starts|joined\s+\S+)\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
    ),
    _Pattern("job", _rx(rf"\b(?:is|'s|became|becomes|has\s+become)\s+(?:now\s+)?(?:a|an)\s+{_VAL}"), check="job"),
    _Pattern("job", _rx(rf"\b(?:job|position|role|career)\s+as\s+(?:a|an)\s+{_VAL}"), event=True, check="job"),
    _Pattern("job", _rx(rf"\bretrained\s+as\s+(?:a|an)\s+{_VAL}"), event=True, check="job"),
    _Pattern(
        "job",
        _rx(rf"\b(?:started|starts|joined|joins)\s+(?:at\s+)?\S+(?:\s+\S+)?\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
    ),
    _Pattern(
        "job",
        _rx(
            r"\b(?:is|are|has|got|just|recently|finally|now)\s+(?:(?:now|just|recently|finally|officially|"
            r"been)\s+)?(retired|unemployed|between\s+jobs|out\s+of\s+work)\b"
        ),
        event=True,
    ),
    _Pattern("job", _rx(r"\bretired\s+(?:last|this|in|from|a|two|three|after)\b"), event=True, value="retired"),
    _Pattern(
        "job", _rx(rf"\b(?:no(?:es)?\s+longer|isn't|is\s+not)\s+(?:working\s+as\s+)?(?:a|an)\s+{_VAL}"), ended=True, check="job"
    ),
    # --- relationship status
    _Pattern(
        "relationship",
        _rx(
            r"\b(?:is|are|got|get|gets|getting|became|has\s+been|have\s+been|just|recently|finally)"
            r"\s+(?:(?:now|recently|finally|officially|happily|just|been|got)\s+)*"
            r"(married|divorced|engaged|separated|widowed|single)\b"
        ),
        event=True,
    ),
    _Pattern(
        "relationship",
        _rx(r"\b(?:broke|broken|breaking)\s+up\b|\bsplit\s+up\b|\bcalled\s+off\s+\S+\s+engagement\b"),
        event=True,
        value="single",
    ),
    _Pattern(
        "relationship",
        _rx(
            r"\b(?:is|are)\s+(?:now\s+)?(?:dating|seeing)\s+\S+|\bin\s+a\s+(?:new\s+)?relationship\b|"
            r"\bhas\s+a\s+new\s+(?:girlfriend|boyfriend|partner)\b|\bstarted\s+dating\b"
        ),
        event=True,
        value="in a relationship",
    ),
    _Pattern("relationship", _rx(r"\b(?:tied\s+the\s+knot|got\s+hitched)\b"), event=True, value="married"),
    _Pattern("relationship", _rx(r"\b(?:have|has|are|is)\s+(?:been\s+)?together\b"), value="in a relationship"),
    # --- food and drink habits
    _Pattern(
        "diet",
        _rx(
            rf"\b(?:is|'s|went|gone|going|became|turned|has\s+been|have\s+been|eats|eating|follows|on)\s+"
            rf"(?:(?:now|fully|completely|strictly|mostly|a|an)\s+)*({_DIET_RE})\b"
        ),
        event=True,
    ),
    _Pattern(
        "diet",
        _rx(
            r"\b(?:stopped|quit|gave\s+up|gives\s+up|cut\s+out)\s+(?:eating\s+)?meat\b|"
            r"\b(?:no(?:es)?\s+longer|doesn't|does\s+not)\s+eats?\s+meat\b"
        ),
        event=True,
        value="vegetarian",
    ),
    _Pattern(
        "diet",
        _rx(r"\beats?\s+(?:meat|fish|chicken|everything)\s+again\b|\bback\s+to\s+eating\s+meat\b"),
        event=True,
        value="omnivore",
    ),
    _Pattern("diet", _rx(r"\beats?\s+(?:everything|anything|meat)\b"), value="omnivore"),
    _Pattern(
        "diet",
        _rx(rf"\b(?:no(?:es)?\s+longer|isn't|is\s+not|stopped\s+being|quit\s+being)\s+(?:a\s+)?({_DIET_RE})\b"),
        ended=True,
        event=True,
    ),
    _Pattern(
        "drink",
        _rx(
            rf"\b(?:drinks|drinking|drink|sips|has|have|having|gets|orders|makes|brews|grabs|"
            rf"starts\s+(?:the|\w+'s|every)\s+(?:day|morning)\s+with)\s+{_VAL}"
        ),
        check="drink",
    ),
    _Pattern(
        "drink",
        _rx(rf"\b(?:switched|switches|switching|moved|changed)\s+(?:over\s+)?(?:from\s+[\w\s-]+?\s+)?to\s+{_VAL}"),
        event=True,
        check="drink",
    ),
    _Pattern("breakfast", _rx(rf"\b(?:eats|has|have|having|makes)\s+{_VAL}\s+(?:for|at)\s+breakfast\b"), check="meal"),
    _Pattern("breakfast", _rx(rf"\bbreakfast\s+is\s+(?:now\s+)?{_VAL}"), check="meal"),
    _Pattern(
        "drink",
        _rx(rf"\b(?:doesn't|does\s+not|don't|no(?:es)?\s+longer|never)\s+(?:drinks?|has|have)\s+{_VAL}"),
        ended=True,
        check="drink",
    ),
    _Pattern(
        "drink",
        _rx(rf"\b(?:gave\s+up|gives\s+up|quit|stopped\s+drinking|cut\s+out)\s+{_VAL}"),
        ended=True,
        event=True,
        check="drink",
    ),
    # --- car
    _Pattern("car", _rx(rf"\bdrives\s+(?:a|an|the)\s+{_VAL}")),
    _Pattern("car", _rx(rf"\b(?:car|ride)\s+is\s+(?:now\s+)?(?:a|an)\s+{_VAL}")),
    _Pattern(
        "car",
        _rx(
            rf"\b(?:bought|got|leased|leases|traded\s+\S+\s+(?:\S+\s+)?for)\s+(?:a|an)\s+(?:new\s+|used\s+|"
            rf"second-hand\s+)?{_VAL}"
        ),
        event=True,
        check="vehicle",
    ),
    _Pattern("car", _rx(r"\bsold\s+(?:(?:his|her|their|the|\w+'s)\s+)?(?:old\s+)?car\b"), ended=True, event=True, value=""),
    # --- school or university
    _Pattern(
        "school",
        _rx(
            rf"\b(?:moved|switched|transferred|sent|enrolled|put)\s+(?P<o>(?-i:[A-Z][\w'-]+)|(?:\w+'s\s+)?(?:{_KIN_RE}))\s+"
            rf"(?:(?:over|up)\s+)?(?:to|at|in|into)\s+{_VAL}"
        ),
        event=True,
        check="school",
        of_object=True,
    ),
    _Pattern(
        "school",
        _rx(
            rf"\b(?:goes|go|going|attends|attending|started|starts|enrolled|transferred|switched|moved|"
            rf"changed\s+schools|studies|studying|is\s+a\s+student|is|are)\s+(?:(?:now|schools|up|over)\s+)?"
            rf"(?:to|at|in)?\s*(?:a\s+new\s+school\s*,?\s*)?{_VAL}"
        ),
        event=True,
        check="school",
    ),
)

# a value said to stop is read before the same clause's current-value patterns ("stopped drinking wine")
_PATTERNS = tuple(sorted(_PATTERNS, key=lambda p: not p.ended))

_FAV_RE = re.compile(
    rf"(?P<owner>\b[\w]+(?:'s)?(?:\s+\w+)?)'s\s+(?:new\s+|current\s+|all-time\s+)?favou?rite\s+(?P<cat>[a-z]+(?:\s+[a-z]+)?)"
    rf"\s+(?:is|are)\s+(?:now\s+)?{_VAL}",
)
_MOMENT_RE = re.compile(
    r"\b(?P<q>morning|mornings|breakfast|afternoon|afternoons|evening|evenings|night|nights|bedtime|lunch|dinner|work)\b",
    re.IGNORECASE,
)
_QUALIFIERS = {
    "mornings": "morning",
    "breakfast": "morning",
    "afternoons": "afternoon",
    "evenings": "evening",
    "nights": "night",
    "bedtime": "night",
    "dinner": "evening",
}
_RESIDENCE_JUNK = frozenset("there here home abroad downtown together alone out".split())


def _value_ok(p: _Pattern, value: str) -> bool:
    if not value:
        return p.ended and p.value == ""
    head = _head(value)
    if p.check == "drink":
        return head in DRINKS or head.rstrip("s") in DRINKS
    if p.check == "meal":
        return head in _MEALS
    if p.check == "job":
        return any(w in JOB_NOUNS or w.rstrip("s") in JOB_NOUNS for w in value.split())
    if p.check == "not_school":
        return not any(w in _SCHOOL_NOUNS for w in value.replace("-", " ").split())
    if p.check == "school":
        return any(w in _SCHOOL_NOUNS for w in value.replace("-", " ").split())
    if p.check == "vehicle":
        return head in _VEHICLES
    if p.attribute == "residence":
        return head not in _RESIDENCE_JUNK and not any(w in _SCHOOL_NOUNS for w in value.split())
    return True


def find_slots(text: str, speaker: str = "User") -> list[Slot]:
    """The single-valued facts ``text`` states (see the module docstring); ``speaker`` is who "we" is."""
    out: list[Slot] = []
    main: str | None = None
    fact_moment = _MOMENT_RE.search(text)
    for clause in _CLAUSE_SPLIT_RE.split(text.strip().rstrip(".!")):
        if not clause:
            continue
        fav = _FAV_RE.search(clause)
        if fav and not _NOT_YET_RE.search(clause):
            owner = _subject(fav.group("owner") + "'s", speaker)
            value = _norm_value(_cut_value(fav.group("v")))
            if owner and value:
                out.append(Slot(owner.removesuffix("'s"), f"favourite:{fav.group('cat').lower()}", value))
            continue
        done: set[str] = set()
        ended: dict[str, str] = {}  # attribute -> the value the clause says stopped
        for p in _PATTERNS:
            if p.attribute in done and not (p.attribute in ended and not p.ended):
                continue
            m = p.regex.search(clause)
            if m is None:
                continue
            subj = _subject(m.group("o") + " ", speaker) if p.of_object else _subject(clause[: m.start()], speaker)
            if subj is None:  # "he", "she": whoever the fact is about, if an earlier clause named them
                if main is None:
                    break
                subj = main
            subj = subj or main or speaker.lower()
            main = main or subj
            lead = clause[: m.end()]
            if not p.ended and _NEGATED_RE.search(lead):
                continue
            if _NOT_YET_RE.search(clause) or (_COEXIST_RE.search(clause) and not p.ended):
                break
            if not p.event and _PAST_STATE_RE.search(lead):
                break
            if p.value is not None:
                value = p.value
            elif m.lastindex and "v" not in p.regex.groupindex:
                value = m.group(1).lower()
            else:
                value = _norm_value(_cut_value(m.group("v")))
            if p.attribute == "diet":
                value = _DIETS.get(value, value)
            if p.attribute == "relationship":
                value = _REL_STATUS.get(value, value)
            if not _value_ok(p, value):
                continue
            if p.attribute in ended and same_value(ended[p.attribute], value):
                continue  # "stopped drinking coffee": the value that ended, not a current one
            if p.ended:  # "moved out of the flat in Bristol and into a house in Bath": the new one may follow
                ended[p.attribute] = value
            qualifier = None
            if p.attribute == "drink":
                q = _MOMENT_RE.search(clause) or fact_moment
                if q is not None:
                    w = q.group("q").lower()
                    qualifier = _QUALIFIERS.get(w, w)
            out.append(Slot(subj, p.attribute, value, p.ended, qualifier))
            done.add(p.attribute)
    # one slot per (key, ended, value)
    seen: set[tuple[str, bool, str]] = set()
    uniq: list[Slot] = []
    for s in out:
        k = (s.key, s.ended, s.value)
        if k not in seen:
            seen.add(k)
            uniq.append(s)
    return uniq


_HE_SHE_RE = re.compile(r"^(?:He|She)\s+(?=[a-z])")
#: "moved him to Elm Park Primary": a pronoun as the object whose slot the sentence states
OBJECT_PRONOUN_RE = re.compile(
    r"\b(?:moved|switched|transferred|sent|enrolled|put)\s+(?P<p>him|her)(?=\s+(?:over\s+|up\s+)?(?:to|at|in|into)\s)"
)


def pronoun_attributes(sentence: str, speaker: str = "User") -> list[str]:
    """The single-valued facts a sentence opening with "He" or "She", or moving "him" or "her"
    somewhere, states of that person ("She moved to Brightwater Primary", "User moved him to Elm Park
    Primary": school), ended ones left out."""
    if (m := _HE_SHE_RE.match(sentence)) is not None:
        named = "Pat " + sentence[m.end() :]  # any name stands for the pronoun
    elif (o := OBJECT_PRONOUN_RE.search(sentence)) is not None:
        named = sentence[: o.start("p")] + "Pat" + sentence[o.end("p") :]
    else:
        return []
    slots = find_slots(named, speaker)
    return list(dict.fromkeys(x.attribute for x in slots if x.subject == "pat" and not x.ended))
