"""The ways a change and a standing statement are said are tables: each form is named once and
carries a sentence it must read, with what it finds there."""

from __future__ import annotations

import re

import pytest

from deepcontext.extract.replacement_forms import ENDED, PARTED, STANDING, TAKEN_UP, Form
from deepcontext.extract.replacements import _STANDING_RE, EndedThing, ended_things, taken_up


@pytest.mark.parametrize("table", [ENDED, PARTED, TAKEN_UP, STANDING], ids=["ended", "parted", "taken up", "standing"])
def test_every_form_is_named_once_and_has_an_example(table: tuple[Form, ...]) -> None:
    names = [f.name for f in table]
    assert len(set(names)) == len(names)
    assert all(f.says[0] and f.says[1] for f in table)


@pytest.mark.parametrize("form", ENDED, ids=lambda f: f.name)
def test_an_ending_reads_its_example(form: Form) -> None:
    sentence, thing = form.says
    assert re.search(rf"\b(?:{form.words})\s", sentence, re.IGNORECASE), f"{form.name}: its words are not in {sentence!r}"
    assert [e.thing.rstrip(".") for e in ended_things(sentence)] == [thing]


@pytest.mark.parametrize("form", PARTED, ids=lambda f: f.name)
def test_a_parting_reads_its_example(form: Form) -> None:
    sentence, other = form.says
    assert re.search(rf"\b(?:{form.words})\b", sentence, re.IGNORECASE), f"{form.name}: its words are not in {sentence!r}"
    assert ended_things(sentence) == [EndedThing("User", other)]
    # two other people parting end nothing of the user's
    assert ended_things(sentence.replace("User", "Kim")) == []


@pytest.mark.parametrize("form", TAKEN_UP, ids=lambda f: f.name)
def test_what_was_taken_up_reads_its_example(form: Form) -> None:
    sentence, new = form.says
    assert re.search(form.words, sentence, re.IGNORECASE), f"{form.name}: its words are not in {sentence!r}"
    assert taken_up(sentence) == new


@pytest.mark.parametrize("form", STANDING, ids=lambda f: f.name)
def test_a_standing_statement_reads_its_example(form: Form) -> None:
    sentence, verb = form.says
    m = _STANDING_RE.match(sentence)
    assert m is not None and sentence[: m.end()].rstrip() == verb.rstrip()
    # and this form is the one that read it: the statement's verb phrase ends with its words
    assert re.search(rf"\s(?:{form.words})$", sentence[: m.end()], re.IGNORECASE)
