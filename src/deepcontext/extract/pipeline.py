"""The rule-based extraction pipeline: facts, entities and relations from rules, no network, no model.

For each user or assistant message: clean and split into sentences; skip questions, greetings,
requests and vague sentences; rewrite the first person into the speaker's name (the display name,
else "User") and keep from the assistant only what it says of the user; make the fact stand alone
(reported speech unwrapped, he / she / it and we / our given their referents, relative dates written
as dates, :mod:`~deepcontext.extract.resolve`); keep it if it still says enough; find entities,
relations, the time it is about, type, importance and confidence. Non-English Latin-script sentences
give no fact; Chinese ones in the first person do (:mod:`~deepcontext.extract.chinese`). Importing
this module compiles every pattern of the package; :mod:`deepcontext.extract.rules` imports it on
first use.
"""

from __future__ import annotations

import re
from typing import Any

from deepcontext.extract.batch import BatchAcc
from deepcontext.extract.chinese import chinese_fact, cjk_patterns
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
    ExtractionContext,
    ExtractionResult,
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
from deepcontext.extract.sentences import Sentence, clean_text, is_foreign, split_sentences
from deepcontext.extract.verbs import is_base_verb, lemmas_of
from deepcontext.language.gazetteer import IRREGULAR_PAST
from deepcontext.language.timeparse import TimeMention, resolve_time
from deepcontext.types import EntityType, MemoryType

__all__ = ["RulePipeline"]

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
_LEADING_PRONOUN_RE = re.compile(r"^(?:he|she|it|its|his|her|they|their)\b", re.IGNORECASE)
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


def _user_name(messages: list[MessageIn], context: ExtractionContext, index: int) -> str:
    """The user's name as known before message ``index``: the nearest named user turn, else "User"."""
    for m in reversed(messages[:index]):
        if m.role == "user" and m.name:
            return m.name
    for m in messages[index + 1 :]:
        if m.role == "user" and m.name:
            return m.name
    for m in reversed(context.recent_messages):
        if m.role == "user" and m.name:
            return m.name
    return context.user_name or "User"


class RulePipeline:
    """The extraction pipeline with its options; :class:`~deepcontext.extract.rules.RuleExtractor` runs it."""

    def __init__(self, *, min_content_words: int = 3, assistant_facts: bool = True, max_sentence_chars: int = 600) -> None:
        self.min_content_words = min_content_words
        self.assistant_facts = assistant_facts
        self.max_sentence_chars = max_sentence_chars

    def run(self, messages: list[MessageIn], context: ExtractionContext) -> ExtractionResult:
        """Facts, entities and relationships of ``messages`` (already validated)."""
        acc = BatchAcc()
        base_known: dict[str, EntityType | None] = {n.lower(): None for n in context.known_entities if n}
        for m in messages:
            if m.name:
                base_known[m.name.lower()] = EntityType.PERSON
        names = [m.name for m in [*context.recent_messages, *messages] if m.name] + [context.user_name or ""]
        refs = Referents(participants=frozenset(n.lower() for n in names if n), kin=dict(context.kin_referents))
        if context.recent_messages and messages and _LEADING_PRONOUN_RE.match(messages[0].content.lstrip()):
            self._learn_refs(context.recent_messages[-3:], base_known, refs)
        for pos, msg in enumerate(messages):
            if msg.role not in ("user", "assistant") or not msg.content or msg.content.isspace():
                continue
            if msg.role == "assistant" and not self.assistant_facts:
                continue
            if msg.role == "user":
                speaker = msg.name or context.user_name or "User"
            else:
                speaker = _user_name(messages, context, pos)
            known = {**base_known, **acc.learned}
            known[speaker.lower()] = EntityType.PERSON
            self._message(msg, speaker, known, acc, refs)
        return acc.result()

    def _learn_refs(self, earlier: list[MessageIn], known: dict[str, EntityType | None], refs: Referents) -> None:
        """Referents from turns before the batch (only read when the batch opens with a pronoun)."""
        for m in earlier:
            if m.role not in ("user", "assistant") or not m.content:
                continue
            for sent in split_sentences(clean_text(m.content)):
                if sent.text.isascii():
                    spans = find_entities(sent.text, dict(known))
                    refs.person = single_person(spans, m.name or "") or refs.person
                    refs.said.append((sent.text, m.name, single_thing(spans)))

    # --- one message ---------------------------------------------------------------------------------------

    def _message(self, msg: MessageIn, speaker: str, known: dict[str, EntityType | None], acc: BatchAcc, refs: Referents) -> None:
        for sent in _join_lists(split_sentences(clean_text(msg.content))):
            raw = sent.text
            if len(raw) > self.max_sentence_chars or len(raw) < 6:
                continue
            if not raw.isascii() and cjk_patterns()[0].search(raw):
                chinese_fact(msg, raw, speaker, known, acc)
                continue
            self._sentence(msg, raw, sent.list_item, speaker, known, acc, refs)

    def _sentence(
        self,
        msg: MessageIn,
        raw: str,
        list_item: bool,
        speaker: str,
        known: dict[str, EntityType | None],
        acc: BatchAcc,
        refs: Referents,
    ) -> None:
        s, remember = strip_lead(_IM_RE.sub(r"\1I'm", raw) if msg.role == "user" else raw)
        s = _TRAILING_FILLER_RE.sub(r"\1", s)
        said_before = len(refs.said)
        refs.said.append((s, speaker, None))  # even a question introduces a thing
        from_assistant = msg.role == "assistant"
        if from_assistant and is_question(s) and (c := _ASSIST_SINCE_RE.match(s)) is not None:
            s = c.group(1) + "."  # "Since you're vegetarian, how about ...?": the premise is a fact
        if len(s) < 6 or is_question(s) or s.endswith(":") or _SECRET_RE.search(s):
            return
        s = _OK_LEAD_RE.sub("", _REQUEST_TAIL_RE.sub("", s))
        if len(s) < 6:
            return
        reporter: str | None = None
        we = False
        we_owner = speaker
        if from_assistant:
            s = _ASSIST_PREFIX_RE.sub("", s, count=1)
            s = _ASSIST_CLAUSE_CUT_RE.sub("", s)
            if not _ASSIST_SUBJECT_RE.match(s) or _ADVICE_RE.search(s) or FIRST_PERSON_RE.search(s):
                return
            if is_skippable(s, role="assistant") or is_foreign(s):
                return
            text, changes = rewrite_second_person(s, speaker)
            if not changes:
                return
            procedural = False
            about_speaker = True
        else:
            if (st := IT_STATE_RE.match(s)) is not None and it_is_thing(st.group("rest"), *refs.thing(said_before)):
                verb = "is" if s.startswith("It's") else s.split(" ", 2)[1]
                s = f"{refs.thing(said_before)[0]} {verb} {st.group('rest')}"  # "It has ..." -> "The Subaru has ..."
            s = drop_introduction(s, speaker)  # "Hey, I'm Tomas, I share ..." said by Tomas
            if len(s) < 6 or is_skippable(s, role="user"):
                return
            quoted_by: str | None = None
            rep = reported_speech(s)
            if rep is not None:  # "Maya said: we are moving ..." -> what Maya said, as a fact
                who, s, quoted = rep
                reporter = _owned(who, speaker)
                if quoted:
                    quoted_by = reporter
                elif (p := PRONOUN_START_RE.match(s)) is not None:
                    s = name_pronoun(s, p, reporter)
            if starts_with_third_pronoun(s):
                p = PRONOUN_START_RE.match(s)
                kin = refs.relative(s, p.group("p")) if p is not None and p.group("p") else None
                referent = refs.person or (f"my {kin}" if kin else None)
                if referent is None or p is None:
                    return
                s = name_pronoun(s, p, referent)
            elif (t := _IT_START_RE.match(s)) is not None:  # "It runs on Kafka": the thing named before
                thing_before = refs.thing(said_before)[0]
                if thing_before is None:
                    return
                s = (thing_before + "'s " if t.group(1).lower() == "its" else thing_before + " ") + s[t.end() :]
            if is_foreign(s):
                return
            procedural = is_procedural(s, list_item=list_item)
            past = tense_of(s) == "past"
            if quoted_by is not None:
                s, _ = rewrite_first_person(s, quoted_by, past=past)
                s = rewrite_second_person(s, speaker)[0] if SECOND_PERSON_RE.search(s) else s
            text, changes = rewrite_first_person(s, speaker, past=past)
            text = refs.name_object(text, speaker)
            if not changes and quoted_by is None and not procedural and _opens_with_past_verb(text):
                text, changes = f"{speaker} {text[0].lower()}{text[1:]}", 1  # "Spent Saturday painting" said by Tess
            about_speaker = changes > 0 or quoted_by is not None
            if not about_speaker and not procedural and SECOND_PERSON_RE.search(s):
                return  # about whoever the speaker talks to ("So cool you found a group"): unresolvable
            if (WE_RE.search(text) or _WE_CONTRACTION_RE.search(text)) and not procedural:
                we = True  # "we" includes the speaker: relations with "we" as subject are theirs
                about_speaker = True
                we_owner = quoted_by or speaker
        # an imperative has no subject; "doesn't like" says as much as "likes"
        # "we" counts as the speaker's name does; so does the one noun of "I'm a pescatarian"
        words_said = (
            content_word_count(text)
            + (1 if procedural else 0)
            + (1 if _NEG_LIKE_RE.search(text) else 0)
            + (1 if we else 0)
            + (1 if _IDENTITY_RE.match(s) else 0)
        )
        # one word short is still a fact when it is about identity, health or family: "I'm vegetarian"
        if words_said < self.min_content_words and (
            words_said < self.min_content_words - 1 or importance_of(s, remember=remember) < 0.6
        ):
            return
        low = text.lower()
        if low.rstrip(". ") in (f"{speaker.lower()} is {speaker.lower()}", f"{speaker.lower()}'s name is {speaker.lower()}"):
            return

        spans = find_entities(text, known)
        if spans:
            acc.learn(spans, known)
        words = frozenset(_WORDS_RE.findall(low))
        tense = tense_of(s)
        hits = find_relations(text, spans, words, we_subject=speaker if we else None, future=tense == "future")
        when: TimeMention | None = resolve_time(s, msg.said_at, tense)
        if when is not None:
            when = with_year(s, when, msg.said_at)
        if we:  # after the relations, which read "we" as the speaker
            if text.startswith(we_owner + " "):  # "Sam went ... with Jo and we bought" -> "... and bought"
                text = _AND_WE_RE.sub(lambda m: m.group(0) if is_base_verb(m.group(1)) else f"and {m.group(1)}", text)
            with_whom = refs.companion(single_person(spans, we_owner), msg.index)
            text, _ = rewrite_we(text, we_owner, with_whom if with_whom not in (speaker, we_owner) else None)
        if when is not None and not when.explicit:
            # the memory says the date, not "yesterday"; the same words in the rewritten text
            w2 = resolve_time(text, msg.said_at, tense)
            w2 = with_year(text, w2, msg.said_at) if w2 is not None else None
            if w2 is not None and w2.text == when.text:
                text = write_time(text, w2)
        if procedural:
            mtype = MemoryType.PROCEDURAL
        elif when is not None and not when.since and not _RECURRING_RE.search(s) or is_episodic_action(s):
            mtype = MemoryType.EPISODIC
        else:
            mtype = MemoryType.SEMANTIC

        fact_text = _finish(text)
        if not fact_text:
            return
        index = msg.index

        # entities: the speaker first when the fact is about them, then mentions, then relation targets
        names: list[str] = []
        if about_speaker:
            names.append(acc.entity(speaker, EntityType.PERSON, index))
        retype: dict[str, EntityType] = {}
        attrs: dict[str, dict[str, Any]] = {}
        forced: set[str] = set()
        for h in hits:
            if h.target_type is not None:
                retype.setdefault(h.target.lower(), h.target_type)
            if h.target_attributes.get("kind") and h.relation == "has" and h.target_type is EntityType.OTHER:
                forced.add(h.target.lower())  # a pet, whatever its name looks like
            if h.target_attributes:
                attrs.setdefault(h.target.lower(), {}).update(h.target_attributes)
        span_names = {sp.name.lower() for sp in spans}
        people: list[str] = []  # who a "he" / "she" in the next sentences can be
        maybe_people: list[str] = []
        for sp in spans:
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
                people.append(sp.name)
            elif etype is EntityType.OTHER and sp.name.isalpha() and key != "user":
                maybe_people.append(sp.name)  # an unknown name: not a referent, but makes one ambiguous
        for h in hits:
            if h.target.lower() not in span_names and h.target.lower() != speaker.lower():
                names.append(acc.entity(h.target, h.target_type or EntityType.CONCEPT, index, h.target_attributes))
            if h.source.lower() not in span_names and h.source.lower() != speaker.lower():
                names.append(acc.entity(h.source, EntityType.PERSON, index))
            acc.relation(h, index)
        names = list(dict.fromkeys(names))

        named = sum(1 for sp in spans if sp.name.lower() != speaker.lower() and sp.type is not EntityType.DATE)
        importance = importance_of(
            s,
            relations=[h.relation for h in hits],
            named_entities=named,
            remember=remember,
            procedural=procedural,
        )
        confidence, hedged = confidence_of(s, from_assistant=from_assistant)
        metadata: dict[str, Any] = {"speaker": speaker, "role": msg.role}
        if when is not None:
            metadata["time_expression"] = when.text
            metadata["time_granularity"] = when.granularity
        if hedged:
            metadata["hedged"] = True
        if reporter is not None:
            metadata["reported_by"] = reporter
        # each single-valued fact its own memory, then each as a careful writer puts it
        parts = [_finish(tidy_possessives(p, speaker)) for p in split_compound(fact_text, speaker)]
        for part in parts:
            low_part = part.lower()
            acc.fact(
                ExtractedFact(
                    text=part,
                    memory_type=mtype,
                    importance=importance,
                    confidence=confidence,
                    entities=names if len(parts) == 1 else [n for n in names if n == names[0] or n.lower() in low_part],
                    source_indices=[index],
                    occurred_at=when.when if when is not None else None,
                    metadata=dict(metadata),
                )
            )
        people = list(dict.fromkeys(people))
        if people:  # two people named: a "she" next is anyone's guess
            refs.person = people[0] if len(people) == 1 and not set(maybe_people) - set(people) else None
            refs.person_in = msg.index
        refs.said[said_before] = (refs.said[said_before][0], speaker, single_thing(spans))


def _opens_with_past_verb(text: str) -> bool:
    """A sentence without its subject, opening with a past-tense verb ("Spent the day painting")."""
    first = text.split(" ", 1)[0]
    if not first[:1].isupper() or not first[1:].islower() or len(first) < 3:
        return False
    low = first.lower()
    if low not in IRREGULAR_PAST and not low.endswith("ed"):
        return False
    lemmas = lemmas_of(low)
    return "NOUN" not in lemmas and any(lemma != low for lemma in lemmas.get("VERB", ()))


def _join_lists(sents: list[Sentence]) -> list[Sentence]:
    """A header ending with ":" and the short, non-imperative items listed under it become one
    sentence ("Things I keep at home: oat milk, dark chocolate, green tea"); steps stay apart."""
    if len(sents) < 3 or not any(x.text.endswith(":") for x in sents):
        return sents
    out: list[Sentence] = []
    i = 0
    while i < len(sents):
        head = sents[i]
        items: list[str] = []
        j = i + 1
        if head.text.endswith(":") and not head.list_item:
            while j < len(sents) and sents[j].list_item:
                t = sents[j].text.rstrip(" .;,")
                if len(t.split()) > 5 or is_procedural(t, list_item=True):
                    break
                items.append(t)
                j += 1
        if len(items) >= 2 and j == i + 1 + len(items):
            out.append(Sentence(f"{head.text.rstrip(' :')}: {', '.join(items)}."))
            i = j
            continue
        out.append(head)
        i += 1
    return out


def _owned(who: str, speaker: str) -> str:
    """A reporter as a name: "my boss" said by Sam -> "Sam's boss"."""
    first, _, rest = who.partition(" ")
    return f"{speaker}'s {rest}" if first.lower() in ("my", "our") and rest else who
