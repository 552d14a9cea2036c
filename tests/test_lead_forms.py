"""Words around a sentence that carry no fact are tables: each form is named once and carries a
sentence it must read, with what is left once it is dropped."""

from __future__ import annotations

import re

import pytest

from deepcontext.extract.facts import strip_lead
from deepcontext.extract.forms import Form
from deepcontext.extract.lead_forms import OPENERS, REACTIONS, REMEMBER, REPORTED, TAGS

TABLES = {"openers": OPENERS, "reactions": REACTIONS, "remember": REMEMBER, "reported": REPORTED, "tags": TAGS}
ROWS = [(table, f) for table, rows in TABLES.items() for f in rows]


@pytest.mark.parametrize("rows", TABLES.values(), ids=list(TABLES))
def test_every_form_is_named_once_and_has_an_example(rows: tuple[Form, ...]) -> None:
    names = [f.name for f in rows]
    assert len(set(names)) == len(names)
    assert all(f.says[0] and f.says[1] and f.says[0] != f.says[1] for f in rows)


@pytest.mark.parametrize(("table", "form"), ROWS, ids=[f"{t}: {f.name}" for t, f in ROWS])
def test_a_form_reads_its_example(table: str, form: Form) -> None:
    sentence, rest = form.says
    assert re.search(rf"(?:^|\s)(?:{form.words})\W", sentence, re.IGNORECASE), f"{form.name}: not in {sentence!r}"
    left, remember = strip_lead(sentence)
    assert left == rest
    assert remember is (table == "remember")


@pytest.mark.parametrize(
    "sentence",
    [
        "Oh.",  # nothing but a lead: no fact at all
        "Cool!",
    ],
)
def test_a_sentence_of_leads_alone_leaves_nothing(sentence: str) -> None:
    assert strip_lead(sentence) == ("", False)


@pytest.mark.parametrize(
    "sentence",
    [
        "Remember to book the dentist.",  # a reminder, not a request to remember
        "Nothing changed since May.",  # "no" only as a word of its own
        "Okra is my favourite vegetable.",  # "ok" only as a word of its own
        "I told Sam about the move.",  # reported speech needs "I told you"
    ],
)
def test_words_that_only_look_like_a_lead_stay(sentence: str) -> None:
    assert strip_lead(sentence) == (sentence, False)
