"""The rule-based extraction pipeline: facts, entities and relations from rules, no network, no model.

For each user or assistant message: clean and split into sentences; skip questions, greetings,
requests and vague sentences; rewrite the first person into the speaker's name (the display name,
else "User") and keep from the assistant only what it says of the user; make the fact stand alone
(reported speech unwrapped, he / she / it and we / our given their referents, relative dates written
as dates, :mod:`~deepcontext.extract.resolve`); keep it if it still says enough; find entities,
relations, the time it is about, type, importance and confidence. Non-English Latin-script sentences
give no fact; Chinese ones in the first person do (:mod:`~deepcontext.extract.chinese`). A
sentence goes through the named steps of :mod:`~deepcontext.extract.sentence_steps`. Importing
this module compiles every pattern of the package; :mod:`deepcontext.extract.rules` imports it on
first use.
"""

from __future__ import annotations

import functools
import re

from deepcontext.extract.batch import BatchAcc
from deepcontext.extract.chinese import chinese_fact, cjk_patterns
from deepcontext.extract.entities import find_entities
from deepcontext.extract.facts import (
    is_procedural,
)
from deepcontext.extract.interface import (
    ExtractionContext,
    ExtractionResult,
    MessageIn,
)
from deepcontext.extract.referents import (
    Referents,
    single_person,
    single_thing,
)
from deepcontext.extract.repeats import they_for_repeats
from deepcontext.extract.sentence_steps import SENTENCE_STEPS, Draft
from deepcontext.extract.sentences import Sentence, clean_text, split_sentences
from deepcontext.extract.slots import find_slots
from deepcontext.language.standing import standing_kind
from deepcontext.language.unnamed import written
from deepcontext.types import EntityType

__all__ = ["RulePipeline"]

_LEADING_PRONOUN_RE = re.compile(r"^(?:he|she|it|its|his|her|they|their)\b", re.IGNORECASE)


def _read(text: str, speaker: str) -> tuple[object, ...]:
    """What the rules read from a fact's text: its slots and standing kind (a rewrite must keep them)."""
    return find_slots(text, speaker), standing_kind(text)


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
        result = acc.result()
        for f in result.facts:
            speaker = str(f.metadata.get("speaker") or "")
            if speaker:
                f.text = they_for_repeats(f.text, speaker, slots=functools.partial(_read, speaker=speaker))
            f.text = written(f.text)  # the rules' "User" as a memory says it: "the user"
        return result

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
        """One sentence through the named steps of :mod:`~deepcontext.extract.sentence_steps`; a
        step that finds nothing to keep ends it."""
        draft = Draft(msg=msg, raw=raw, list_item=list_item, speaker=speaker, known=known, acc=acc, refs=refs)
        for step in SENTENCE_STEPS:
            if not step(draft, self.min_content_words):
                return


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
