"""Time expressions resolved against the moment a message was said (deepcontext.language.timeparse)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from deepcontext.language.timeparse import find_calendar_dates, resolve_time

# Wednesday 10 May 2023, 14:30 UTC
SAID = datetime(2023, 5, 10, 14, 30, tzinfo=UTC)


def at(y: int, m: int, d: int, h: int = 0, mi: int = 0, tz: timezone = UTC) -> datetime:
    return datetime(y, m, d, h, mi, tzinfo=tz)


@pytest.mark.parametrize(
    ("text", "tense", "expected", "granularity"),
    [
        ("I went to Paris yesterday.", "past", at(2023, 5, 9), "day"),
        ("Today I start my new job.", "present", at(2023, 5, 10), "day"),
        ("I fly out tomorrow.", "future", at(2023, 5, 11), "day"),
        ("We met the day before yesterday.", "past", at(2023, 5, 8), "day"),
        ("The party is the day after tomorrow.", "future", at(2023, 5, 12), "day"),
        ("Tonight we are going out.", "future", at(2023, 5, 10, 20), "part_of_day"),
        ("Last night I couldn't sleep.", "past", at(2023, 5, 9, 20), "part_of_day"),
        ("This morning I ran 5k.", "past", at(2023, 5, 10, 9), "part_of_day"),
        ("Yesterday evening I cooked pasta.", "past", at(2023, 5, 9, 19), "part_of_day"),
        ("Last week I moved to Berlin.", "past", at(2023, 5, 1), "week"),
        ("Next week I start.", "future", at(2023, 5, 15), "week"),
        ("This week has been long.", "present", at(2023, 5, 8), "week"),
        ("Last weekend I went camping.", "past", at(2023, 5, 6), "weekend"),
        ("This weekend we are hiking.", "future", at(2023, 5, 13), "weekend"),
        ("Last month I got promoted.", "past", at(2023, 4, 1), "month"),
        ("Next month I'm moving.", "future", at(2023, 6, 1), "month"),
        ("Last year I ran a marathon.", "past", at(2022, 1, 1), "year"),
        ("Next year I want to visit Japan.", "future", at(2024, 1, 1), "year"),
        ("I adopted him 3 days ago.", "past", at(2023, 5, 7), "day"),
        ("I started two weeks ago.", "past", at(2023, 4, 26), "week"),
        ("I quit a few days ago.", "past", at(2023, 5, 7), "day"),
        ("We broke up a couple of months ago.", "past", at(2023, 3, 10), "month"),
        ("I moved here 5 years ago.", "past", at(2018, 5, 10), "year"),
        ("The results come in 10 days.", "future", at(2023, 5, 20), "day"),
        ("I graduate in two months.", "future", at(2023, 7, 10), "month"),
        ("I went to the gym on Monday.", "past", at(2023, 5, 8), "day"),
        ("I have a dentist appointment on Monday.", "future", at(2023, 5, 15), "day"),
        ("I'll call her on Friday.", "future", at(2023, 5, 12), "day"),
        ("I saw her on Friday.", "past", at(2023, 5, 5), "day"),
        ("Last Tuesday I had lunch with my boss.", "past", at(2023, 5, 9), "day"),
        ("Next Wednesday is the deadline.", "future", at(2023, 5, 17), "day"),
        ("This Friday we ship.", "future", at(2023, 5, 12), "day"),
        ("I visited Rome on 8 May 2023.", "past", at(2023, 5, 8), "day"),
        ("My birthday is May 8th, 2023.", "present", at(2023, 5, 8), "day"),
        ("We married on the 3rd of June 2019.", "past", at(2019, 6, 3), "day"),
        ("It happened on 2023-05-08.", "past", at(2023, 5, 8), "day"),
        ("The form says 05/08/2023.", "present", at(2023, 5, 8), "day"),
        ("The invoice is dated 25/12/2022.", "present", at(2022, 12, 25), "day"),
        ("I lived in Ohio in 2019.", "past", at(2019, 1, 1), "year"),
        ("I was born in March 1990.", "past", at(1990, 3, 1), "month"),
        ("We went there in the summer of 2019.", "past", at(2019, 6, 1), "season"),
        ("Last summer we went to Italy.", "past", at(2022, 6, 1), "season"),
        ("I fly back tomorrow at 3pm.", "future", at(2023, 5, 11, 15), "minute"),
        ("We meet on Monday at 10:30.", "future", at(2023, 5, 15, 10, 30), "minute"),
    ],
)
def test_resolves_against_said_at(text: str, tense: str, expected: datetime, granularity: str) -> None:
    got = resolve_time(text, SAID, tense)
    assert got is not None, text
    assert got.when == expected
    assert got.granularity == granularity


def test_date_without_year_follows_the_tense() -> None:
    # said on 10 May 2023: a past "December 25" is last Christmas, a future one the next
    assert resolve_time("We met on December 25.", SAID, "past").when == at(2022, 12, 25)
    assert resolve_time("The party is on December 25.", SAID, "future").when == at(2023, 12, 25)
    assert resolve_time("I went there on May 2.", SAID, "past").when == at(2023, 5, 2)
    assert resolve_time("I'm going there on May 2.", SAID, "future").when == at(2024, 5, 2)
    assert resolve_time("In June I went to Spain.", SAID, "past").when == at(2022, 6, 1)
    assert resolve_time("In June I'm going to Spain.", SAID, "future").when == at(2023, 6, 1)


def test_weekday_on_the_same_day_is_never_today() -> None:
    wednesday = datetime(2023, 5, 10, 9, tzinfo=UTC)
    assert resolve_time("I saw him on Wednesday.", wednesday, "past").when == at(2023, 5, 3)
    assert resolve_time("I'll see him on Wednesday.", wednesday, "future").when == at(2023, 5, 17)


def test_weekend_said_on_a_sunday() -> None:
    sunday = datetime(2023, 5, 14, 18, tzinfo=UTC)
    assert resolve_time("Last weekend I was ill.", sunday, "past").when == at(2023, 5, 6)
    assert resolve_time("Over the weekend I painted the fence.", sunday, "past").when == at(2023, 5, 13)


def test_month_arithmetic_clamps_the_day() -> None:
    march31 = datetime(2023, 3, 31, 12, tzinfo=UTC)
    assert resolve_time("I moved a month ago.", march31, "past").when == at(2023, 2, 28)
    assert resolve_time("Last month was rough.", march31, "past").when == at(2023, 2, 1)


def test_keeps_the_timezone_of_said_at() -> None:
    tokyo = timezone(timedelta(hours=9))
    said = datetime(2023, 5, 10, 1, 0, tzinfo=tokyo)  # still 9 May in UTC
    got = resolve_time("I went running yesterday.", said, "past")
    assert got is not None
    assert got.when == datetime(2023, 5, 9, tzinfo=tokyo)
    assert got.when.utcoffset() == timedelta(hours=9)


def test_naive_said_at_is_taken_as_utc() -> None:
    got = resolve_time("I went running yesterday.", datetime(2023, 5, 10, 12), "past")
    assert got is not None and got.when == at(2023, 5, 9)


def test_reports_the_expression_and_its_span() -> None:
    text = "So last Friday I finally quit."
    got = resolve_time(text, SAID, "past")
    assert got is not None
    assert got.text == "last Friday"
    assert text[got.start : got.end] == "last Friday"
    assert got.explicit is False
    explicit = resolve_time("I was born on 8 May 1990.", SAID, "past")
    assert explicit is not None and explicit.explicit is True


def test_first_expression_wins() -> None:
    got = resolve_time("Yesterday I booked the flight for next Friday.", SAID, "past")
    assert got is not None and got.text == "Yesterday" and got.when == at(2023, 5, 9)


def test_since_is_flagged() -> None:
    got = resolve_time("I've been vegetarian since 2015.", SAID, "present")
    assert got is not None and got.since is True and got.when == at(2015, 1, 1)
    got = resolve_time("I have lived here since last year.", SAID, "present")
    assert got is not None and got.since is True
    got = resolve_time("I moved here in 2015.", SAID, "past")
    assert got is not None and got.since is False


@pytest.mark.parametrize(
    "text",
    [
        "I go to the gym every Monday.",
        "On Mondays I work from home.",
        "I may go later.",
        "The 2 may be related.",
        "I have 3 cats and 2 dogs.",
        "Python 3.12 is faster.",
        "I scored 2019 points.",
        "I love my job.",
        "",
        "Recently I started painting.",
    ],
)
def test_no_time_expression(text: str) -> None:
    assert resolve_time(text, SAID, "past") is None


def test_impossible_dates_are_skipped_not_raised() -> None:
    assert resolve_time("It was on 2023-02-30.", SAID, "past") is None
    assert resolve_time("Due 31/02/2023.", SAID, "past") is None
    # an impossible date does not hide a later valid one
    got = resolve_time("Not 2023-02-30 but yesterday.", SAID, "past")
    assert got is not None and got.when == at(2023, 5, 9)


def test_chinese_expressions() -> None:
    assert resolve_time("昨天我去了北京", SAID, "past").when == at(2023, 5, 9)
    assert resolve_time("我明天上班", SAID, "future").when == at(2023, 5, 11)
    assert resolve_time("我去年搬家了", SAID, "past").when == at(2022, 1, 1)
    assert resolve_time("我下个月去日本", SAID, "future").when == at(2023, 6, 1)
    assert resolve_time("我喜欢咖啡", SAID, "present") is None


def test_find_calendar_dates() -> None:
    text = "Born on 8 May 1990, moved in 2019, back in the summer of 2020, and again on the 3rd of June."
    got = find_calendar_dates(text)
    assert [surface for _, _, surface in got] == ["8 May 1990", "2019", "summer of 2020", "3rd of June"]
    for start, end, surface in got:
        assert text[start:end] == surface


def test_relative_expressions_are_not_calendar_dates() -> None:
    assert find_calendar_dates("Yesterday and last week and 3 days ago.") == []
    assert find_calendar_dates("I have 2 kids.") == []
