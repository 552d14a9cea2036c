"""The ways a change and a standing statement are said are tables: each form is named once and
carries a sentence it must read, with what it finds there."""

from __future__ import annotations

import re

import pytest

from deepcontext.extract.replacement_forms import ENDED, PARTED, ROLES, STANDING, SWITCHED, TAKEN_UP, Form
from deepcontext.extract.replacements import _STANDING_RE, EndedThing, Switch, ended_things, standing_thing, switched_to, taken_up


@pytest.mark.parametrize(
    "table",
    [ENDED, PARTED, TAKEN_UP, STANDING, SWITCHED, ROLES],
    ids=["ended", "parted", "taken up", "standing", "switched", "roles"],
)
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


@pytest.mark.parametrize("form", SWITCHED, ids=lambda f: f.name)
def test_a_switch_reads_its_example(form: Form) -> None:
    sentence, new = form.says
    assert re.search(form.words, sentence, re.IGNORECASE), f"{form.name}: its words are not in {sentence!r}"
    assert switched_to(sentence) == Switch("User", new)
    # said with no subject, it is the speaker's; said of someone else, theirs
    bare = sentence.removeprefix("User ")
    assert switched_to(bare[0].upper() + bare[1:]) == Switch("User", new)
    assert switched_to(sentence.replace("User", "Kim", 1)) == Switch("Kim", new)


@pytest.mark.parametrize("form", ROLES, ids=lambda f: f.name)
def test_a_role_filled_reads_its_example(form: Form) -> None:
    sentence, new = form.says
    assert re.search(form.words, sentence, re.IGNORECASE), f"{form.name}: its words are not in {sentence!r}"
    assert switched_to(sentence) == Switch("User", new)


@pytest.mark.parametrize(
    ("text", "switch"),
    [
        ("User banks with Monzo now.", Switch("User", "Monzo", restated=True)),
        ("The user and others have gone over to Disney+ for films.", Switch("User", "Disney+")),
        ("User's daughter switched to Oakwood School.", Switch("User's daughter", "Oakwood School")),
        ("User banks with Monzo.", None),  # no sign of a change
        ("User switched from Deezer to Qobuz.", None),  # names what it ends: ended_things reads it
        ("Sam and Jo switched to Vodafone.", None),
        ("User dropped Japanese, User is doing Korean now.", None),  # the verb is not the subject's first
    ],
)
def test_a_switch_is_read_only_where_it_is_said(text: str, switch: Switch | None) -> None:
    assert switched_to(text) == switch


@pytest.mark.parametrize(
    ("text", "thing"),
    [
        ("The user is on an iPhone 12 at the moment.", "an iPhone 12"),
        ("User writes with a Lamy Safari fountain pen.", "a Lamy Safari fountain pen"),  # any present-tense verb
        ("The user's pension is with Aviva.", "Aviva"),  # a role filled
        ("The user's phone's a Pixel 7.", "a Pixel 7"),
        ("The user and others get a veg box from Riverford.", "a veg box from Riverford"),  # "we"
        ("The user uses a Nokia G22, nothing fancy.", "a Nokia G22"),  # words describing the thing
        ("User drives a VW Golf and rides a bike.", None),  # compound: replacing it ends the bike too
        ("User uses Chrome for browsing, and Notion for notes.", None),
        ("User is really into birdwatching, it's their main hobby.", None),
        ("User went to the gym yesterday.", None),  # an episode
        ("Kim drives a VW Golf.", None),  # someone else's
    ],
)
def test_the_thing_of_a_standing_statement(text: str, thing: str | None) -> None:
    assert standing_thing("User", text) == thing
