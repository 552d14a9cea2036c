"""The compound split and the ended-thing reading, on the texts the extractor writes."""

from __future__ import annotations

import pytest

from deepcontext.extract.compound import split_compound
from deepcontext.extract.possessives import tidy_possessives
from deepcontext.extract.replacements import ended_things, ends, taken_up, with_new_thing
from deepcontext.language.unnamed import written


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("User lives in Leeds and teaches maths at Parkside.", ["User lives in Leeds.", "User teaches maths at Parkside."]),
        ("User drives a VW Golf and works at Google.", ["User drives a VW Golf.", "User works at Google."]),
        ("User lives in Leeds and loves hiking in the Dales.", ["User lives in Leeds.", "User loves hiking in the Dales."]),
        ("User lives in Leeds and User's brother lives in Hull.", ["User lives in Leeds.", "User's brother lives in Hull."]),
        ("User went to the lake and swam.", ["User went to the lake and swam."]),  # no single-valued fact
        ("User lives in Leeds and loves it.", ["User lives in Leeds and loves it."]),  # leans on the first clause
        ("User moved to York and started a new job there.", ["User moved to York and started a new job there."]),
        ("User lives in Leeds and lives in York.", ["User lives in Leeds and lives in York."]),  # one slot twice
        # a clause naming its own subject stands with two content words; one borrowing it needs three
        ("User lives in Osaka and User is learning the shamisen.", ["User lives in Osaka.", "User is learning the shamisen."]),
        ("User is lactose intolerant and User lives in Montreal.", ["User is lactose intolerant.", "User lives in Montreal."]),
        (
            "User works at the Co-op and User's hobby is fell running.",
            ["User works at the Co-op.", "User's hobby is fell running."],
        ),
        ("User lives in Leeds and packed up boxes.", ["User lives in Leeds and packed up boxes."]),
        ("User lives in Leeds and User is happy.", ["User lives in Leeds and User is happy."]),
    ],
)
def test_split_compound(text: str, parts: list[str]) -> None:
    assert split_compound(text, "User") == parts


@pytest.mark.parametrize(
    ("new", "old", "ended"),
    [
        ("User traded the old Golf in for an electric Kia.", "User drives a VW Golf.", True),
        ("User left the chess club and joined a climbing gym.", "User is a member of the chess club.", True),
        ("User gave up tennis and took up padel.", "User plays tennis every weekend.", True),
        ("User sold the piano last spring.", "User owns a Yamaha piano.", True),
        ("User no longer has a car.", "User has a red car.", True),
        ("User's son left Hillside School.", "User's son goes to Hillside School.", True),
        ("User quit smoking in February.", "User smokes a pack a day.", True),
        ("User gave up tennis.", "User went to a tennis match on Friday.", False),  # an episode, not a standing fact
        ("User gave up tennis.", "User's sister plays tennis.", False),  # another person
        ("User's sister quit tennis.", "User plays tennis every weekend.", False),
        ("User sold the bike.", "User drives a VW Golf.", False),  # another thing
        ("User gave up tennis.", "User doesn't play tennis anymore.", False),  # nothing standing to end
        ("User cancelled their Riverside membership.", "User is a member of Riverside Climbing Centre.", True),
        ("User packed in the RSPCA volunteering back in June.", "User volunteers at the RSPCA centre.", True),
        ("User is not playing cello these days.", "User plays the cello in a string quartet.", True),
        ("User is not playing cello tonight.", "User plays the cello in a string quartet.", False),  # a passing no
        ("User handed in their notice at Grind.", "User works as a barista at Grind.", True),
        ("User stopped working nights in October.", "User works night shifts at the depot.", True),
        ("Priyanka and User split up.", "User is dating Priyanka.", True),
        ("User and Sam got divorced.", "User is married to Sam.", True),
        ("Jo and Sam split up.", "User is dating Sam.", False),  # two other people
        # the thing is in another clause than the standing verb's: what the first clause says still holds
        ("User swapped Costa for a job at Waterstones.", "User is studying nursing and works weekends at a Costa.", False),
    ],
)
def test_ended_things_end_the_standing_statement(new: str, old: str, ended: bool) -> None:
    assert any(ends(e, old) for e in ended_things(new)) is ended


@pytest.mark.parametrize(
    ("new", "old", "now"),
    [
        ("User left Starling and joined Wise.", "User works at Starling.", "User works at Wise."),
        ("User gave up volleyball and took up basketball.", "User plays volleyball every Tuesday.", "User plays basketball."),
        ("User traded the Corsa in for a Renault Zoe.", "User drives a Vauxhall Corsa.", "User drives a Renault Zoe."),
        ("User switched from Deezer to Qobuz.", "User subscribes to Deezer.", "User subscribes to Qobuz."),
        ("User swapped the cat for a dog.", "User has a cat.", "User has a dog."),
        ("User left Leon and joined Wagamama.", "User works as a chef at Leon.", "User works as a chef at Wagamama."),
        ("User sold the piano last spring.", "User owns a Yamaha piano.", None),  # nothing took its place
        ("User resigned from Leon and opened a café.", "User works as a chef at Leon.", None),  # not the same role
    ],
)
def test_what_took_an_ended_things_place(new: str, old: str, now: str | None) -> None:
    stored = written(old)  # as a memory says it: "The user works at Starling."
    ended = [e for e in ended_things(written(new)) if ends(e, stored)]
    assert ended
    thing = taken_up(written(new))
    assert (with_new_thing(ended[0], stored, thing) if thing else None) == (written(now) if now else None)


@pytest.mark.parametrize(
    ("text", "tidy"),
    [
        ("User broke User's wrist skateboarding.", "User broke their wrist skateboarding."),
        ("User lost User's keys and User's wallet at the gym.", "User lost their keys and their wallet at the gym."),
        ("User told User's boss User needs a raise.", "User told their boss User needs a raise."),
        ("User and User's wife went hiking.", "User and their wife went hiking."),
        ("Sam's team is migrating Sam's team's database.", "Sam's team is migrating their database."),
        ("Priya's team's servers went down on Friday.", "The servers of Priya's team went down on Friday."),
        ("User's friend's dog's vet bill was huge.", "The vet bill of the dog of User's friend was huge."),
        ("User's colleague's wife's bakery won an award.", "The bakery of the wife of User's colleague won an award."),
        ("User's mum's garden looks lovely.", "The garden of User's mum looks lovely."),
        ("User's boss's kids sing in a choir.", "User's boss's kids sing in a choir."),  # "kids sing" is no head
        # a new clause, or two people in the subject: "their" would be anyone's
        ("User loves films, they get User's mind going.", "User loves films, they get User's mind going."),
        ("User and Sam gave User's bike away.", "User and Sam gave User's bike away."),
        ("User's sister visited User's parents.", "User's sister visited User's parents."),
    ],
)
def test_possessives_read_as_a_careful_writer_puts_them(text: str, tidy: str) -> None:
    assert tidy_possessives(text, "User") == tidy
