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

from deepcontext.extract.slot_words import _DIETS, _MEALS, _SCHOOL_NOUNS, _VEHICLES, DRINKS, JOB_NOUNS
from deepcontext.language.gazetteer import KIN

__all__ = ["PATTERNS", "SlotPattern"]


_W = r"[\w'&.+-]+"
_VAL = rf"(?P<v>{_W}(?:\s+{_W}){{0,5}})"
_ART = r"(?:(?:a|an|the|his|her|their|our|\w+'s)\s+)?"

_JOB_RE = "|".join(sorted((re.escape(j) for j in JOB_NOUNS), key=len, reverse=True))
_KIN_RE = "|".join(sorted((re.escape(k) + "s?" for k in KIN), key=len, reverse=True))
_DIET_RE = "|".join(sorted(_DIETS, key=len, reverse=True))


def _head(value: str) -> str:
    return value.split()[-1] if value else ""


@dataclass(frozen=True, slots=True)
class SlotPattern:
    attribute: str
    regex: re.Pattern[str]
    ended: bool = False
    event: bool = False  # a change that happened ("moved to", "switched to"): the past tense is fine
    value: str | None = None  # a fixed value (the relationship status, "retired") instead of the capture
    check: str | None = None  # the value's head must belong to this vocabulary
    of_object: bool = False  # the slot is the verb's object's ("moved Noor to Elm Park"), named in group "o"
    #: what the pattern is called (unique), and a fact it reads with the value it finds there
    #: (``tests/test_slot_patterns.py`` reads every pattern's example)
    name: str = ""
    says: tuple[str, str] = ("", "")


def _rx(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


PATTERNS: tuple[SlotPattern, ...] = (
    # --- where they live
    SlotPattern(
        "residence",
        _rx(
            rf"\b(?:lives?|living|resides?|residing|(?:is|are)\s+based|settled)\s+"
            rf"(?:(?:now|currently|full-time|permanently|together|alone)\s+)?(?:in|near)\s+{_VAL}"
        ),
        name="residence-lives-in",
        says=("User lives in Leeds.", "leeds"),
    ),
    SlotPattern(
        "residence",
        _rx(
            rf"\b(?:moved|moves|moving|relocated|relocates|relocating|emigrated)\s+"
            rf"(?:(?:back|over|house|permanently|for\s+good)\s+)?(?:from\s+[\w'&.-]+(?:\s+[\w'&.-]+){{0,3}}?\s+)?to\s+{_VAL}"
        ),
        event=True,
        name="residence-moved-to",
        says=("User moved to York.", "york"),
    ),
    SlotPattern(
        "residence",
        _rx(
            rf"\b(?:rents?|renting|owns?|bought|shares?|sharing|found|got|moved\s+into|^\s*into)\s+{_ART}"
            rf"(?:[\w-]+\s+){{0,3}}?(?:apartment|flat|house|home|place|condo|studio|loft|cottage)\s+"
            rf"(?:in|near|outside(?:\s+of)?)\s+{_VAL}"
        ),
        event=True,
        name="residence-home-in",
        says=("User rents a small flat in Brno.", "brno"),
    ),
    SlotPattern(
        "residence",
        _rx(rf"\bhome\s+is\s+(?:now\s+)?(?:in\s+)?{_VAL}"),
        name="residence-home-is",
        says=("User's home is now in Porto.", "porto"),
    ),
    SlotPattern(
        "residence",
        _rx(rf"\b(?:no(?:es)?\s+longer|doesn't|does\s+not|don't)\s+lives?\s+in\s+{_VAL}"),
        ended=True,
        name="residence-no-longer",
        says=("User no longer lives in Leeds.", "leeds"),
    ),
    SlotPattern(
        "residence",
        _rx(rf"\b(?:moved|moving)\s+(?:away\s+)?(?:out\s+of|away\s+from)\s+{_VAL}"),
        ended=True,
        event=True,
        name="residence-moved-out",
        says=("User moved out of Leeds.", "leeds"),
    ),
    # --- who they work for, as what
    SlotPattern(
        "employer",
        _rx(
            rf"\b(?:works?|working|employed)\s+(?:(?:now|currently|full[- ]time|part[- ]time|"
            rf"remotely)\s+)?(?:as\s+(?:a|an)\s+(?:[\w-]+\s+){{1,3}}?)?(?:at|for|by)\s+{_VAL}"
        ),
        name="employer-works-at",
        says=("User works at Globex.", "globex"),
    ),
    SlotPattern(
        "employer",
        _rx(
            rf"\b(?:started|starts|starting)\s+(?:(?:a\s+)?(?:new\s+)?(?:job|position|role|working)\s+)?"
            rf"(?:at|with)\s+{_VAL}"
        ),
        event=True,
        check="not_school",  # a child starting at a school attends it ("started a job at" still counts)
        name="employer-started-at",
        says=("User started a new job at Initech.", "initech"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\b(?:joined|joins)\s+{_VAL}\s+as\s+(?:a|an)\b"),
        event=True,
        name="employer-joined-as",
        says=("User joined Hooli as an engineer.", "hooli"),
    ),
    SlotPattern(
        "employer",
        _rx(
            rf"\b(?:got|landed|accepted|took|has|have)\s+(?:a|an|the)\s+(?:new\s+|dream\s+)?"
            rf"(?:job|position|role|offer)\s+(?:as\s+(?:a|an)\s+(?:[\w-]+\s+){{1,3}}?)?(?:at|with|from)\s+{_VAL}"
        ),
        event=True,
        name="employer-got-job-at",
        says=("User got a new job at Acme.", "acme"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\bhired\s+(?:by|at)\s+{_VAL}"),
        event=True,
        name="employer-hired-by",
        says=("User was hired by Umbrella.", "umbrella"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\b(?:is|'s|became|as)\s+(?:now\s+)?(?:a|an)\s+(?:[\w-]+\s+){{0,2}}?(?:{_JOB_RE})\s+(?:at|for|with)\s+{_VAL}"),
        name="employer-job-at",
        says=("User is a nurse at Riverside Clinic.", "riverside clinic"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\bnew\s+(?:job|position|role|employer)\s+(?:is\s+)?(?:at|with)\s+{_VAL}"),
        event=True,
        name="employer-new-job",
        says=("User's new job is at Vandelay.", "vandelay"),
    ),
    SlotPattern(
        "employer",
        _rx(
            rf"\b(?:quit|left|leaves|quits|leaving|quitting)\s+(?:(?:his|her|their|the|a|\w+'s)\s+)?"
            rf"(?:job|position|role)\s+(?:at|with)\s+{_VAL}"
        ),
        ended=True,
        event=True,
        name="employer-quit-job-at",
        says=("User quit their job at Globex.", "globex"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\b(?:no(?:es)?\s+longer|doesn't|does\s+not)\s+works?\s+(?:at|for)\s+{_VAL}"),
        ended=True,
        name="employer-no-longer",
        says=("User no longer works at Globex.", "globex"),
    ),
    SlotPattern(
        "employer",
        _rx(rf"\b(?:laid\s+off|fired|let\s+go)\s+(?:from|by)\s+{_VAL}"),
        ended=True,
        event=True,
        name="employer-laid-off",
        says=("User was laid off from Globex.", "globex"),
    ),
    SlotPattern(
        "employer",
        _rx(r"\b(?:lost|quit)\s+(?:(?:his|her|their|the|\w+'s)\s+)?job\b(?!\s+(?:at|with|as))"),
        ended=True,
        event=True,
        value="",
        name="employer-lost-job",
        says=("User lost their job.", ""),
    ),
    SlotPattern(
        "job",
        _rx(rf"\b(?:works?|working|employed|hired|started|starts|joined\s+\S+)\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
        name="job-works-as",
        says=("User works as a nurse.", "nurse"),
    ),
    SlotPattern(
        "job",
        _rx(rf"\b(?:is|'s|became|becomes|has\s+become)\s+(?:now\s+)?(?:a|an)\s+{_VAL}"),
        check="job",
        name="job-is-a",
        says=("User is a teacher.", "teacher"),
    ),
    SlotPattern(
        "job",
        _rx(rf"\b(?:job|position|role|career)\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
        name="job-role-as",
        says=("User took a role as a pharmacist.", "pharmacist"),
    ),
    SlotPattern(
        "job",
        _rx(rf"\bretrained\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
        name="job-retrained",
        says=("User retrained as a plumber.", "plumber"),
    ),
    SlotPattern(
        "job",
        _rx(rf"\b(?:started|starts|joined|joins)\s+(?:at\s+)?\S+(?:\s+\S+)?\s+as\s+(?:a|an)\s+{_VAL}"),
        event=True,
        check="job",
        name="job-started-as",
        says=("User started at Globex as an accountant.", "accountant"),
    ),
    SlotPattern(
        "job",
        _rx(
            r"\b(?:is|are|has|got|just|recently|finally|now)\s+(?:(?:now|just|recently|finally|officially|"
            r"been)\s+)?(retired|unemployed|between\s+jobs|out\s+of\s+work)\b"
        ),
        event=True,
        name="job-retired-now",
        says=("User is now retired.", "retired"),
    ),
    SlotPattern(
        "job",
        _rx(r"\bretired\s+(?:last|this|in|from|a|two|three|after)\b"),
        event=True,
        value="retired",
        name="job-retired-when",
        says=("User retired last year.", "retired"),
    ),
    SlotPattern(
        "job",
        _rx(rf"\b(?:no(?:es)?\s+longer|isn't|is\s+not)\s+(?:working\s+as\s+)?(?:a|an)\s+{_VAL}"),
        ended=True,
        check="job",
        name="job-no-longer",
        says=("User is no longer a nurse.", "nurse"),
    ),
    # --- relationship status
    SlotPattern(
        "relationship",
        _rx(
            r"\b(?:is|are|got|get|gets|getting|became|has\s+been|have\s+been|just|recently|finally)"
            r"\s+(?:(?:now|recently|finally|officially|happily|just|been|got)\s+)*"
            r"(married|divorced|engaged|separated|widowed|single)\b"
        ),
        event=True,
        name="relationship-status",
        says=("User got married.", "married"),
    ),
    SlotPattern(
        "relationship",
        _rx(r"\b(?:broke|broken|breaking)\s+up\b|\bsplit\s+up\b|\bcalled\s+off\s+\S+\s+engagement\b"),
        event=True,
        value="single",
        name="relationship-broke-up",
        says=("User broke up with Sam.", "single"),
    ),
    SlotPattern(
        "relationship",
        _rx(
            r"\b(?:is|are)\s+(?:now\s+)?(?:dating|seeing)\s+\S+|\bin\s+a\s+(?:new\s+)?relationship\b|"
            r"\bhas\s+a\s+new\s+(?:girlfriend|boyfriend|partner)\b|\bstarted\s+dating\b"
        ),
        event=True,
        value="in a relationship",
        name="relationship-dating",
        says=("User is dating Alex.", "in a relationship"),
    ),
    SlotPattern(
        "relationship",
        _rx(r"\b(?:tied\s+the\s+knot|got\s+hitched)\b"),
        event=True,
        value="married",
        name="relationship-tied-knot",
        says=("User tied the knot in June.", "married"),
    ),
    SlotPattern(
        "relationship",
        _rx(r"\b(?:have|has|are|is)\s+(?:been\s+)?together\b"),
        value="in a relationship",
        name="relationship-together",
        says=("User has been together with Sam for years.", "in a relationship"),
    ),
    # --- food and drink habits
    SlotPattern(
        "diet",
        _rx(
            rf"\b(?:is|'s|went|gone|going|became|turned|has\s+been|have\s+been|eats|eating|follows|on)\s+"
            rf"(?:(?:now|fully|completely|strictly|mostly|a|an)\s+)*({_DIET_RE})\b"
        ),
        event=True,
        name="diet-is",
        says=("User is vegetarian.", "vegetarian"),
    ),
    SlotPattern(
        "diet",
        # a clause that is the diet alone, said as the state now ("..., so pescatarian now")
        _rx(rf"^(?:(?:so|and|now|fully|mostly|strictly|basically)\s+)*({_DIET_RE})\s+(?:now|these\s+days|nowadays)$"),
        event=True,
        name="diet-now",
        says=("So pescatarian now", "pescatarian"),
    ),
    SlotPattern(
        "diet",
        _rx(
            r"\b(?:stopped|quit|gave\s+up|gives\s+up|cut\s+out)\s+(?:eating\s+)?meat\b|"
            r"\b(?:no(?:es)?\s+longer|doesn't|does\s+not)\s+eats?\s+meat\b"
        ),
        event=True,
        value="vegetarian",
        name="diet-no-meat",
        says=("User stopped eating meat.", "vegetarian"),
    ),
    SlotPattern(
        "diet",
        _rx(r"\beats?\s+(?:meat|fish|chicken|everything)\s+again\b|\bback\s+to\s+eating\s+meat\b"),
        event=True,
        value="omnivore",
        name="diet-meat-again",
        says=("User eats meat again.", "omnivore"),
    ),
    SlotPattern(
        "diet",
        _rx(r"\beats?\s+(?:everything|anything|meat)\b"),
        value="omnivore",
        name="diet-eats-everything",
        says=("User eats everything.", "omnivore"),
    ),
    SlotPattern(
        "diet",
        _rx(rf"\b(?:no(?:es)?\s+longer|isn't|is\s+not|stopped\s+being|quit\s+being)\s+(?:a\s+)?({_DIET_RE})\b"),
        ended=True,
        event=True,
        name="diet-no-longer",
        says=("User is no longer vegan.", "vegan"),
    ),
    SlotPattern(
        "drink",
        _rx(
            rf"\b(?:drinks|drinking|drink|sips|has|have|having|gets|orders|makes|brews|grabs|"
            rf"starts\s+(?:the|\w+'s|every)\s+(?:day|morning)\s+with)\s+{_VAL}"
        ),
        check="drink",
        name="drink-drinks",
        says=("User drinks green tea.", "green tea"),
    ),
    SlotPattern(
        "drink",
        _rx(rf"\b(?:switched|switches|switching|moved|changed)\s+(?:over\s+)?(?:from\s+[\w\s-]+?\s+)?to\s+{_VAL}"),
        event=True,
        check="drink",
        name="drink-switched-to",
        says=("User switched to decaf.", "decaf"),
    ),
    SlotPattern(
        "breakfast",
        _rx(rf"\b(?:eats|has|have|having|makes)\s+{_VAL}\s+(?:for|at)\s+breakfast\b"),
        check="meal",
        name="breakfast-for",
        says=("User eats porridge for breakfast.", "porridge"),
    ),
    SlotPattern(
        "breakfast",
        _rx(rf"\bbreakfast\s+is\s+(?:now\s+)?{_VAL}"),
        check="meal",
        name="breakfast-is",
        says=("User's breakfast is toast.", "toast"),
    ),
    SlotPattern(
        "drink",
        _rx(rf"\b(?:doesn't|does\s+not|don't|no(?:es)?\s+longer|never)\s+(?:drinks?|has|have)\s+{_VAL}"),
        ended=True,
        check="drink",
        name="drink-does-not",
        says=("User no longer drinks coffee.", "coffee"),
    ),
    SlotPattern(
        "drink",
        _rx(rf"\b(?:gave\s+up|gives\s+up|quit|stopped\s+drinking|cut\s+out)\s+{_VAL}"),
        ended=True,
        event=True,
        check="drink",
        name="drink-gave-up",
        says=("User gave up coffee.", "coffee"),
    ),
    # --- car
    SlotPattern(
        "car",
        _rx(rf"\bdrives\s+(?:a|an|the)\s+{_VAL}"),
        name="car-drives",
        says=("User drives a Toyota Corolla.", "toyota corolla"),
    ),
    SlotPattern(
        "car",
        _rx(rf"\b(?:car|ride)\s+is\s+(?:now\s+)?(?:a|an)\s+{_VAL}"),
        name="car-is",
        says=("User's car is a Honda Civic.", "honda civic"),
    ),
    SlotPattern(
        "car",
        _rx(
            rf"\b(?:bought|got|leased|leases|traded\s+\S+\s+(?:\S+\s+)?for)\s+(?:a|an)\s+(?:new\s+|used\s+|"
            rf"second-hand\s+)?{_VAL}"
        ),
        event=True,
        check="vehicle",
        name="car-bought",
        says=("User bought a used van.", "van"),
    ),
    SlotPattern(
        "car",
        _rx(r"\bsold\s+(?:(?:his|her|their|the|\w+'s)\s+)?(?:old\s+)?car\b"),
        ended=True,
        event=True,
        value="",
        name="car-sold",
        says=("User sold their old car.", ""),
    ),
    # --- school or university
    SlotPattern(
        "school",
        _rx(
            rf"\b(?:moved|switched|transferred|sent|enrolled|put)\s+(?P<o>(?-i:[A-Z][\w'-]+)|(?:\w+'s\s+)?(?:{_KIN_RE}))\s+"
            rf"(?:(?:over|up)\s+)?(?:to|at|in|into)\s+{_VAL}"
        ),
        event=True,
        check="school",
        of_object=True,
        name="school-moved-child",
        says=("User moved Noor to Elm Park Primary.", "elm park primary"),
    ),
    SlotPattern(
        "school",
        _rx(
            rf"\b(?:goes|go|going|attends|attending|started|starts|enrolled|transferred|switched|moved|"
            rf"changed\s+schools|studies|studying|is\s+a\s+student|is|are)\s+(?:(?:now|schools|up|over)\s+)?"
            rf"(?:to|at|in)?\s*(?:a\s+new\s+school\s*,?\s*)?{_VAL}"
        ),
        event=True,
        check="school",
        name="school-attends",
        says=("User attends Leeds Grammar School.", "leeds grammar school"),
    ),
)

# a value said to stop is read before the same clause's current-value patterns ("stopped drinking wine")
PATTERNS = tuple(sorted(PATTERNS, key=lambda p: not p.ended))

_RESIDENCE_JUNK = frozenset("there here home abroad downtown together alone out".split())


def _value_ok(p: SlotPattern, value: str) -> bool:
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
