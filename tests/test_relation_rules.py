"""The relation rules are a table: each row is named by the relation it states and carries a
sentence it must read, with the subject and object it finds there."""

from __future__ import annotations

import re

import pytest

from deepcontext.extract.entities import find_entities
from deepcontext.extract.relation_rules import RULES, Rule
from deepcontext.extract.relations import find_relations
from deepcontext.types import EntityType


def _relations(text: str) -> list[tuple[str, str, str]]:
    spans = find_entities(text, {"user": EntityType.PERSON})  # the pipeline knows the speaker
    words = frozenset(re.findall(r"[a-z][a-z'-]*", text.lower()))
    return [(h.source, h.relation, h.target) for h in find_relations(text, spans, words)]


def test_every_rule_is_named_once_and_has_an_example() -> None:
    names = [r.relation for r in RULES]
    assert len(set(names)) == len(names)
    assert all(r.says[0] for r in RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.relation)
def test_the_rule_reads_its_example(rule: Rule) -> None:
    sentence, subject, obj = rule.says
    assert rule.pattern.search(sentence), f"{rule.relation}: its pattern does not match {sentence!r}"
    assert (subject, rule.relation, obj) in _relations(sentence)
