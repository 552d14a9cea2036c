"""The words before an unknown name that tell what it names are tables: each cue is named once
and carries a sentence it must read, with the name it types."""

from __future__ import annotations

import pytest

from deepcontext.extract.entities import find_entities
from deepcontext.extract.entity_cues import LEFT, NAMED, Cue
from deepcontext.types import EntityType

ROWS = [*LEFT, *NAMED]


@pytest.mark.parametrize("table", [LEFT, NAMED], ids=["left", "named"])
def test_every_cue_is_named_once_and_has_an_example(table: tuple[Cue, ...]) -> None:
    names = [c.name for c in table]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("cue", ROWS, ids=lambda c: c.name)
def test_a_cue_types_the_name_in_its_example(cue: Cue) -> None:
    sentence, name = cue.says
    assert (name, cue.type) in [(e.name, e.type) for e in find_entities(sentence)]
    # without the cue the same name is typed otherwise (or is no entity at all)
    bare = f"They said {name} was fine."
    assert (name, cue.type) not in [(e.name, e.type) for e in find_entities(bare)]


def test_the_preposition_decides_between_cues() -> None:
    # a verb of work or study with "at" names an organisation; with "in", a place
    assert [(e.name, e.type) for e in find_entities("I worked in Varnholm.")] == [("Varnholm", EntityType.LOCATION)]
    assert [(e.name, e.type) for e in find_entities("I studied at Brindlewood.")] == [("Brindlewood", EntityType.ORGANIZATION)]
