"""One sentence to facts, as named steps (:data:`SENTENCE_STEPS`) over a :class:`Draft`.

Each step reads and rewrites the draft and returns False when the sentence gives no fact: the
opening (leads, fillers, questions, secrets), the assistant's view of the user, the user's
referents and first person, whether it says enough, its entities, relations and time, "we" and
relative dates written out, its kind, its entities, and the facts it stores.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deepcontext.extract.batch import BatchAcc
from deepcontext.extract.compound import split_compound
from deepcontext.extract.entities import find_entities
from deepcontext.extract.facts import (
    confidence_of,
    content_word_count,
    importance_of,
    is_episodic_action,
    is_procedural,
    is_question,
    is_skippable,
    starts_with_third_pronoun,
    strip_lead,
    tense_of,
)
from deepcontext.extract.interface import (
    ExtractedFact,
    MessageIn,
)
from deepcontext.extract.introductions import drop_introduction
from deepcontext.extract.possessives import tidy_possessives
from deepcontext.extract.referents import (
    IT_STATE_RE,
    PRONOUN_START_RE,
    Referents,
    it_is_thing,
    name_pronoun,
    single_person,
    single_thing,
)
from deepcontext.extract.relations import find_relations
from deepcontext.extract.resolve import (
    reported_speech,
    rewrite_we,
    with_year,
    write_time,
)
from deepcontext.extract.rewrite import (
    FIRST_PERSON_RE,
    SECOND_PERSON_RE,
    WE_RE,
    rewrite_first_person,
    rewrite_second_person,
)
from deepcontext.extract.sentences import is_foreign
from deepcontext.extract.verbs import is_base_verb, lemmas_of
from deepcontext.language.gazetteer import IRREGULAR_PAST
from deepcontext.language.timeparse import TimeMention, resolve_time
from deepcontext.types import EntityType, MemoryType

__all__ = ["SENTENCE_STEPS", "Draft"]

_WORDS_RE = re.compile(r"[a-z][a-z'-]*")
_TRAILING_JUNK_RE = re.compile(
    r"(?:\s*(?::\)|:-\)|:\(|:D|;\)|:P|<3|xD|XD|\^\^|[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200d]+))+\s*$"
)
_EMOJI_RE = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200d]+")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"\s+([.,;:!?])")
_END_PUNCT_RE = re.compile(r"\s*(?:[.!…]+|\.\.\.)\s*$")
_ASSIST_PREFIX_RE = re.compile(
    r"^(?:(?:it's|it\s+is|that's|that\s+is|how)\s+(?:\w+\s+){0,2}?(?:great|nice|wonderful|awesome|cool|amazing|"
    r"fantastic|impressive|exciting|good|lovely|interesting|sweet|fun|brave|admirable)\s+(?:that\s+|to\s+hear\s+(?:that\s+)?)"
    r"|(?:i'm|i\s+am)\s+(?:so\s+|really\s+|very\s+)?(?:glad|happy|sorry|excited|thrilled)\s+(?:to\s+(?:hear|see|know)\s+)?that\s+"
    r"|i\s+(?:remember|know|recall|understand|see|noticed|gather|hear)\s+(?:that\s+)?"
    r"|(?:as\s+)?you\s+(?:mentioned|said|told\s+me|noted|shared|wrote)(?:\s+(?:earlier|before))?(?:\s+that|,)?\s+"
    r"|(?:based\s+on|from)\s+what\s+you(?:'ve|\s+have)?\s+(?:told\s+me|said|shared|mentioned)(?:\s+(?:so\s+far|before|earlier))?,?\s+"
    r"|if\s+i\s+(?:remember|recall)\s+(?:correctly|right),?\s+"
    r"|noted(?:\s+that)?[:,]?\s+|got\s+it[,:.!]?\s+|understood[,:.!]?\s+|so\s+|since\s+(?=you))+",
    re.IGNORECASE,
)
# "..., so I'll keep that in mind": the assistant's own clause is cut off
_ASSIST_CLAUSE_CUT_RE = re.compile(
    r"\s*(?:[,;:]|\s-|\s—)\s*(?:(?:so|and|but|which|then)\s+)?(?:I|I'll|I'm|I've|I'd|let\s+me|let's|let\s+us|we'll)\b.*$"
)
_ASSIST_SUBJECT_RE = re.compile(r"^(?:you|your|you're|you've)\b", re.IGNORECASE)
_ADVICE_RE = re.compile(
    r"^you(?:'ll|\s+will|\s+should|\s+could|\s+might|\s+may|\s+can|\s+must|\s+need|\s+have\s+to|'d|\s+would|"
    r"\s+want\s+to|\s+may\s+want|\s+might\s+want|'re\s+(?:welcome|right|absolutely|correct|so\s+welcome)|"
    r"\s+are\s+(?:welcome|right|correct)|\s+got\s+this|\s+deserve|\s+know)\b"
    r"|\b(?:sounds?|seems?|looks?)\b",
    re.IGNORECASE,
)
_WE_CONTRACTION_RE = re.compile(r"(?<![\w'-])[Ww]e'(?:re|ve|ll|d)\b")
_NEG_LIKE_RE = re.compile(r"\b(?:doesn't|does\s+not|never)\s+(?:really\s+)?(?:like|love|enjoy|eat|drink|want)\b")
_ASSIST_SINCE_RE = re.compile(r"^(?:since|as|because|given\s+that)\s+(you(?:'re|\s)[^,?]{4,}),", re.IGNORECASE)
# "it's ok, I'm taking ibuprofen": a reaction before the fact
_OK_LEAD_RE = re.compile(
    r"^(?:it's|it\s+is|that's|that\s+is|all\s+good|no\s+worries)\s*(?:ok|okay|fine|alright|all\s+right)?"
    r"(?:\s+(?:now|though))?\s*[,;:-]+\s*(?=\w)",
    re.IGNORECASE,
)
# "..., lol", "... btw": chat fillers at the end say nothing
_TRAILING_FILLER_RE = re.compile(r"[\s,]+(?:btw|lol|haha+|hehe+|tbh|fwiw|lmao|imo)\s*([.!]*)$", re.IGNORECASE)
# "im a pescatarian": the chat spelling of "I'm" where a sentence or clause starts
_IM_RE = re.compile(r"(^|[,;]\s+)[Ii]m(?=\s+(?:a|an|the|so|very|really|not|from|in|at|on|into|going|[a-z]+ing)\b)")
_NAMED_BEFORE_RE = re.compile(r"\b(?:named|called)\s+$")
_AND_WE_RE = re.compile(r"\band we ([a-z]+)\b")
_IT_START_RE = re.compile(r"^(It|Its)\s+(?=[a-z])")
# "I'm a pescatarian": one noun says who the speaker is
_IDENTITY_RE = re.compile(r"^(?:I'm|I\s+am)\s+(?:a|an)\s+(?!(?:bit|little|lot|mess|fan)\b)[a-z][a-z-]+\s*[.!]*$", re.IGNORECASE)
# ", remind me a week before": a request riding on a fact is not part of it
_REQUEST_TAIL_RE = re.compile(
    r"\s*(?:[,;]|\s-|\s—|\band\b)\s*(?:so\s+)?(?:please\s+|pls\s+)?(?:can\s+you\s+|could\s+you\s+)?"
    r"(?:remind|tell|let|help|ask|ping|notify)\s+me\b.*$",
    re.IGNORECASE,
)
# a date that describes the person, not an event: "born in 1990", "my birthday is on July 14"
_RECURRING_RE = re.compile(r"\b(?:born|birthday|birthdays|anniversary|bday)\b", re.IGNORECASE)
# what must not become a memory of its own: credentials and payment data (the verbatim turn is stored anyway)
_SECRET_RE = re.compile(
    r"\b(?:password|passwd|passcode|pin\s+(?:code|number)|api[\s_-]?key|secret[\s_-]?key|access[\s_-]?token|"
    r"private[\s_-]?key|ssn|social\s+security\s+number|credit\s+card\s+number|card\s+number|cvv|iban|"
    r"seed\s+phrase|recovery\s+phrase)\b|\b(?:sk|pk|ghp|gho|xox[abp])[-_][A-Za-z0-9]{12,}|\bAKIA[0-9A-Z]{12,}|"
    r"\b(?:\d[ -]?){13,19}\b",
    re.IGNORECASE,
)


def _finish(text: str) -> str:
    """Tidy a fact: no emoji (kept in the turn, never in some facts and not others), no trailing
    emoticon, one full stop, a capital letter first."""
    t = _SPACE_BEFORE_PUNCT_RE.sub(r"\1", _EMOJI_RE.sub("", text)).replace("  ", " ")
    t = _TRAILING_JUNK_RE.sub("", t).strip()
    t = _END_PUNCT_RE.sub("", t).strip()
    if not t:
        return ""
    if t[0].islower():
        t = t[0].upper() + t[1:]
    if t[-1] not in ".!?。！？\"')":
        t += "."
    return t


def _opens_with_past_verb(text: str) -> bool:
    """A sentence without its subject, opening with a past-tense verb ("Spent the day painting"),
    perhaps after an adverb ("Finally sold the Corolla")."""
    words = text.split(" ", 3)
    first = words[0]
    if not first[:1].isupper() or not first[1:].islower() or len(first) < 3:
        return False
    if len(words) > 2 and first.endswith("ly") and set(lemmas_of(first.lower())) == {"ADV"}:
        words = [words[1].capitalize(), *words[2:]]
    return _past_verb(words[0].lower(), words[1] if len(words) > 1 else "")


def _past_verb(low: str, after: str) -> bool:
    """``low`` opens a sentence as a past-tense verb; one that is also a noun ("left", "quit") only
    when an object or particle follows ("Left Acme in May", "Quit the choir")."""
    if low not in IRREGULAR_PAST and not low.endswith("ed"):
        return False
    lemmas = lemmas_of(low)
    if not any(lemma != low or low in IRREGULAR_PAST for lemma in lemmas.get("VERB", ())):
        return False
    return "NOUN" not in lemmas or after.lower() in _OBJECT_OPENERS or (after[:1].isupper() and after[1:].islower())


_OBJECT_OPENERS = frozenset("the my our a an his her their up out off away".split())


@dataclass(eq=False)
class Draft:
    """One sentence on its way to facts: what the steps have read and rewritten so far."""

    msg: MessageIn
    raw: str
    list_item: bool
    speaker: str
    known: dict[str, EntityType | None]
    acc: BatchAcc
    refs: Referents
    #: the sentence as rewritten so far (the speaker's words), and the fact's text
    s: str = ""
    text: str = ""
    remember: bool = False
    said_before: int = 0
    from_assistant: bool = False
    reporter: str | None = None
    quoted_by: str | None = None
    we: bool = False
    we_owner: str = ""
    changes: int = 0
    procedural: bool = False
    about_speaker: bool = False
    spans: list[Any] = field(default_factory=list)
    hits: list[Any] = field(default_factory=list)
    tense: str = ""
    when: TimeMention | None = None
    memory_type: MemoryType = MemoryType.SEMANTIC
    fact_text: str = ""
    names: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    maybe_people: list[str] = field(default_factory=list)


# --- the steps: each reads and rewrites the draft, and returns False when the sentence gives no fact ---


def opening(d: Draft, min_words: int) -> bool:
    """Leads, fillers, questions, secrets and requests riding on a fact are no part of it; an
    assistant's premise ("Since you're vegetarian, ...?") is."""
    raw, msg = d.raw, d.msg
    s, d.remember = strip_lead(_IM_RE.sub(r"\1I'm", raw) if msg.role == "user" else raw)
    s = _TRAILING_FILLER_RE.sub(r"\1", s)
    d.said_before = len(d.refs.said)
    d.refs.said.append((s, d.speaker, None))  # even a question introduces a thing
    d.from_assistant = msg.role == "assistant"
    if d.from_assistant and is_question(s) and (c := _ASSIST_SINCE_RE.match(s)) is not None:
        s = c.group(1) + "."  # "Since you're vegetarian, how about ...?": the premise is a fact
    if len(s) < 6 or is_question(s) or s.endswith(":") or _SECRET_RE.search(s):
        return False
    d.s = _OK_LEAD_RE.sub("", _REQUEST_TAIL_RE.sub("", s))
    d.we_owner = d.speaker
    return len(d.s) >= 6


def assistant_view(d: Draft, min_words: int) -> bool:
    """From the assistant, only what it says of the user ("You moved to Porto"), in the user's name."""
    if not d.from_assistant:
        return True
    s = _ASSIST_PREFIX_RE.sub("", d.s, count=1)
    s = _ASSIST_CLAUSE_CUT_RE.sub("", s)
    d.s = s
    if not _ASSIST_SUBJECT_RE.match(s) or _ADVICE_RE.search(s) or FIRST_PERSON_RE.search(s):
        return False
    if is_skippable(s, role="assistant") or is_foreign(s):
        return False
    d.text, d.changes = rewrite_second_person(s, d.speaker)
    if not d.changes:
        return False
    d.procedural = False
    d.about_speaker = True
    return True


def referents(d: Draft, min_words: int) -> bool:
    """The user's sentence made to stand alone: "it" / "he" / "she" given what they refer to, an
    introduction dropped, reported speech unwrapped."""
    if d.from_assistant:
        return True
    s, refs, speaker = d.s, d.refs, d.speaker
    if (st := IT_STATE_RE.match(s)) is not None and it_is_thing(st.group("rest"), *refs.thing(d.said_before)):
        verb = "is" if s.startswith("It's") else s.split(" ", 2)[1]
        s = f"{refs.thing(d.said_before)[0]} {verb} {st.group('rest')}"  # "It has ..." -> "The Subaru has ..."
    s = drop_introduction(s, speaker)  # "Hey, I'm Tomas, I share ..." said by Tomas
    if len(s) < 6 or is_skippable(s, role="user"):
        return False
    rep = reported_speech(s)
    if rep is not None:  # "Maya said: we are moving ..." -> what Maya said, as a fact
        who, s, quoted = rep
        d.reporter = _owned(who, speaker)
        if quoted:
            d.quoted_by = d.reporter
        elif (p := PRONOUN_START_RE.match(s)) is not None:
            s = name_pronoun(s, p, d.reporter)
    if starts_with_third_pronoun(s):
        p = PRONOUN_START_RE.match(s)
        kin = refs.relative(s, p.group("p")) if p is not None and p.group("p") else None
        referent = refs.person or (f"my {kin}" if kin else None)
        if referent is None or p is None:
            return False
        s = name_pronoun(s, p, referent)
    elif (t := _IT_START_RE.match(s)) is not None:  # "It runs on Kafka": the thing named before
        thing_before = refs.thing(d.said_before)[0]
        if thing_before is None:
            return False
        s = (thing_before + "'s " if t.group(1).lower() == "its" else thing_before + " ") + s[t.end() :]
    d.s = s
    return not is_foreign(s)


def first_person(d: Draft, min_words: int) -> bool:
    """The user's first person written as the speaker ("I moved" -> "Maya moved"); "we" kept as
    the speaker's; a sentence about whoever the speaker talks to is dropped."""
    if d.from_assistant:
        return True
    s, speaker = d.s, d.speaker
    d.procedural = is_procedural(s, list_item=d.list_item)
    past = tense_of(s) == "past"
    if d.quoted_by is not None:
        s, _ = rewrite_first_person(s, d.quoted_by, past=past)
        s = rewrite_second_person(s, speaker)[0] if SECOND_PERSON_RE.search(s) else s
        d.s = s
    text, changes = rewrite_first_person(s, speaker, past=past)
    text = d.refs.name_object(text, speaker)
    if d.quoted_by is None and not d.procedural and _opens_with_past_verb(text):
        # "Spent Saturday painting" said by Tess; "Handed in my notice" (its "my" already rewritten)
        text, changes = f"{speaker} {text[0].lower()}{text[1:]}", changes + 1
    d.text, d.changes = text, changes
    d.about_speaker = changes > 0 or d.quoted_by is not None
    if not d.about_speaker and not d.procedural and SECOND_PERSON_RE.search(s):
        return False  # about whoever the speaker talks to ("So cool you found a group"): unresolvable
    if (WE_RE.search(text) or _WE_CONTRACTION_RE.search(text)) and not d.procedural:
        d.we = True  # "we" includes the speaker: relations with "we" as subject are theirs
        d.about_speaker = True
        d.we_owner = d.quoted_by or speaker
    return True


def says_enough(d: Draft, min_words: int) -> bool:
    """Enough content words to be a fact; one short is still one about identity, health or family."""
    s, text = d.s, d.text
    # an imperative has no subject; "doesn't like" says as much as "likes"
    # "we" counts as the speaker's name does; so does the one noun of "I'm a pescatarian"
    words_said = (
        content_word_count(text)
        + (1 if d.procedural else 0)
        + (1 if _NEG_LIKE_RE.search(text) else 0)
        + (1 if d.we else 0)
        + (1 if _IDENTITY_RE.match(s) else 0)
    )
    # one word short is still a fact when it is about identity, health or family: "I'm vegetarian"
    if words_said < min_words and (words_said < min_words - 1 or importance_of(s, remember=d.remember) < 0.6):
        return False
    low = text.lower()
    speaker = d.speaker.lower()
    return low.rstrip(". ") not in (f"{speaker} is {speaker}", f"{speaker}'s name is {speaker}")


def relations(d: Draft, min_words: int) -> bool:
    """Entities, relations and the time the sentence is about."""
    s, text, msg = d.s, d.text, d.msg
    low = text.lower()
    d.spans = find_entities(text, d.known)
    if d.spans:
        d.acc.learn(d.spans, d.known)
    words = frozenset(_WORDS_RE.findall(low))
    d.tense = tense = tense_of(s)
    d.hits = find_relations(text, d.spans, words, we_subject=d.speaker if d.we else None, future=tense == "future")
    when: TimeMention | None = resolve_time(s, msg.said_at, tense)
    if when is not None:
        when = with_year(s, when, msg.said_at)
    d.when = when
    return True


def we_and_dates(d: Draft, min_words: int) -> bool:
    """ "We" written as who was there, and relative dates ("yesterday") as the dates they mean."""
    text, msg, when = d.text, d.msg, d.when
    if d.we:  # after the relations, which read "we" as the speaker
        if text.startswith(d.we_owner + " "):  # "Sam went ... with Jo and we bought" -> "... and bought"
            text = _AND_WE_RE.sub(lambda m: m.group(0) if is_base_verb(m.group(1)) else f"and {m.group(1)}", text)
        with_whom = d.refs.companion(single_person(d.spans, d.we_owner), msg.index)
        text, _ = rewrite_we(text, d.we_owner, with_whom if with_whom not in (d.speaker, d.we_owner) else None)
    if when is not None and not when.explicit:
        # the memory says the date, not "yesterday"; the same words in the rewritten text
        w2 = resolve_time(text, msg.said_at, d.tense)
        w2 = with_year(text, w2, msg.said_at) if w2 is not None else None
        if w2 is not None and w2.text == when.text:
            text = write_time(text, w2)
    d.text = text
    return True


def kind(d: Draft, min_words: int) -> bool:
    """Procedural, episodic (dated, or an action) or semantic; the text tidied into the fact's."""
    s, when = d.s, d.when
    if d.procedural:
        d.memory_type = MemoryType.PROCEDURAL
    elif when is not None and not when.since and not _RECURRING_RE.search(s) or is_episodic_action(s):
        d.memory_type = MemoryType.EPISODIC
    else:
        d.memory_type = MemoryType.SEMANTIC
    d.fact_text = _finish(d.text)
    return bool(d.fact_text)


def entities(d: Draft, min_words: int) -> bool:
    """The fact's entities: the speaker first when it is about them, then the mentions, then the
    relations' ends; and who a "he" / "she" in the next sentences can be."""
    acc, speaker, index, text = d.acc, d.speaker, d.msg.index, d.text
    names: list[str] = []
    if d.about_speaker:
        names.append(acc.entity(speaker, EntityType.PERSON, index))
    retype: dict[str, EntityType] = {}
    attrs: dict[str, dict[str, Any]] = {}
    forced: set[str] = set()
    for h in d.hits:
        if h.target_type is not None:
            retype.setdefault(h.target.lower(), h.target_type)
        if h.target_attributes.get("kind") and h.relation == "has" and h.target_type is EntityType.OTHER:
            forced.add(h.target.lower())  # a pet, whatever its name looks like
        if h.target_attributes:
            attrs.setdefault(h.target.lower(), {}).update(h.target_attributes)
    span_names = {sp.name.lower() for sp in d.spans}
    for sp in d.spans:
        etype = sp.type
        key = sp.name.lower()
        if key in retype and (etype is EntityType.OTHER or key in forced):
            etype = retype[key]
        a = dict(sp.attributes)
        a.update(attrs.get(key, {}))
        names.append(acc.entity(sp.name, etype, index, a))
        is_named = _NAMED_BEFORE_RE.search(text, max(0, sp.start - 8), sp.start) is not None  # "a dog named Pixel"
        if key == speaker.lower() or sp.possessive:
            continue
        if etype is EntityType.PERSON or is_named or key in forced:
            d.people.append(sp.name)
        elif etype is EntityType.OTHER and sp.name.isalpha() and key != "user":
            d.maybe_people.append(sp.name)  # an unknown name: not a referent, but makes one ambiguous
    for h in d.hits:
        if h.target.lower() not in span_names and h.target.lower() != speaker.lower():
            names.append(acc.entity(h.target, h.target_type or EntityType.CONCEPT, index, h.target_attributes))
        if h.source.lower() not in span_names and h.source.lower() != speaker.lower():
            names.append(acc.entity(h.source, EntityType.PERSON, index))
        acc.relation(h, index)
    d.names = list(dict.fromkeys(names))
    return True


def facts(d: Draft, min_words: int) -> bool:
    """Each single-valued fact its own memory, as a careful writer puts it, with its importance,
    confidence and where its time came from; then what the next sentences can refer to."""
    s, speaker, when, names, msg = d.s, d.speaker, d.when, d.names, d.msg
    named = sum(1 for sp in d.spans if sp.name.lower() != speaker.lower() and sp.type is not EntityType.DATE)
    importance = importance_of(
        s,
        relations=[h.relation for h in d.hits],
        named_entities=named,
        remember=d.remember,
        procedural=d.procedural,
    )
    confidence, hedged = confidence_of(s, from_assistant=d.from_assistant)
    metadata: dict[str, Any] = {"speaker": speaker, "role": msg.role}
    if when is not None:
        metadata["time_expression"] = when.text
        metadata["time_granularity"] = when.granularity
    if hedged:
        metadata["hedged"] = True
    if d.reporter is not None:
        metadata["reported_by"] = d.reporter
    parts = [_finish(tidy_possessives(p, speaker)) for p in split_compound(d.fact_text, speaker)]
    for part in parts:
        low_part = part.lower()
        d.acc.fact(
            ExtractedFact(
                text=part,
                memory_type=d.memory_type,
                importance=importance,
                confidence=confidence,
                entities=names if len(parts) == 1 else [n for n in names if n == names[0] or n.lower() in low_part],
                source_indices=[msg.index],
                occurred_at=when.when if when is not None else None,
                metadata=dict(metadata),
            )
        )
    refs = d.refs
    people = list(dict.fromkeys(d.people))
    if people:  # two people named: a "she" next is anyone's guess
        refs.person = people[0] if len(people) == 1 and not set(d.maybe_people) - set(people) else None
        refs.person_in = msg.index
    refs.said[d.said_before] = (refs.said[d.said_before][0], speaker, single_thing(d.spans))
    return True


#: the steps of one sentence, in order
SENTENCE_STEPS: tuple[Callable[[Draft, int], bool], ...] = (
    opening,
    assistant_view,
    referents,
    first_person,
    says_enough,
    relations,
    we_and_dates,
    kind,
    entities,
    facts,
)


def _owned(who: str, speaker: str) -> str:
    """A reporter as a name: "my boss" said by Sam -> "Sam's boss"."""
    first, _, rest = who.partition(" ")
    return f"{speaker}'s {rest}" if first.lower() in ("my", "our") and rest else who
