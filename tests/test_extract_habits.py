"""A habit's time ("on Thursday nights", "every Tuesday") stays as said; one occasion resolves to a date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deepcontext.extract.interface import ExtractionContext, MessageIn
from deepcontext.extract.rules import RuleExtractor
from deepcontext.language.timeparse import resolve_time
from deepcontext.types import MemoryType

SAID = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)  # a Monday
EX = RuleExtractor()


def facts(text: str):
    ctx = ExtractionContext(user_id="u", conversation_id="c", now=SAID)
    return EX.extract_sync([MessageIn(index=0, role="user", content=text, said_at=SAID)], ctx).facts


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("I do pottery on Thursday nights", "on Thursday nights"),
        ("I swim on Thursdays", "on Thursdays"),
        ("I play tennis every Tuesday", "every Tuesday"),
        ("We go hiking on weekends", "on weekends"),
        ("I jog on weekday mornings", "on weekday mornings"),
        ("I meditate every morning", "every morning"),
        ("I call my mom each Friday", "each Friday"),
        ("We play chess on Sunday afternoons", "on Sunday afternoons"),
        ("I cook on Tuesday and Thursday evenings", "on Tuesday and Thursday evenings"),
        ("I go skiing in March every year", "in March every year"),
        ("I usually swim at the lake on Friday", "on Friday"),
        ("I play five-a-side every other Wednesday", "every other Wednesday"),
        ("I visit my grandmother every Monday and Friday", "every Monday and Friday"),
        ("I take salsa classes Friday nights", "Friday nights"),
        ("I visit the market every Monday, Wednesday and Saturday", "every Monday, Wednesday and Saturday"),
        ("I dread the Monday meetings at work", "Monday meetings"),
        ("I miss our Friday drinks with the team", "Friday drinks"),
    ],
)
def test_a_recurring_time_stays_as_said(said: str, kept: str) -> None:
    [fact] = facts(said)
    assert kept in fact.text
    assert "2025" not in fact.text
    assert fact.occurred_at is None
    assert "time_expression" not in fact.metadata
    assert fact.memory_type is not MemoryType.EPISODIC


@pytest.mark.parametrize(
    ("said", "written", "day"),
    [
        ("I went to Paris last week", "in the week of 2025-03-03", datetime(2025, 3, 3, tzinfo=UTC)),
        ("On Friday I went to the cinema with Ana", "On 2025-03-07", datetime(2025, 3, 7, tzinfo=UTC)),
        ("I visited my sister in March", "in March 2025", datetime(2025, 3, 1, tzinfo=UTC)),
        ("I saw the dentist yesterday", "on 2025-03-09", datetime(2025, 3, 9, tzinfo=UTC)),
        ("Last Tuesday I started a pottery class", "On 2025-03-04", datetime(2025, 3, 4, tzinfo=UTC)),
        ("I moved to Berlin two weeks ago", "in the week of 2025-02-24", datetime(2025, 2, 24, tzinfo=UTC)),
        ("I'm flying to Rome next Monday", "on 2025-03-17", datetime(2025, 3, 17, tzinfo=UTC)),
        ("We had dinner at Luigi's on Saturday night", "on the night of 2025-03-08", datetime(2025, 3, 8, 20, tzinfo=UTC)),
        ("I usually run, but on Friday I went swimming", "on 2025-03-07", datetime(2025, 3, 7, tzinfo=UTC)),
    ],
)
def test_one_occasion_resolves_against_the_day_it_was_said(said: str, written: str, day: datetime) -> None:
    [fact] = facts(said)
    assert written in fact.text
    assert fact.occurred_at == day


@pytest.mark.parametrize(
    "text",
    [
        "I do pottery on Thursday nights",
        "We meet Friday nights",
        "I run every other Tuesday",
        "I call mom every single Sunday",
        "I swim every Monday, Wednesday and Friday",
        "Every year in March we go skiing",
        "I normally cook on Sunday",
        "I see her on Monday every week",
    ],
)
def test_the_parser_reads_no_date_in_a_habit(text: str) -> None:
    assert resolve_time(text, SAID, "present") is None


def test_a_weekday_after_a_determiner_is_still_a_day_when_no_noun_follows() -> None:
    m = resolve_time("I saw the Sunday before last that the shop had closed", SAID, "past")
    assert m is not None and "Sunday" in m.text
    assert resolve_time("My Monday meetings run long", SAID, "present") is None


def test_a_habit_does_not_hide_a_later_date() -> None:
    m = resolve_time("I swim on Thursday nights and I went to Oslo last week", SAID, "past")
    assert m is not None
    assert m.text == "last week"
