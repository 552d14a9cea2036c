"""Single-valued facts (slots) and standing facts read from fact texts: what supersedes, what never does."""

from __future__ import annotations

import pytest

from deepcontext.extract.slots import find_slots, same_value
from deepcontext.language.standing import asks_for_time, bears_on_time, is_request_for_user, standing_kind


def one(text: str, speaker: str = "User") -> tuple[str, str, str, bool]:
    slots = find_slots(text, speaker)
    assert len(slots) == 1, slots
    s = slots[0]
    return s.subject, s.attribute, s.value, s.ended


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User rents a small apartment in Madrid, close to the Retiro park.", ("user", "residence", "madrid", False)),
        ("User said: we finally relocated to Porto in the spring.", ("user", "residence", "porto", False)),
        ("Every morning User has two mugs of black tea.", ("user", "drink", "black tea", False)),
        ("User's daughter Mia goes to Hillside Elementary.", ("mia", "school", "hillside elementary", False)),
        ("User drives a Toyota Corolla.", ("user", "car", "toyota corolla", False)),
        ("User got divorced last year.", ("user", "relationship", "divorced", False)),
        ("User went vegan in January.", ("user", "diet", "vegan", False)),
        ("User's sister lives in Berlin.", ("user's sister", "residence", "berlin", False)),
        ("User's favourite band is Radiohead.", ("user", "favourite:band", "radiohead", False)),
        ("User no longer lives in Berlin.", ("user", "residence", "berlin", True)),
        ("User sold User's car.", ("user", "car", "", True)),
        ("Now User drives a Renault Zoe.", ("user", "car", "renault zoe", False)),
        ("User relocated to Denver in May.", ("user", "residence", "denver", False)),
        ("User is employed by Tyrell Systems.", ("user", "employer", "tyrell systems", False)),
        # a child starting at a school attends it: a school, never an employer
        (
            "User's daughter started at Greenfield Primary in February.",
            ("user's daughter", "school", "greenfield primary", False),
        ),
        ("User started a new job at Hillside School.", ("user", "employer", "hillside school", False)),
        # whose fact it is: a relative's, however the relative is named
        ("User's parents moved to Lübeck.", ("user's parents", "residence", "lübeck", False)),
        ("User's best friend moved to Leeds.", ("user's friend", "residence", "leeds", False)),
        ("User's grandparents live in Cork.", ("user's grandparents", "residence", "cork", False)),
        ("User moved from Leeds to York.", ("user", "residence", "york", False)),
        ("User stopped drinking coffee.", ("user", "drink", "coffee", True)),  # what ended is no current value
        # a child moved to a school: the child's school
        ("User and others moved Noor to Elm Park Primary.", ("noor", "school", "elm park primary", False)),
        ("User moved User's son to Crossfield Secondary.", ("user's son", "school", "crossfield secondary", False)),
        ("User's daughter moved up to Birchfield Secondary.", ("user's daughter", "school", "birchfield secondary", False)),
    ],
)
def test_single_valued_facts_are_read(text: str, expected: tuple[str, str, str, bool]) -> None:
    assert one(text) == expected


def test_several_slots_of_one_fact() -> None:
    got = {
        (s.attribute, s.value, s.ended)
        for s in find_slots("User quit User's job at Globex and started at Initech as a product manager.")
    }
    assert got == {("employer", "globex", True), ("employer", "initech", False), ("job", "product manager", False)}
    got = {(s.attribute, s.value, s.ended) for s in find_slots("User switched to espresso, User doesn't drink tea anymore.")}
    assert got == {("drink", "espresso", False), ("drink", "tea", True)}


@pytest.mark.parametrize(
    "text",
    [
        "User also works at a bar on Saturdays.",  # a second job
        "User speaks Spanish and French.",  # multi-valued
        "User visited Rome last spring.",
        "User's planning to move to Lisbon next year.",  # a plan
        "User would love to drive a Porsche one day.",  # a wish
        "User grew up in Dublin.",  # the past
        "User used to live in Warsaw.",
        "User lived in Tallinn for a year as a student.",
        "User might join Globex if the reorg goes badly.",
        "User loves hiking in the mountains.",
        "User may move to Denver.",
        "He lives in Oslo.",  # nobody to resolve "he" to
    ],
)
def test_facts_that_coexist_give_no_slot(text: str) -> None:
    assert find_slots(text) == []


def test_we_is_the_speaker() -> None:
    assert one("Maya said: we moved to Porto.", speaker="Maya")[0] == "maya"


def test_same_value() -> None:
    assert same_value("tea", "black tea") and same_value("cappuccinos", "cappuccino")
    assert not same_value("madrid", "porto") and not same_value("", "porto")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("By the way, I'm lactose intolerant.", "allergy"),
        ("I'm allergic to peanuts.", "allergy"),
        ("I've been vegetarian since I was a teenager.", "diet"),
        ("Please always answer me in Spanish from now on.", "instruction"),
        ("Call me Sasha, nobody uses my full name.", "instruction"),
        # any language or unit system, not only the ones a labelled case names
        ("User wants the recipes in German.", "instruction"),
        ("Tom prefers weather reports in Fahrenheit.", "instruction"),
        ("User likes distances in imperial units.", "instruction"),
        ("My back has been sore for weeks, no lifting for me.", "constraint"),
        ("I scraped my knee on the pavement.", None),  # a body part alone is no constraint
        ("I use a wheelchair, so stairs are a problem for me.", "constraint"),
        ("I meditate for twenty minutes every evening.", "habit"),
        ("I really prefer window seats on planes.", "preference"),
        ("User can't stand horror movies.", "preference"),
        ("It rained all day yesterday.", None),
        ("Do you like spicy food?", None),
        # reactions, rules set by others, routines and likes in everyday phrasing
        ("Strawberries give me hives.", "allergy"),
        ("Dust makes my eyes itch all day.", "allergy"),
        ("Wasp stings are dangerous for me.", "allergy"),
        ("My lease doesn't allow pets.", "constraint"),
        ("Weekends are sacred, no work calls.", "constraint"),
        ("Money's tight until the summer.", "constraint"),
        ("No red meat for me, doctor's orders.", "constraint"),
        ("I swim daily before work.", "habit"),
        ("I can't focus without music on.", "habit"),
        ("Thrillers are my thing.", "preference"),
        ("Crowded beaches make me anxious.", "preference"),
        ("Keep your answers under a hundred words.", "instruction"),
        ("Don't talk down to me.", "instruction"),
        ("Whenever you suggest a recipe, list the calories.", "instruction"),
        # conditions, room, care and routines named without a verb of reacting; how answers should look
        ("Small lifts freak me out.", "constraint"),
        ("Pretty agoraphobic these days.", "constraint"),
        ("I'm hard of hearing, so phone calls are a pain.", "constraint"),
        ("I have poor eyesight at night.", "constraint"),
        ("Zero storage space in my flat.", "constraint"),
        ("I look after my dad on weekends.", "constraint"),
        ("Gave up sugar completely last spring.", "diet"),
        ("Not really a morning person.", "preference"),
        ("I can't handle loud bars.", "preference"),
        ("I'm at the gym most evenings.", "habit"),
        ("When you send me a workout plan, number the steps.", "instruction"),
        ("Finish your replies with a short recap.", "instruction"),
        ("Three suggestions max, please.", "instruction"),
        ("whenever u list hotels, add the price per night", "instruction"),
        ("Be blunt with me about my essays.", "instruction"),
        ("no car, so I walk or cycle everywhere", "constraint"),
        ("I don't drive, never got round to it.", "constraint"),
        ("Open-plan offices are a hard no for me.", "preference"),
        ("Aisle seat or I'm miserable.", "preference"),
        ("A hot bath helps me unwind after work.", "habit"),
        # ...and what only looks like them
        ("Take care of yourself!", None),
        ("I look after myself better these days.", None),
        ("Let me know if you need help with anything.", None),
        ("There was no room left at the inn.", None),
        ("Give me two minutes.", None),
        ("End the call when you're done.", None),
        ("He'd be a great dad, no doubt.", None),
        ("My uncle is a bit xenophobic, sadly.", None),
        ("I gave up on the puzzle completely.", None),
        ("Don't worry about me, I'm fine.", None),
        ("Keep me posted!", None),
        ("Whenever you need help, let me know.", None),
        ("It was sunny on Monday.", None),
        # what holds on an occasion close at hand holds that once; an allergy or a diet holds anyway
        ("We're looking after the neighbours' cat this weekend.", None),
        ("I'm afraid I can't make it tomorrow.", None),
        ("Please don't call me today.", None),
        ("This pic's from last night, looks like everyone had a blast!", None),
        ("I love pizza. Tonight we're having sushi.", "preference"),
        ("I'm terrified of heights. We're hiking this weekend.", "constraint"),
        ("I'm allergic to cats, so I can't come tonight.", "allergy"),
        ("I always read on Saturdays.", "habit"),
        ("We're on a tight budget this year.", "constraint"),
    ],
)
def test_standing_kinds(text: str, kind: str | None) -> None:
    assert standing_kind(text) == kind


@pytest.mark.parametrize(
    ("query", "is_request"),
    [
        ("What dessert should I bring to the user's party?", True),
        ("Can you suggest a Thai dish for me?", True),
        ("Plan a barbecue menu for me and my friends.", True),
        ("Draft a greeting for the welcome card.", True),
        ("What am I allergic to?", False),
        ("What trips are planned for Lisbon?", False),
        ("What did Melanie buy last week?", False),
        ("How do I deploy the pipeline?", False),
        ("What's a good gift for my sister?", True),
        ("When's a good time to repaint the fence?", True),
        ("Where could we go for lunch on Friday?", True),
        ("Any recommendations for a quiet café?", True),
        ("What did he say was a good idea?", False),
        # anything asked of the assistant for the user
        ("Give me a packing list for a weekend in the hills.", True),
        ("Can you make me a playlist for the drive?", True),
        ("Explain how index funds work.", True),
        ("Found a cheap flat near the station, thoughts?", True),
        ("Here's my speech for Saturday, what do you think?", True),
        ("What did Tom think about the concert?", False),
        ("Did you give Anna the book back?", False),
        ("What did she tell you about the trip?", False),
        ("Can you remind me what I said about the plumber?", False),
        ("Tell me what I planted last spring.", False),
        ("List the books I finished this year.", False),
    ],
)
def test_requests_for_the_user(query: str, is_request: bool) -> None:
    assert is_request_for_user(query) is is_request


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When should the plumber come?", True),
        ("What time should we book the table?", True),
        ("How should I plan the workshop agenda?", True),
        ("Which restaurant should we book?", False),
        ("How should I get to Paris?", False),
    ],
)
def test_requests_whose_answer_is_a_time(query: str, asks: bool) -> None:
    assert asks_for_time(query) is asks


@pytest.mark.parametrize(
    ("text", "bears"),
    [
        ("I work night shifts, so I sleep during the day.", True),
        ("I pray five times a day.", True),
        ("The baby naps after lunch.", True),
        ("I'm allergic to penicillin.", False),
        ("I use a wheelchair.", False),
    ],
)
def test_standing_facts_bearing_on_time(text: str, bears: bool) -> None:
    assert bears_on_time(text) is bears


def test_a_question_finds_the_slot_whatever_the_subject_length() -> None:
    from deepcontext.retrieve.asked import asked_slot
    from deepcontext.services.updates import SLOTS_KEY, slot_metadata

    def keys(fact: str) -> str:
        return str(slot_metadata(find_slots(fact, "User"))[SLOTS_KEY])

    asked = asked_slot("Where does Mary Jones work?")
    assert asked is not None and asked.matches(keys("Mary Jones works at Globex as a nurse."))
    asked = asked_slot("Where does Sister live?")
    assert asked is not None and not asked.matches(keys("User's sister lives in Berlin."))  # another subject
    # "my son" is the user's son, keyed by the user's name once it is known
    asked = asked_slot("Which school does my son go to?", "Tomas")
    assert asked is not None and asked.matches(keys("User's son goes to Northgate High."))
    assert asked.matches(str(slot_metadata(find_slots("Tomas's son goes to Northgate High.", "Tomas"))[SLOTS_KEY]))
    assert not asked.matches(keys("User's daughter goes to Northgate High."))


def test_a_move_out_of_one_home_and_into_another_ends_one_and_states_the_other() -> None:
    slots = find_slots("User and others moved out of the Bristol flat and into a house in Bath.")
    assert [(x.attribute, x.value, x.ended) for x in slots] == [("residence", "bristol flat", True), ("residence", "bath", False)]
