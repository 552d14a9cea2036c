"""Predicate rules: a verb phrase ("works at", "moved to", "is allergic to") between a subject and
the objects it allows."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from deepcontext.extract.relation_parts import (
    ANY_THING,
    LOC_OK,
    ORG_OK,
    PLACE_OK,
    TECH_OK,
    RelCtx,
    T,
    emit,
    modality_of,
    objects_after,
    subjects_before,
)
from deepcontext.language.gazetteer import LANGUAGES, words
from deepcontext.types import EntityType

__all__ = ["RULES", "Rule", "apply_rule"]

_PERFECT_GAP_RE = re.compile(r"\b(?:has|have|'ve|'s)\b", re.IGNORECASE)
_OVER_RE = re.compile(r"\s+(?:over|to|rather\s+than|instead\s+of|more\s+than)\s+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Rule:
    relation: str
    triggers: frozenset[str]
    pattern: re.Pattern[str]
    allowed: frozenset[EntityType]
    phrases: bool = False
    phrase_type: EntityType | None = None
    retype: dict[EntityType, EntityType] | None = None
    past_words: frozenset[str] = frozenset()
    negatable: bool = False  # negation turns it into `negated_relation`
    negated_relation: str | None = None
    keep_future: bool = True
    #: a sentence the rule must read, with the subject and object it finds (the relation is the
    #: rule's name; ``tests/test_relation_rules.py`` reads every rule's example)
    says: tuple[str, str, str] = ("", "", "")


def _rx(p: str) -> re.Pattern[str]:
    """A rule's predicate: case-insensitive, verbose (whitespace in the pattern is layout)."""
    return re.compile(p, re.IGNORECASE | re.VERBOSE)


RULES: tuple[Rule, ...] = (
    Rule(
        "works_at",
        words("work works worked working job employed intern interns interned interning internship position role gig hired"),
        _rx(r"""\b(?: work(?:s|ed|ing)? | employed | intern(?:s|ed|ing)? | hired\s+(?:by|at)
                | (?:got|has|had|have|landed|started|starts|accepted|took|found|holds?|held)\s+
                  (?:a\s+|an\s+|the\s+|\w+'s\s+)?(?:new\s+|first\s+|dream\s+|summer\s+|full-time\s+|part-time\s+)?
                  (?:job|position|role|internship|gig) )
              \s+ (?:(?:full[- ]time|part[- ]time|remotely|there|now|currently)\s+)?
              (?:as\s+(?:a|an)\s+(?:[\w-]+\s+){1,3}?)? (?:at|for)\s+"""),
        ORG_OK,
        retype={T.OTHER: T.ORGANIZATION},
        past_words=words("worked interned held had"),
        says=("User works at Globex.", "User", "Globex"),
    ),
    Rule(
        "colleague_of",
        words("work works worked working"),
        _rx(r"\bwork(?:s|ed|ing)?\s+(?:closely\s+)?with\s+"),
        frozenset({T.PERSON}),
        past_words=words("worked"),
        says=("User works with Priya at Globex.", "User", "Priya"),
    ),
    Rule(
        "studies_at",
        words(
            "study studies studied studying student enrolled graduated graduate graduates attend attends attended "
            "attending major majoring majored degree phd"
        ),
        _rx(r"""\b(?: (?:stud(?:y|ies|ied|ying)|enrolled|graduated|graduates|graduate|student|major(?:s|ed|ing)?)
                      (?:\s+[\w-]+){0,3}?\s+(?:at|from)\s+
                | attend(?:s|ed|ing)?\s+ )"""),
        frozenset({T.ORGANIZATION, T.OTHER}),
        retype={T.OTHER: T.ORGANIZATION},
        past_words=words("studied graduated attended majored"),
        says=("User studies at Leeds University.", "User", "Leeds University"),
    ),
    Rule(
        "lives_in",
        words("live lives lived living based reside resides resided residing settled"),
        _rx(r"""\b(?:live[sd]?|living|resid(?:es?|ed|ing)|based|settled)\s+
              (?:(?:now|currently|still|happily|right|alone|together|here|there|full-time)\s+)?
              (?:with\s+(?:[\w']+\s+){1,3})? (?:in|near)\s+"""),
        LOC_OK,
        retype={T.OTHER: T.LOCATION},
        past_words=words("lived resided"),
        says=("User lives in Porto.", "User", "Porto"),
    ),
    Rule(
        "from",
        words("from grew raised"),
        _rx(r"""\b(?: (?:is|was|comes|came|hails|are)\s+(?:originally\s+)?from | grew\s+up\s+in
                | (?:was\s+)?raised\s+in )\s+"""),
        LOC_OK,
        retype={T.OTHER: T.LOCATION},
        says=("User is from Brazil.", "User", "Brazil"),
    ),
    Rule(
        "born_in",
        words("born"),
        _rx(r"\bborn\s+(?:and\s+raised\s+)?in\s+"),
        LOC_OK,
        retype={T.OTHER: T.LOCATION},
        says=("User was born in Kyoto.", "User", "Kyoto"),
    ),
    Rule(
        "moved_to",
        words("moved move moves moving relocated relocate relocates relocating"),
        _rx(r"\b(?:moved|moves|moving|move|relocat(?:ed|es|ing|e))\s+(?:back\s+|here\s+|out\s+|over\s+)?to\s+"),
        LOC_OK,
        retype={T.OTHER: T.LOCATION},
        says=("User moved to Lisbon.", "User", "Lisbon"),
    ),
    Rule(
        "visited",
        words(
            "visited visit visits visiting went go goes going gone been traveled travelled travel travels traveling "
            "travelling flew fly flies flying trip vacation vacationed holiday drove"
        ),
        _rx(r"""\b(?: visit(?:ed|s|ing)?\s+
                | (?:went|go|goes|going|gone|been|travel(?:l?ed|l?ing|s)?|flew|fl(?:y|ies|ying)|drove|driving|trip
                    |vacation(?:ed|ing)?|holiday(?:ed|ing)?)\s+(?:back\s+|out\s+)?(?:to|in)\s+ )"""),
        PLACE_OK,
        retype={T.OTHER: T.LOCATION},
        says=("User visited Japan.", "User", "Japan"),
    ),
    Rule(
        "likes",
        words(
            "love loves loved loving enjoy enjoys enjoyed enjoying like likes liked adore adores adored into fan "
            "passionate fond obsessed crazy addicted"
        ),
        _rx(r"""\b(?: lov(?:e|es|ed|ing) | enjoy(?:s|ed|ing)? | lik(?:e|es|ed) | ador(?:e|es|ed)
                | (?:is|was|are|has\s+been|have\s+been)\s+
                  (?:really\s+|so\s+|very\s+|super\s+|totally\s+|also\s+|always\s+been\s+)?
                  (?:into|passionate\s+about|fond\s+of|obsessed\s+with|crazy\s+about
                    |(?:a\s+)?(?:big\s+|huge\s+|massive\s+|great\s+)?fan\s+of|addicted\s+to) )\s+"""),
        ANY_THING,
        phrases=True,
        phrase_type=T.PREFERENCE,
        negatable=True,
        negated_relation="dislikes",
        keep_future=False,
        says=("User likes jazz.", "User", "jazz"),
    ),
    Rule(
        "dislikes",
        words("hate hates hated dislike dislikes disliked stand detest detests loathe loathes fan into"),
        _rx(r"""\b(?: hat(?:e|es|ed) | dislik(?:e|es|ed) | detests? | loathes?
                | (?:can't|cannot|can\s+not|couldn't)\s+stand
                | (?:(?:is|was)\s+not|isn't)\s+(?:really\s+)?(?:a\s+)?(?:big\s+|huge\s+)?(?:fan\s+of|into) )\s+"""),
        ANY_THING,
        phrases=True,
        phrase_type=T.PREFERENCE,
        negatable=True,
        keep_future=False,
        says=("User hates cilantro.", "User", "cilantro"),
    ),
    Rule(
        "prefers",
        words("prefer prefers preferred"),
        _rx(r"\bprefer(?:s|red)?\s+"),
        ANY_THING,
        phrases=True,
        phrase_type=T.PREFERENCE,
        negatable=True,
        keep_future=False,
        says=("User prefers tea over coffee.", "User", "tea"),
    ),
    Rule(
        "allergic_to",
        words("allergic"),
        _rx(r"\ballergic\s+to\s+"),
        ANY_THING,
        phrases=True,
        phrase_type=T.CONCEPT,
        negatable=True,
        says=("User is allergic to peanuts.", "User", "peanuts"),
    ),
    Rule(
        "uses",
        words(
            "use uses used using code codes coded coding program programs programming programmed write writes wrote "
            "writing develop develops developed developing build builds built building"
        ),
        _rx(r"""\b(?: us(?:e|es|ed|ing)(?!\s+to\b)\s+
                | (?:cod(?:e|es|ed|ing)|program(?:s|med|ming)?|writ(?:e|es|ing)|wrote|develop(?:s|ed|ing)?
                    |build(?:s|ing)?|built)\s+
                  (?:(?:mostly|mainly|primarily|only|everything|apps|things|websites?|software|stuff|tools|services
                     |backends?)\s+)?
                  (?:in|with)\s+ )"""),
        TECH_OK,
        retype={T.OTHER: T.TECHNOLOGY},
        negatable=True,
        keep_future=False,
        says=("User uses Python.", "User", "Python"),
    ),
    Rule(
        "learns",
        words("learn learns learned learnt learning study studies studied studying taking"),
        _rx(r"""\b(?: learn(?:s|ed|t|ing)? | stud(?:y|ies|ied|ying)
                | taking\s+(?:\w+\s+)?(?:classes|lessons|a\s+class|a\s+course)\s+(?:in|on) )\s+
              (?!at\b|from\b|in\b|for\b|with\b|abroad\b|hard\b)(?:how\s+)?"""),
        frozenset({T.CONCEPT, T.TECHNOLOGY, T.PRODUCT}),
        phrases=True,
        phrase_type=T.CONCEPT,
        negatable=True,
        keep_future=False,
        says=("User is learning Spanish.", "User", "Spanish"),
    ),
    Rule(
        "owns",
        words("run runs ran own owns owned founded co-founded cofounded opened"),
        _rx(r"\b(?:runs?|ran|owns?|owned|(?:co-?)?founded|opened)\s+"),
        frozenset({T.ORGANIZATION}),
        past_words=words("ran owned"),
        says=("User founded Brightleaf Studio.", "User", "Brightleaf Studio"),
    ),
    Rule(
        "member_of",
        words("member joined join joins joining belongs belong part volunteer volunteers volunteered volunteering"),
        _rx(r"""\b(?: (?:is|was|became|becomes)\s+(?:a\s+)?(?:proud\s+|founding\s+|active\s+|new\s+)?member\s+of
                | joined | joins | joining | belongs?\s+to | (?:is|was)\s+(?:a\s+)?part\s+of
                | volunteer(?:s|ed|ing)?\s+(?:at|with|for) )\s+"""),
        frozenset({T.ORGANIZATION, T.OTHER, T.EVENT}),
        retype={T.OTHER: T.ORGANIZATION},
        says=("User is a member of the Leeds Running Club.", "User", "Leeds Running Club"),
    ),
    Rule(
        "speaks",
        words("speak speaks spoke speaking fluent native"),
        _rx(r"""\b(?: speak(?:s|ing)? | spoke | (?:is\s+)?fluent\s+in
                | (?:is\s+)?(?:a\s+)?native\s+(?:\w+\s+)?speaker\s+of )\s+
              (?:some\s+|a\s+little\s+|fluent\s+|basic\s+|conversational\s+)?"""),
        frozenset({T.CONCEPT}),
        negatable=True,
        says=("User speaks Portuguese.", "User", "Portuguese"),
    ),
    Rule(
        "married_to",
        words("married"),
        _rx(r"\bmarried\s+to\s+"),
        frozenset({T.PERSON, T.OTHER}),
        retype={T.OTHER: T.PERSON},
        says=("User is married to Sam.", "User", "Sam"),
    ),
    Rule(
        "partner_of",
        words("engaged dating"),
        _rx(r"\b(?:engaged\s+to|dating)\s+"),
        frozenset({T.PERSON, T.OTHER}),
        retype={T.OTHER: T.PERSON},
        keep_future=False,
        says=("User is dating Alex.", "User", "Alex"),
    ),
    Rule(
        "friend_of",
        words("friends"),
        _rx(r"\b(?:best\s+|good\s+|close\s+|old\s+)?friends\s+with\s+"),
        frozenset({T.PERSON, T.OTHER}),
        retype={T.OTHER: T.PERSON},
        says=("User is friends with Jo.", "User", "Jo"),
    ),
)


_PLANNABLE = frozenset({"visited", "moved_to", "works_at", "studies_at", "lives_in", "member_of"})


def apply_rule(ctx: RelCtx, rule: Rule) -> None:
    for m in rule.pattern.finditer(ctx.text):
        subjects, gap = subjects_before(ctx, m.start())
        if not subjects:
            continue
        negated, wish, future, used_to = modality_of(gap)
        if wish or (future and not rule.keep_future):
            continue
        relation = rule.relation
        if negated:
            if not rule.negatable or rule.negated_relation is None:
                continue
            relation = rule.negated_relation
        targets = objects_after(ctx, m.end(), rule.allowed, rule.phrases)
        if relation == "speaks":
            targets = [(n, sp) for n, sp in targets if n in LANGUAGES]
        if relation == "learns":
            targets = [(n, sp) for n, sp in targets if sp is None or sp.type is not T.CONCEPT or n in LANGUAGES]
        if not targets:
            continue
        props: dict[str, Any] = {}
        first = m.group(0).split()[0].lower()
        if used_to or (first in rule.past_words and not _PERFECT_GAP_RE.search(gap)):
            props["past"] = True  # "worked at", "used to live in"; not "has lived in"
        if future or (ctx.future and relation in _PLANNABLE):
            props["planned"] = True
        if relation == "prefers":
            o = _OVER_RE.search(ctx.text, m.end())
            if o:
                other = objects_after(ctx, o.end(), rule.allowed, True)
                if other:
                    props["over"] = other[0][0]
        ctx.last_subjects = subjects
        emit(ctx, subjects, relation, targets, rule.phrase_type, rule.retype, props)
