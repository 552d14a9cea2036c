"""The patterns that state a slot (:mod:`deepcontext.extract.slots`): one regex per way of saying a
single-valued fact, with its attribute and whether it says the value ended or changed, and the
vocabularies a captured value must belong to (drinks, meals, jobs, schools, vehicles) or is
normalised by (diets, relationship statuses). The table stands apart from the reading of a fact
(:func:`~deepcontext.extract.slots.find_slots`), which splits it into clauses, finds their subjects
and applies these patterns: it grows with every new way of saying a fact, the reading does not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcontext.language.gazetteer import JOB_NOUNS as _GAZ_JOBS
from deepcontext.language.gazetteer import KIN

__all__ = ["DRINKS", "JOB_NOUNS"]


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


def _head(value: str) -> str:
    return value.split()[-1] if value else ""


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
