"""The slot patterns are a table: each row has a unique name and a fact it must read, with the
value it finds there; a row whose example stops reading (or reads another value) fails here."""

from __future__ import annotations

import pytest

from deepcontext.extract.slot_patterns import PATTERNS, SlotPattern
from deepcontext.extract.slots import find_slots


def test_every_pattern_has_a_unique_name_and_an_example() -> None:
    names = [p.name for p in PATTERNS]
    assert all(names) and len(set(names)) == len(names)
    assert all(p.says[0] for p in PATTERNS)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
def test_the_pattern_reads_its_example(pattern: SlotPattern) -> None:
    example, value = pattern.says
    assert pattern.regex.search(example), f"{pattern.name}: its regex does not match {example!r}"
    subject = "noor" if pattern.of_object else "user"  # the child the example moves to a school
    found = [(s.subject, s.attribute, s.value, s.ended) for s in find_slots(example, "User")]
    assert (subject, pattern.attribute, value, pattern.ended) in found, found
