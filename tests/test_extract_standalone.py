"""Facts that stand alone and read well: every rewrite rule of the offline extractor (first and second
person, verbs joined by "and", we / our, reported speech, pronouns from earlier turns, dates made
absolute, lists, the user's display name), each output checked by the grammar checker; the checker
itself; the labelled set's scorer."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from deepcontext.extract.grammar import defects, unresolved
from deepcontext.extract.interface import ExtractionContext, ExtractionResult, MessageIn
from deepcontext.extract.rules import RuleExtractor
from deepcontext_bench.extraction import load_gold, run_extraction, states

SAID = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)  # a Monday
EX = RuleExtractor()


def extract(
    *turns: str | tuple[str, str], user_name: str | None = None, said: datetime = SAID, earlier: list[MessageIn] | None = None
) -> ExtractionResult:
    msgs = []
    for i, t in enumerate(turns):
        role, content = t if isinstance(t, tuple) else ("user", t)
        msgs.append(MessageIn(index=i, role=role, content=content, said_at=said))
    ctx = ExtractionContext(user_id="u", conversation_id="c", now=said, user_name=user_name, recent_messages=earlier or [])
    return EX.extract_sync(msgs, ctx)


def texts(res: ExtractionResult) -> list[str]:
    out = [f.text for f in res.facts]
    for t in out:
        assert defects(t) == [], (t, defects(t))
        assert unresolved(t) == [], (t, unresolved(t))
    return out


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # the subject and its verb; and the verbs joined to it
        ("I live by the sea and work from home.", "Sam lives by the sea and works from home."),
        # an adverb before the verb is no verb; emoji stay in the turn, never in a fact
        (
            "My neighbour's dog barked all night, I barely slept.",
            "The dog of Sam's neighbour barked all night, Sam barely slept.",
        ),
        ("I love long walks along the river with my dog 🐕.", "Sam loves long walks along the river with their dog."),
        ("I play guitar and sing in a choir.", "Sam plays guitar and sings in a choir."),
        ("I'm tired and want a holiday.", "Sam is tired and wants a holiday."),
        ("I have a dog and love long walks.", "Sam has a dog and loves long walks."),
        ("I cook at home and never order takeaway.", "Sam cooks at home and never orders takeaway."),
        ("I need a new laptop for work.", "Sam needs a new laptop for work."),
        ("I watch Netflix and study Spanish every evening.", "Sam watches Netflix and studies Spanish every evening."),
        # nouns after "and" and second verbs of an infinitive stay as they are
        ("I like tea and coffee.", "Sam likes tea and coffee."),
        ("I have a cat and dog.", "Sam has a cat and dog."),
        ("I like to read and write short stories.", "Sam likes to read and write short stories."),
        ("I used to live and work in Paris.", "Sam used to live and work in Paris."),
        ("Jo and I live in Porto and work at Acme.", "Jo and Sam live in Porto and work at Acme."),
        ("I am happy I could share my notes and help out.", "Sam is happy they could share their notes and help out."),
        (
            "I love sci-fi movies, they are a great escape and get my mind going.",
            "Sam loves sci-fi movies, they are a great escape and get Sam's mind going.",
        ),
        (
            "I have some things with sentimental value, like my grandmother's bowl.",
            "Sam has some things with sentimental value, like the bowl of their grandmother.",
        ),
        # past forms that look like the base
        ("The best book I read last year was Dune.", "The best book Sam read in 2024 was Dune."),
        # contractions and modals
        ("I've been to Japan twice.", "Sam has been to Japan twice."),
        ("I'll start my new job at Stripe next Monday.", "Sam will start their new job at Stripe on 2025-03-17."),
        ("I don't eat meat and I don't drink alcohol.", "Sam doesn't eat meat and they don't drink alcohol."),
        ("I can swim and ski.", "Sam can swim and ski."),
        # dates written absolutely, with the preposition they need
        ("Yesterday I went to Madrid and met an old friend.", "On 2025-03-09 Sam went to Madrid and met an old friend."),
        ("I moved to Berlin last month.", "Sam moved to Berlin in February 2025."),
        ("I was sick last week.", "Sam was sick in the week of 2025-03-03."),
        ("We hiked in the Alps last weekend.", "Sam and others hiked in the Alps on the weekend of 2025-03-08."),
        ("I started yoga two days ago.", "Sam started yoga on 2025-03-08."),
        ("I have lived here since last year.", "Sam has lived here since 2024."),
        ("I slept badly last night.", "Sam slept badly on the night of 2025-03-09."),
        ("I'm running the Berlin Marathon in September next year.", "Sam is running the Berlin Marathon in September 2026."),
        ("Spent the whole Saturday painting the kitchen.", "Sam spent the whole Saturday (2025-03-08) painting the kitchen."),
        # we / our: the speaker's team at work, the speaker's otherwise
        (
            "We are migrating our database to PostgreSQL next month.",
            "Sam's team is migrating their database to PostgreSQL in April 2025.",
        ),
        ("Our wedding anniversary is on June 12, remind me a week before.", "Sam's wedding anniversary is on June 12."),
        ("We're flying to Tokyo on March 14.", "Sam and others are flying to Tokyo on March 14."),
        # reported speech becomes the fact, in the reporter's voice
        (
            "Maya said: we are moving the analytics tables from PostgreSQL to DuckDB next month.",
            "Maya's team is moving the analytics tables from PostgreSQL to DuckDB in April 2025.",
        ),
        ("Maya said: I have two kids.", "Maya has two kids."),
        ("My boss said that the budget was cut by 20 percent.", "The budget was cut by 20 percent."),
        ("According to Lisa, the new office opens in May.", "The new office opens in May 2025."),
        # a list under a header is one memory
        (
            "Things I always keep at home:\n- oat milk\n- dark chocolate\n- green tea",
            "Things Sam always keeps at home: oat milk, dark chocolate, green tea.",
        ),
    ],
)
def test_each_rewrite_reads_well(said: str, expected: str) -> None:
    assert texts(extract(said, user_name="Sam")) == [expected]


def test_pronouns_take_the_referent_of_the_turns_before() -> None:
    res = extract("Maya maintains our event pipeline. It runs on Apache Kafka and writes to PostgreSQL.", user_name="Sam")
    assert texts(res) == [
        "Maya maintains the event pipeline of Sam's team.",
        "The event pipeline runs on Apache Kafka and writes to PostgreSQL.",
    ]
    res = extract(
        "My sister Jo got a new job.",
        ("assistant", "Congrats to her!"),
        "She starts at Initech on Monday.",
        "Her boss seems nice.",
        user_name="Sam",
    )
    assert texts(res)[1:] == ["Jo starts at Initech on 2025-03-17.", "Jo's boss seems nice."]
    # the referent in an earlier add: read from the conversation's last turns
    earlier = [MessageIn(index=-1, role="user", content="We adopted a dog named Biscuit.", said_at=SAID)]
    assert EX.wants_context([MessageIn(index=0, role="user", content="She's a beagle.", said_at=SAID)])
    res = extract("She's a three-year-old beagle.", user_name="Sam", earlier=earlier)
    assert texts(res) == ["Biscuit is a three-year-old beagle."]
    # no referent anywhere: no memory rather than a dangling "It"
    assert texts(extract("It runs on Kafka and writes to PostgreSQL every night.")) == []


def test_occurred_at_is_the_resolved_time_and_the_turn_keeps_the_words() -> None:
    res = extract("Yesterday the nightly job failed because the disk filled up.")
    [fact] = res.facts
    assert fact.text == "On 2025-03-09 the nightly job failed because the disk filled up."
    assert fact.occurred_at == datetime(2025, 3, 9, tzinfo=UTC)
    assert fact.metadata["time_expression"] == "Yesterday"


def test_assistant_premises_and_the_display_name() -> None:
    res = extract(
        "What should I cook tonight?",
        ("assistant", "Since you're vegetarian and you love spicy food, how about a chickpea curry?"),
        user_name="Nora",
    )
    assert texts(res) == ["Nora is vegetarian.", "Nora loves spicy food."]  # the diet can change on its own
    assert texts(extract("I live in Lisbon")) == ["The user lives in Lisbon."]
    assert texts(extract("I live in Lisbon", user_name="Ana")) == ["Ana lives in Lisbon."]


def test_chinese_relative_dates_become_dates() -> None:
    res = extract("我昨天去了杭州看朋友。", user_name="Wei")
    assert [f.text for f in res.facts] == ["Wei 2025年3月9日去了杭州看朋友。"]
    assert unresolved(res.facts[0].text) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Ana lives in Lisbon and work at Globex.", "agreement"),
        ("Ana work at Globex.", "agreement"),
        ("On on 2025-03-09 Ana went to Madrid.", "doubled"),
        ("Ana has lived here since in 2024.", "prepositions"),
        ("User said: our wedding anniversary is on June 12.", "quote-wrapper"),
        ("The user said: our wedding anniversary is on June 12.", "quote-wrapper"),
        ("Ana's's car is red.", "possessive"),
        ("Ana ate a apple.", "article"),
        ("ana lives in Lisbon.", "capital"),
        ("Ana lives in Lisbon", "end"),
        ("Priya's team's servers went down.", "possessive-chain"),
        ("User broke User's wrist.", "self-possessive"),
        ("Sam is happy Sam could share the notes.", "repeated-subject"),
        ("The user broke the user's wrist.", "self-possessive"),
        ("The user swam in the lake (2024-05-01); the user lost a towel at the lake (2024-06-02).", "glued"),
        ("Ana loves her dog 🐕.", "emoji"),
    ],
)
def test_the_checker_finds_each_defect(text: str, found: str) -> None:
    assert any(d.startswith(found) for d in defects(text)), defects(text)


@pytest.mark.parametrize(
    "text",
    [
        "Jo and Ana live in Porto.",
        "The rent is 900 pounds a month.",
        "Tess still needs to buy a suit.",
        "Ana has a cat and dog.",
        "Never deploy on Fridays.",
        "Ana wants to go home and cook dinner.",
        "Sam is happy they could share their notes.",
        "Sam told Jo that Sam would call.",  # someone else named between: "they" could mean Jo
        "The user's sister visited the user's parents.",
    ],
)
def test_the_checker_passes_good_text(text: str) -> None:
    assert defects(text) == []


def test_unresolved_finds_pronouns_and_relative_dates() -> None:
    assert unresolved("It runs on Kafka.") == ["pronoun"]
    assert unresolved("Maya maintains our pipeline.") == ["pronoun"]
    assert unresolved("Yesterday Ana went to Madrid.") == ["relative-date"]
    assert unresolved("Ana flies to Oslo in three weeks.") == ["relative-date"]
    assert unresolved("Wei昨天去了杭州。") == ["relative-date"]
    assert unresolved("On 2025-03-09 Ana went to Madrid.") == []


def test_matching_rule_is_entailment_by_key_words() -> None:
    assert states("Jo starts at Initech on 2025-06-16.", ["Jo", "Initech", "2025-06-16"])
    assert states("Tom carries two EpiPens in Tom's backpack.", ["Tom", "EpiPen", "backpack"])  # stems
    assert not states("Jo starts at Initech on 2025-06-17.", ["Jo", "Initech", "2025-06-16"])  # values exact
    assert states("Sam prefers Neovim.", ["Sam", "prefer|like", "Neovim"])  # alternatives
    assert states("Wei 2025年4月14日去了杭州。", ["Wei", "杭州"])


def test_the_labelled_set_scores_the_extractor(tmp_path) -> None:
    gold = load_gold()
    assert sum(len(c["turns"]) for c in gold) >= 150
    assert {c["topic"] for c in gold} >= {"everyday", "work", "health", "travel", "family", "plans", "opinions", "procedures"}
    report = run_extraction(EX, gold)
    # a floor a broken pipeline would miss; the targets are held by `deepcontext bench extraction`
    assert report.precision > 0.6 and report.recall > 0.6
    # a set of one conversation whose facts nothing states scores zero recall
    path = tmp_path / "one.jsonl"
    path.write_text(
        '{"id": "x", "said_at": "2025-01-01T00:00:00+00:00", "turns": [{"role": "user", '
        '"content": "I live in Lisbon."}], "facts": [{"turn": 0, "keys": ["Oslo"]}]}\n',
        encoding="utf-8",
    )
    small = run_extraction(EX, load_gold(path))
    assert (small.facts, small.memories, small.recall, small.precision) == (1, 1, 0.0, 0.0)


def test_a_memory_about_the_wrong_person_is_counted(tmp_path) -> None:
    def report(mine: str, theirs: str):
        path = tmp_path / "subjects.jsonl"
        conv = {
            "id": "s",
            "said_at": "2025-07-01T00:00:00+00:00",
            "user_name": "Rosa",
            "turns": [
                {"role": "user", "content": "My brother moved to Utrecht."},
                {"role": "user", "content": "I moved to Cork."},
            ],
            "facts": [
                {"turn": 0, "keys": ["moved", "Utrecht"], "subject": theirs},
                {"turn": 1, "keys": ["Rosa", "moved", "Cork"], "subject": mine},
            ],
        }
        path.write_text(json.dumps(conv) + "\n", encoding="utf-8")
        return run_extraction(EX, load_gold(path))

    right = report("user", "brother")
    assert (right.recall, right.wrong_subject) == (1.0, 0)
    # the same memories read against labels that swap the people: both are said of the wrong one
    swapped = report("brother", "user")
    assert swapped.wrong_subject == 2 and len(swapped.misses["wrong subject"]) == 2


def test_a_pronoun_takes_the_last_person_named_and_instructions_stay() -> None:
    res = extract(
        "My sister Lena lives in Berlin and works as a nurse.",
        "I have a dog named Pixel. He is a very energetic border collie.",
        "Maya maintains our event pipeline.",
        "I am allergic to peanuts, so please never suggest recipes with peanut butter.",
        user_name="Maya",
    )
    assert texts(res) == [
        # two single-valued facts: two memories, so a later move leaves the job alone
        "Maya's sister Lena lives in Berlin.",
        "Maya's sister Lena works as a nurse.",
        "Maya has a dog named Pixel.",
        "Pixel is a very energetic border collie.",
        "Maya maintains their team's event pipeline.",
        "Maya is allergic to peanuts, so please never suggest recipes with peanut butter.",
    ]
    # two people named: "she" is anyone's guess, so no memory
    assert texts(extract("I met Sarah and Jo at the gym.", "She is a personal trainer.")) == [
        "The user met Sarah and Jo at the gym."
    ]


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        # "It is / has ...": the thing the sentence before named, with or without a determiner of its own
        (["I bought a Subaru last week. It has four-wheel drive."], "The Subaru has four-wheel drive."),
        (
            ["We adopted a puppy last spring. It's a golden retriever named Biscuit."],
            "The puppy is a golden retriever named Biscuit.",
        ),
        (
            ["We maintain an event pipeline.", "It is critical for the billing team."],
            "The event pipeline is critical for the billing team.",
        ),
        # a plural "we" counts as a subject; one noun is enough to say who someone is
        (["We relocated to Denver in May."], "Sam and others relocated to Denver in May 2024."),
        (["I'm a pescatarian."], "Sam is a pescatarian."),
        # chat spelling and fillers; "No" before a noun is no interjection
        (["im a pescatarian btw"], "Sam is a pescatarian."),
        (["No shellfish, I'm allergic to shrimp."], "No shellfish, Sam is allergic to shrimp."),
        (["Bought a Kia Niro last weekend.", "It has a heat pump."], "The Kia Niro has a heat pump."),
    ],
)
def test_it_we_and_identity_sentences_give_facts(turns: list[str], expected: str) -> None:
    assert expected in texts(extract(*turns, user_name="Sam"))


@pytest.mark.parametrize(
    "second",
    [
        "It is raining a lot in Seattle these days.",  # weather
        "It is hard to keep up with the reading.",  # a clause moved to the end
        "It's been a long week.",
        "It is really good.",  # nothing said of the thing beyond a judgement
        "It is her first job out of college.",  # would leave "her" unnamed
        "It was the best trip of my life.",  # an experience, not the thing named
        "It is a great way to relax after a long day.",  # the club, or joining it?
    ],
)
def test_it_without_a_thing_gives_no_fact(second: str) -> None:
    facts = texts(extract("I joined a book club near Porto.", second, user_name="Sam"))
    assert len(facts) == 1, facts


def test_it_after_two_things_named_is_left_alone() -> None:
    """ "a new job at Stripe" then "It's a payments company": the job or Stripe, so neither; and a
    thing that is not what the sentence before is about ("my feelings") is no referent either."""
    facts = texts(extract("I just got a new job at Stripe.", "It's a payments company in Dublin.", user_name="Sam"))
    assert facts == ["Sam just got a new job at Stripe."]
    facts = texts(
        extract("Painting's a fun way to express my feelings.", "It's a great way to unwind after work.", user_name="Sam")
    )
    assert facts == ["Painting's a fun way to express Sam's feelings."]


def test_what_the_speaker_always_does_is_no_procedure() -> None:
    [fact] = extract("Things I always keep at home:\n- oat milk\n- dark chocolate", user_name="Sam").facts
    assert (fact.text, fact.memory_type.value) == ("Things Sam always keeps at home: oat milk, dark chocolate.", "semantic")
    [fact] = extract("Always back up the database before a migration.").facts
    assert fact.memory_type.value == "procedural"


def test_we_never_includes_whoever_the_speaker_talks_to() -> None:
    msgs = [
        MessageIn(index=0, role="user", content="Hey Mel! How did the kids take it?", said_at=SAID, name="Caroline"),
        MessageIn(index=1, role="user", content="We were all scared when my son got hurt.", said_at=SAID, name="Mel"),
        MessageIn(index=2, role="user", content="My sister Jo came over. We went hiking in the Alps.", said_at=SAID, name="Mel"),
    ]
    res = EX.extract_sync(msgs, ExtractionContext(user_id="u", conversation_id="c", now=SAID))
    assert texts(res) == [
        "Mel and others were all scared when Mel's son got hurt.",
        "Mel's sister Jo came over.",
        "Mel and Jo went hiking in the Alps.",
    ]


def test_chat_verbs_agree() -> None:
    assert texts(extract("I wanna keep making a difference.", "I gotta finish the slides.", user_name="Sam")) == [
        "Sam wants to keep making a difference.",
        "Sam has to finish the slides.",
    ]
