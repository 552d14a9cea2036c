"""Memories that stay true after ordinary conversation: an update supersedes only the fact it
changes, a first-person question is about the user (not their brother), a user's facts keep meeting
their later ones after the user is named, and changes said as events ("traded the Golf in for a
Kia", "left the chess club") supersede the standing statement they end."""

from __future__ import annotations

from datetime import timedelta

from deepcontext import DeepContext
from deepcontext.types import MemoryStatus
from tests.engine.test_knowledge_updates import T0, facts, first, say


def _one(by_text: dict[str, object], needle: str) -> object:
    found = [m for t, m in by_text.items() if needle in t]
    assert len(found) == 1, (needle, list(by_text))
    return found[0]


async def test_a_move_leaves_the_job_said_in_the_same_sentence(ctx: DeepContext) -> None:
    await say(ctx, "I live in Leeds and teach maths at Parkside.", 0)
    await say(ctx, "We finally moved to York.", 40)
    by_text = await facts(ctx)
    home, job = _one(by_text, "Leeds"), _one(by_text, "Parkside")
    assert "York" not in job.text and "Leeds" not in job.text  # two facts, not one
    assert home.status is MemoryStatus.SUPERSEDED
    assert job.status is MemoryStatus.ACTIVE and job.superseded_by is None
    res = await ctx.search("Where does the user teach?", user_id="ana", limit=5)
    assert first(res.results, "Parkside") == 0


async def test_a_sentence_that_states_no_fact_twice_stays_whole(ctx: DeepContext) -> None:
    await say(ctx, "I went down to the lake and swam for an hour.", 0)
    await say(ctx, "I live in Leeds and love it.", 1)
    texts = list(await facts(ctx))
    assert any("lake" in t and "swam" in t for t in texts)
    assert any("Leeds" in t and "love" in t for t in texts)


async def test_a_first_person_question_is_about_the_user_not_their_brother(ctx: DeepContext) -> None:
    await say(ctx, "I moved to Cork in June.", 0)
    await say(ctx, "My brother got a flat in Dublin.", 30)
    by_text = await facts(ctx)
    assert _one(by_text, "Cork").status is MemoryStatus.ACTIVE  # another person's move changes nothing of the user's
    res = await ctx.search("Where do I live?", user_id="ana", limit=5)
    assert first(res.results, "Cork") == 0
    about_him = await ctx.search("Where does my brother live?", user_id="ana", limit=5)
    assert first(about_him.results, "Dublin") is not None


async def test_the_users_facts_meet_their_later_ones_after_the_user_is_named(ctx: DeepContext) -> None:
    await say(ctx, "I live in Oslo.", 0)
    await ctx.set_user("ana", name="Tomas")
    await say(ctx, "Since the autumn I live in Trondheim.", 30)
    by_text = await facts(ctx)
    old = _one(by_text, "Oslo")
    assert old.text.startswith("Tomas") and old.status is MemoryStatus.SUPERSEDED
    res = await ctx.search("Where do I live now?", user_id="ana", limit=5)
    assert first(res.results, "Trondheim") == 0


async def test_changes_said_as_events_supersede_what_they_end(ctx: DeepContext) -> None:
    await say(ctx, "I drive a VW Golf.", 0, user="car")
    await say(ctx, "I traded the old Golf in for an electric Kia.", 30, user="car")
    car = await facts(ctx, "car")
    assert _one(car, "drives a VW Golf").status is MemoryStatus.SUPERSEDED
    await say(ctx, "I'm a member of the chess club.", 0, user="club")
    await say(ctx, "I left the chess club and joined a climbing gym.", 30, user="club")
    club = await facts(ctx, "club")
    member = _one(club, "member of the chess club")
    assert member.status is MemoryStatus.SUPERSEDED
    assert club[next(t for t in club if "climbing" in t)].id == member.superseded_by


async def test_an_event_about_something_else_supersedes_nothing(ctx: DeepContext) -> None:
    await say(ctx, "I have a cat called Miso.", 0)
    await say(ctx, "I play tennis every weekend.", 1)
    await say(ctx, "I gave away my old sofa and sold my bike.", 30)
    await say(ctx, "My sister quit tennis last year.", 31)
    by_text = await facts(ctx)
    assert _one(by_text, "cat called Miso").status is MemoryStatus.ACTIVE
    assert _one(by_text, "plays tennis").status is MemoryStatus.ACTIVE


async def test_what_took_the_ended_things_place_is_the_standing_fact_now(ctx: DeepContext) -> None:
    await say(ctx, "I work at Starling.", 0, user="job")
    await say(ctx, "I left Starling and joined Wise.", 30, user="job")
    job = await facts(ctx, "job")
    old, new = _one(job, "works at Starling"), _one(job, "works at Wise")
    assert old.status is MemoryStatus.SUPERSEDED and old.superseded_by == new.id
    assert new.status is MemoryStatus.ACTIVE and new.memory_type.value == "semantic"
    assert new.metadata["slot:user|employer"] == {"value": "wise"}
    res = await ctx.search("Where do I work these days?", user_id="job", limit=5)
    assert first(res.results, "Wise") == 0
    # the change's own words stay in its turn
    turns = await ctx.search("left Starling", user_id="job", limit=10)
    assert first(turns.results, "left Starling and joined Wise") is not None
    await say(ctx, "I play volleyball every Tuesday.", 0, user="sport")
    await say(ctx, "I gave up volleyball and took up basketball.", 30, user="sport")
    sport = await facts(ctx, "sport")
    assert _one(sport, "volleyball every Tuesday").status is MemoryStatus.SUPERSEDED
    assert _one(sport, "plays basketball").status is MemoryStatus.ACTIVE
    assert not any("basketball every Tuesday" in t for t in sport)  # what described the old thing stays with it


async def test_a_relatives_move_leaves_the_users_home(ctx: DeepContext) -> None:
    await say(ctx, "I live in Bremen.", 0)
    await say(ctx, "My parents moved to Lübeck.", 30)
    by_text = await facts(ctx)
    assert _one(by_text, "lives in Bremen").status is MemoryStatus.ACTIVE
    assert _one(by_text, "parents moved to Lübeck").metadata.get("slots") == "user's parents|residence"


async def test_a_child_moved_to_another_school_supersedes_the_old_one(ctx: DeepContext) -> None:
    await say(ctx, "My daughter Noor goes to Brightwater Primary.", 0)
    await say(ctx, "We moved Noor to Elm Park Primary after the summer.", 30)
    by_text = await facts(ctx)
    assert _one(by_text, "Brightwater").status is MemoryStatus.SUPERSEDED
    res = await ctx.search("Which school does Noor go to?", user_id="ana", limit=5)
    assert first(res.results, "Elm Park") == 0


async def alone(ctx: DeepContext, text: str, days: int) -> None:
    """One message in a conversation of its own: nothing said before names anyone."""
    when = T0 + timedelta(days=days)
    await ctx.add([{"role": "user", "content": text}], user_id="ana", conversation_id=f"a{days}", timestamp=when)


async def test_a_she_with_no_one_named_before_is_the_one_relative_with_such_a_fact(ctx: DeepContext) -> None:
    await alone(ctx, "My daughter goes to Maple Leaf Montessori and my son goes to Northgate High.", 0)
    await alone(ctx, "She moved to Brightwater Primary this term.", 30)
    await alone(ctx, "We moved him to Crossfield Secondary.", 60)
    by_text = await facts(ctx)
    assert _one(by_text, "Maple Leaf").status is MemoryStatus.SUPERSEDED
    assert _one(by_text, "The user's daughter moved to Brightwater Primary").status is MemoryStatus.ACTIVE
    assert _one(by_text, "Northgate").status is MemoryStatus.SUPERSEDED
    assert _one(by_text, "moved the user's son to Crossfield Secondary").status is MemoryStatus.ACTIVE
    res = await ctx.search("Which school does my daughter go to?", user_id="ana", limit=5)
    assert first(res.results, "Brightwater") == 0


async def test_a_she_or_he_that_could_be_several_people_stays_unresolved(ctx: DeepContext) -> None:
    # two girls with a school: "she" could be either; no son's job is stored: "he" is no one known
    await alone(ctx, "My daughter goes to Maple Leaf Montessori and my niece goes to Northgate High.", 0)
    await alone(ctx, "She moved to Brightwater Primary this term.", 30)
    await alone(ctx, "He works at Tesco on Saturdays.", 60)
    by_text = await facts(ctx)
    assert _one(by_text, "Maple Leaf").status is MemoryStatus.ACTIVE
    assert _one(by_text, "Northgate").status is MemoryStatus.ACTIVE
    assert not [t for t in by_text if "Brightwater" in t and not t.startswith("User:")]
    assert not [t for t in by_text if "Tesco" in t and not t.startswith("User:")]


async def test_changes_said_without_a_subject_or_under_another_name_end_what_they_end(ctx: DeepContext) -> None:
    await say(ctx, "I ride a Honda CB500 to work most days.", 0, user="bike")
    await say(ctx, "Sold the Honda last weekend, bought a Brompton folding bike instead.", 30, user="bike")
    bike = await facts(ctx, "bike")
    assert _one(bike, "Honda CB500").status is MemoryStatus.SUPERSEDED
    assert _one(bike, "rides a Brompton").status is MemoryStatus.ACTIVE
    await say(ctx, "I'm a member of Riverside Climbing Centre in Putney.", 0, user="wall")
    await say(ctx, "I've cancelled my Riverside membership, the prices went up again.", 30, user="wall")
    wall = await facts(ctx, "wall")
    assert _one(wall, "Riverside Climbing Centre").status is MemoryStatus.SUPERSEDED
    await say(ctx, "I play the cello in a string quartet.", 0, user="cello")
    await say(ctx, "I'm not playing cello these days, I've taken up the ukulele.", 30, user="cello")
    cello = await facts(ctx, "cello")
    assert _one(cello, "string quartet").status is MemoryStatus.SUPERSEDED
    assert _one(cello, "plays the ukulele").status is MemoryStatus.ACTIVE
    await say(ctx, "Handed in my notice at Grind in March.", 0, user="grind")
    assert any(t.startswith("The user handed in their notice at Grind") for t in await facts(ctx, "grind"))


async def test_a_passing_no_or_a_plan_ends_nothing(ctx: DeepContext) -> None:
    await say(ctx, "I play the cello in a string quartet.", 0)
    await say(ctx, "I'm not playing cello tonight, my hand hurts.", 30)
    await say(ctx, "I might quit the quartet if rehearsals move to Mondays.", 31)
    assert _one(await facts(ctx), "string quartet").status is MemoryStatus.ACTIVE


async def test_what_superseded_a_matching_fact_is_found_where_the_fact_would_be(ctx: DeepContext) -> None:
    # the question shares its words with the old fact, not with the change that ended it
    await say(ctx, "I volunteer at the RSPCA rescue centre in Leicester on Saturdays.", 0)
    await say(ctx, "I packed in the RSPCA volunteering back in June.", 30)
    assert _one(await facts(ctx), "rescue centre").status is MemoryStatus.SUPERSEDED
    res = await ctx.search("Do I still volunteer at the rescue centre in Leicester on Saturdays?", user_id="ana", limit=5)
    assert first(res.results, "packed in") == 0
    # asked about the past, the old fact's turn answers
    past = await ctx.search("Where did I use to volunteer on Saturdays?", user_id="ana", limit=5)
    assert first(past.results, "rescue centre") is not None
