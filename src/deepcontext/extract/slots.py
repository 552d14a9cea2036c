"""Single-valued facts of a person ("slots"): where they live, their employer and job, relationship
status, diet, habitual drink, car, school, favourites.

A newer statement of another value supersedes the older memory (:mod:`deepcontext.services.updates`).
:func:`find_slots` reads a fact as the extractors write it ("Maya moved to Porto") and returns the
slots it states, or an *ended* slot ("User doesn't drink tea anymore"). Multi-valued relations,
"also / too / another", plans, wishes, past states and unresolved pronouns never give a slot. The
patterns it applies, and the vocabularies of their values, are :mod:`deepcontext.extract.slot_patterns`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deepcontext.extract.slot_patterns import _VAL, PATTERNS, _value_ok
from deepcontext.extract.slot_words import _DIETS, _REL_STATUS
from deepcontext.extract.slot_words import DRINKS as DRINKS
from deepcontext.extract.slot_words import JOB_NOUNS as JOB_NOUNS
from deepcontext.language.gazetteer import KIN
from deepcontext.language.unnamed import parsed

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


def find_slots(text: str, speaker: str = "User") -> list[Slot]:
    """The single-valued facts ``text`` states (see the module docstring); ``speaker`` is who "we" is."""
    text = parsed(text, speaker)
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
        for p in PATTERNS:
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
