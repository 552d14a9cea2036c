"""The sentences that are no memory are a table: each form is named once and carries a sentence it
must skip, for the roles it applies to."""

from __future__ import annotations

import re

import pytest

from deepcontext.extract.facts import is_skippable
from deepcontext.extract.skip_forms import SKIPS, Skip


def test_every_form_is_named_once_and_has_an_example() -> None:
    names = [s.name for s in SKIPS]
    assert len(set(names)) == len(names)
    assert all(s.says and s.roles for s in SKIPS)


@pytest.mark.parametrize("form", SKIPS, ids=lambda s: s.name)
def test_the_form_skips_its_example(form: Skip) -> None:
    assert re.match(rf"^(?:{form.words})\b", form.says, re.IGNORECASE), f"{form.name}: its words do not open {form.says!r}"
    for role in form.roles:
        assert is_skippable(form.says, role=role)


@pytest.mark.parametrize(
    "sentence",
    [
        "I love my new job at the bakery.",
        "Nice weather in Porto lets me cycle to work.",
        "Thankfully the surgery went well.",  # "thank" inside a longer word
        "My sister hopes to move to Lyon.",
        "Youth football takes up my Saturdays.",
    ],
)
def test_a_statement_of_fact_is_kept(sentence: str) -> None:
    assert not is_skippable(sentence, role="user")


def test_a_request_or_a_sentence_to_the_assistant_is_skipped_only_from_the_user() -> None:
    for form in (s for s in SKIPS if s.roles == ("user",)):
        assert is_skippable(form.says, role="user") and not is_skippable(form.says, role="assistant")
