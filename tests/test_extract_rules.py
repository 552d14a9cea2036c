"""The offline rule-based extractor (deepcontext.extract.rules and the modules it runs)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from deepcontext.errors import ValidationError
from deepcontext.extract.entities import find_entities
from deepcontext.extract.facts import importance_of, is_procedural, is_question
from deepcontext.extract.interface import ExtractionContext, ExtractionResult, MessageIn
from deepcontext.extract.pipeline import RulePipeline
from deepcontext.extract.relations import find_relations, gerund
from deepcontext.extract.rewrite import (
    rewrite_first_person,
    rewrite_second_person,
    third_person,
)
from deepcontext.extract.rules import RuleExtractor
from deepcontext.extract.sentences import clean_text, split_sentences
from deepcontext.types import EntityType, MemoryType

SAID = datetime(2023, 5, 10, 14, 30, tzinfo=UTC)  # a Wednesday
EX = RuleExtractor()
T = EntityType


def msgs(*items: tuple[str, str] | tuple[str, str, str | None], said_at: datetime = SAID) -> list[MessageIn]:
    out = []
    for i, item in enumerate(items):
        role, content = item[0], item[1]
        name = item[2] if len(item) > 2 else None
        out.append(MessageIn(index=i, role=role, content=content, said_at=said_at + timedelta(minutes=i), name=name))
    return out


def ctx(**kw: object) -> ExtractionContext:
    return ExtractionContext(user_id="u1", conversation_id="c1", now=SAID, **kw)  # type: ignore[arg-type]


def run(*items: tuple[str, str] | tuple[str, str, str | None], **kw: object) -> ExtractionResult:
    return EX.extract_sync(msgs(*items), ctx(**kw))


def one(text: str, name: str | None = None, role: str = "user") -> ExtractionResult:
    return run((role, text, name))


def texts(res: ExtractionResult) -> list[str]:
    return [f.text for f in res.facts]


def ents(res: ExtractionResult) -> dict[str, EntityType]:
    return {e.name: e.entity_type for e in res.entities}


def rels(res: ExtractionResult) -> set[tuple[str, str, str]]:
    return {(r.source, r.relation, r.target) for r in res.relationships}


# --- rewriting into third person ---------------------------------------------------------------------------


def test_first_person_rewrite_unnamed_and_named() -> None:
    s = "I'm a Python developer working at Acme Corp"
    assert texts(one(s)) == ["The user is a Python developer working at Acme Corp."]
    assert texts(one(s, "Caroline")) == ["Caroline is a Python developer working at Acme Corp."]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("My sister lives in Boston.", "Caroline's sister lives in Boston."),
        ("I have two kids and a cat.", "Caroline has two kids and a cat."),
        ("I don't eat meat or fish.", "Caroline doesn't eat meat or fish."),
        ("I was a nurse for ten years.", "Caroline was a nurse for ten years."),
        ("I've been learning Spanish on Duolingo.", "Caroline has been learning Spanish on Duolingo."),
        ("I went to Lisbon with my husband.", "Caroline went to Lisbon with their husband."),
        ("My parents gave me a guitar for my birthday.", "Caroline's parents gave Caroline a guitar for Caroline's birthday."),
        ("The blue bike in the garage is mine.", "The blue bike in the garage is Caroline's."),
        ("I taught myself to play the piano.", "Caroline taught themself to play the piano."),
        ("I really love hiking and I also play guitar.", "Caroline really loves hiking and they also play guitar."),
        ("I study marine biology at UCSD.", "Caroline studies marine biology at UCSD."),
        ("I watch Netflix every evening.", "Caroline watches Netflix every evening."),
        ("I'll start my new job at Stripe next Monday.", "Caroline will start their new job at Stripe on 2023-05-15."),
        ("I'd never been to Asia before this trip.", "Caroline had never been to Asia before this trip."),
        ("My wife and I are moving to Denver.", "Caroline's wife and Caroline are moving to Denver."),
        ("When I was a kid, I lived in Ohio.", "When Caroline was a kid, Caroline lived in Ohio."),
        ("i love pizza with pineapple", "Caroline loves pizza with pineapple."),
    ],
)
def test_verbs_agree_and_the_rest_stays_verbatim(said: str, expected: str) -> None:
    assert texts(one(said, "Caroline")) == [expected]


def test_rewrite_functions_directly() -> None:
    assert rewrite_first_person("I can't stand cilantro", "Ana") == ("Ana can't stand cilantro", 1)
    assert rewrite_first_person("World War I ended in 1918", "Ana") == ("World War I ended in 1918", 0)
    assert rewrite_first_person("e.g. i.e. nothing", "Ana")[1] == 0
    assert rewrite_first_person("Sarah and I are best friends", "Ana")[0] == "Sarah and Ana are best friends"
    assert rewrite_second_person("you're a teacher", "User")[0] == "User is a teacher"
    assert rewrite_second_person("I'll remind you tomorrow", "User")[0] == "I'll remind User tomorrow"
    assert [third_person(v) for v in ("go", "watch", "study", "play", "have", "fix", "LOVE")] == [
        "goes",
        "watches",
        "studies",
        "plays",
        "has",
        "fixes",
        "LOVES",
    ]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("I'm Maya, a data engineer at Stripe", "Maya is a data engineer at Stripe"),
        ("I'm Maya and I love hiking", "Maya loves hiking"),
        ("My name is Maya and I live in Lisbon", "Maya lives in Lisbon"),
        ("I'm Maya's sister", "Maya is Maya's sister"),  # not a self-introduction: kept as said
        ("I'm Ana, a data engineer", "Maya is Ana, a data engineer"),  # another name: kept
    ],
)
def test_introducing_oneself_under_the_known_name_is_not_a_tautology(said: str, expected: str) -> None:
    assert rewrite_first_person(said, "Maya")[0] == expected


def test_assistant_second_person_about_the_user() -> None:
    res = run(
        ("user", "I switched my editor theme last week.", "Dana"),
        ("assistant", "You mentioned that you prefer dark mode, so I'll keep that in mind."),
    )
    assert "Dana prefers dark mode." in texts(res)
    fact = next(f for f in res.facts if f.text == "Dana prefers dark mode.")
    assert fact.source_indices == [1]
    assert fact.confidence == pytest.approx(0.7)
    assert ("Dana", "prefers", "dark mode") in rels(res)


def test_assistant_talk_about_the_user_without_a_name_is_user() -> None:
    res = one("Got it, you're vegetarian and you live in Porto.", role="assistant")
    assert texts(res) == ["The user is vegetarian.", "The user lives in Porto."]
    assert ("User", "lives_in", "Porto") in rels(res)


@pytest.mark.parametrize(
    "said",
    [
        "That's great! It sounds like you have a busy week. Let me know if you need anything.",
        "You should try the Pomodoro technique to stay focused at work.",
        "You could use a virtual environment for each project you build.",
        "I'm happy to help with that! Here is a summary of the article you sent.",
        "You're welcome! Have a wonderful trip to Japan.",
        "Great question. Python is a popular language for data science and scripting.",
        "Your plan sounds really solid and well thought through.",
    ],
)
def test_assistant_filler_and_advice_produce_nothing(said: str) -> None:
    res = one(said, role="assistant")
    assert res.facts == [] and res.entities == [] and res.relationships == []


# --- what gives no fact ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Nice to meet you!",
        "haha ok",
        "How are you?",
        "That's great!",
        "Thanks so much, that was really helpful!",
        "Good morning! Hope you slept well.",
        "Sure, sounds good.",
        "lol same",
        "Have a great weekend!",
        "I'm so tired.",
        "It was so much fun.",
        "Can you help me write a poem about cats?",
        "Tell me a joke about programmers.",
        "Please summarize this article for me.",
        "What do you think about Rust?",
        "Do you know any good restaurants in Lisbon?",
        "where should I go for dinner tonight",
        "Have you ever been to Paris?",
    ],
)
def test_chitchat_questions_and_requests_give_nothing(said: str) -> None:
    res = one(said)
    assert res.facts == [], texts(res)
    assert res.entities == [], ents(res)


def test_question_detection() -> None:
    assert is_question("Is it true that you live in Paris?")
    assert is_question("what time is it")
    assert is_question("do you like jazz")
    assert not is_question("Do not commit secrets to git.")
    assert not is_question("When I was a kid, I lived in Ohio.")
    assert not is_question("Will is my brother.")


def test_tag_question_keeps_the_statement() -> None:
    assert texts(one("I live in Lisbon now, you?", "Ana")) == ["Ana lives in Lisbon now."]


def test_leading_interjections_are_dropped() -> None:
    assert texts(one("Haha yeah, so I moved to Berlin last month.", "Ana")) == ["Ana moved to Berlin in April 2023."]
    assert texts(one("Thanks! By the way, I adopted a cat called Luna.", "Ana")) == ["Ana adopted a cat called Luna."]


@pytest.mark.parametrize("content", ["", "   ", "\n\n\t ", "...", "!!!", "👍", "ok"])
def test_empty_and_trivial_content(content: str) -> None:
    res = one(content)
    assert res == ExtractionResult()


def test_system_and_tool_messages_are_skipped() -> None:
    res = run(
        ("system", "The user is a Python developer who lives in Berlin."),
        ("tool", "I found 3 results: Acme Corp is hiring in Berlin."),
    )
    assert res == ExtractionResult()


# --- types ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "To deploy, run make release.",
        "Always run the tests before pushing.",
        "Never commit secrets to the repository.",
        "First install Docker, then run docker compose up.",
        "Make sure the database is backed up before you migrate.",
        "If the build fails, check the logs in Grafana.",
        "Preheat the oven to 200 degrees and bake for 20 minutes.",
        "Don't use tabs in Python files.",
    ],
)
def test_procedural(said: str) -> None:
    res = one(said)
    assert len(res.facts) == 1, texts(res)
    assert res.facts[0].memory_type is MemoryType.PROCEDURAL


def test_step_list_items_are_procedural() -> None:
    res = one("1. Install the CLI\n2. Run deepcontext init\n3. Restart the server")
    assert [f.memory_type for f in res.facts] == [MemoryType.PROCEDURAL] * 3
    assert texts(res) == ["Install the CLI.", "Run deepcontext init.", "Restart the server."]


def test_procedural_detector_does_not_fire_on_statements() -> None:
    assert not is_procedural("I always drink coffee in the morning.")
    assert not is_procedural("Caroline runs a bakery in Lisbon.")
    assert not is_procedural("My sister works at Google.")


@pytest.mark.parametrize(
    ("said", "mtype"),
    [
        ("Yesterday I went hiking with my sister.", MemoryType.EPISODIC),
        ("I visited the Louvre when I was in Paris.", MemoryType.EPISODIC),
        ("I just finished my first marathon!", MemoryType.EPISODIC),
        ("I'm flying to Tokyo next Friday for a conference.", MemoryType.EPISODIC),
        ("I was at the dentist all morning.", MemoryType.EPISODIC),
        ("I work as a nurse at the city hospital.", MemoryType.SEMANTIC),
        ("I love hiking in the mountains.", MemoryType.SEMANTIC),
        ("I have a dog named Max.", MemoryType.SEMANTIC),
        ("I usually go running before work.", MemoryType.SEMANTIC),
        ("I've been vegetarian since 2015.", MemoryType.SEMANTIC),
        ("I was born in Ohio in 1990.", MemoryType.SEMANTIC),
        ("I think remote work is better for focus.", MemoryType.SEMANTIC),
    ],
)
def test_episodic_and_semantic(said: str, mtype: MemoryType) -> None:
    res = one(said)
    assert len(res.facts) == 1, texts(res)
    assert res.facts[0].memory_type is mtype


# --- occurred_at ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Yesterday I went hiking with my sister.", datetime(2023, 5, 9, tzinfo=UTC)),
        ("Last Friday I quit my job at the bank.", datetime(2023, 5, 5, tzinfo=UTC)),
        ("I'm flying to Tokyo next Friday for a conference.", datetime(2023, 5, 12, tzinfo=UTC)),
        ("I moved to Berlin on 8 May 2023.", datetime(2023, 5, 8, tzinfo=UTC)),
        ("I adopted Luna three weeks ago.", datetime(2023, 4, 19, tzinfo=UTC)),
        ("I was born in Ohio in 1990.", datetime(1990, 1, 1, tzinfo=UTC)),
        ("I love hiking in the mountains.", None),
    ],
)
def test_occurred_at_is_resolved_against_said_at(said: str, expected: datetime | None) -> None:
    res = one(said)
    assert len(res.facts) == 1
    assert res.facts[0].occurred_at == expected
    if expected is not None:
        assert res.facts[0].metadata["time_expression"]


def test_occurred_at_uses_each_message_time() -> None:
    items = [
        MessageIn(index=0, role="user", content="Yesterday I ran my first 10k race.", said_at=datetime(2023, 1, 2, tzinfo=UTC)),
        MessageIn(
            index=1, role="user", content="Yesterday I signed up for a marathon.", said_at=datetime(2023, 3, 1, tzinfo=UTC)
        ),
    ]
    res = EX.extract_sync(items, ctx())
    assert [f.occurred_at for f in res.facts] == [datetime(2023, 1, 1, tzinfo=UTC), datetime(2023, 2, 28, tzinfo=UTC)]


# --- entities ---------------------------------------------------------------------------------------------------


def test_entities_of_an_identity_statement() -> None:
    res = one("I'm a Python developer working at Acme Corp in New York City.", "Caroline")
    e = ents(res)
    assert e["Caroline"] is T.PERSON
    assert e["Python"] is T.TECHNOLOGY
    assert e["Acme Corp"] is T.ORGANIZATION
    assert e["New York City"] is T.LOCATION
    assert "New York" not in e and "York" not in e and "City" not in e
    assert res.facts[0].entities[:4] == ["Caroline", "Python", "Acme Corp", "New York City"]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Yesterday I met Sarah at Starbucks.", {"User": T.PERSON, "Sarah": T.PERSON, "Starbucks": T.ORGANIZATION}),
        (
            "Nice weather today, so I went to Central Park with Tom.",
            {"User": T.PERSON, "Central Park": T.LOCATION, "Tom": T.PERSON},
        ),
        ("Last Monday my friend Zoltan visited us in Budapest.", {"User": T.PERSON, "Zoltan": T.PERSON, "Budapest": T.LOCATION}),
        (
            "Thanks, I now use Visual Studio Code with postgresql and kubernetes.",
            {"User": T.PERSON, "Visual Studio Code": T.TECHNOLOGY, "PostgreSQL": T.TECHNOLOGY, "Kubernetes": T.TECHNOLOGY},
        ),
        (
            "Sure, I studied at the University of Texas at Austin.",
            {"User": T.PERSON, "University of Texas": T.ORGANIZATION, "Austin": T.LOCATION},
        ),
        (
            "My dog Max and I walked to Lake Tahoe on 8 May 2023.",
            {"User": T.PERSON, "Max": T.OTHER, "Lake Tahoe": T.LOCATION, "8 May 2023": T.DATE},
        ),
        ("I started working at Nimbus Labs in 2019.", {"User": T.PERSON, "Nimbus Labs": T.ORGANIZATION, "2019": T.DATE}),
        ("I went to Coachella Festival with Dr. Lee.", {"User": T.PERSON, "Coachella Festival": T.EVENT, "Dr. Lee": T.PERSON}),
    ],
)
def test_entity_sets(said: str, expected: dict[str, EntityType]) -> None:
    assert ents(one(said)) == expected


@pytest.mark.parametrize(
    "said",
    [
        "Yesterday I cleaned the whole apartment and did laundry.",
        "Nice! I finally finished reading that book about gardening.",
        "Thanks, I really appreciate the help with my resume.",
        "Last week I was sick and stayed in bed.",
        "Sure, I can bring snacks and drinks to the party.",
        "My mom called me on Sunday about the holidays in December.",
        "Honestly I think we should just relax this weekend.",
    ],
)
def test_no_spurious_entities(said: str) -> None:
    got = set(ents(one(said)))
    assert got <= {"User"}, got
    for bad in ("My", "Yesterday", "Nice", "Thanks", "I", "Last", "Sure", "Sunday", "December", "Mom", "Honestly"):
        assert bad not in got


def test_lower_case_words_are_not_entities() -> None:
    res = one("i moved to a small town near the coast and i work at a bakery now")
    assert set(ents(res)) == {"User"}


def test_ambiguous_tech_words_need_context() -> None:
    assert "Go" not in ents(one("Go to the store and buy milk, then call me."))
    e = ents(one("I write most of my services in Go and Rust."))
    assert e.get("Go") is T.TECHNOLOGY and e.get("Rust") is T.TECHNOLOGY


def test_shouting_and_title_case_only_give_gazetteer_entities() -> None:
    assert ents(one("I LOVE PYTHON SO MUCH!!!")) == {"User": T.PERSON, "Python": T.TECHNOLOGY}
    assert ents(one("I Love My New Job At Google")) == {"User": T.PERSON, "Google": T.ORGANIZATION}


def test_known_entities_make_an_initial_name_an_entity() -> None:
    said = "Zorblax helped me move the couch yesterday."
    assert "Zorblax" not in ents(one(said))
    res = run(("user", said), known_entities=["Zorblax"])
    assert "Zorblax" in ents(res)


def test_find_entities_spans_are_exact() -> None:
    text = "Caroline's sister Sarah works at Bank of America in San Francisco."
    spans = find_entities(text, {"caroline": T.PERSON})
    assert [(text[s.start : s.end], s.name, s.type, s.possessive) for s in spans] == [
        ("Caroline", "Caroline", T.PERSON, True),
        ("Sarah", "Sarah", T.PERSON, False),
        ("Bank of America", "Bank of America", T.ORGANIZATION, False),
        ("San Francisco", "San Francisco", T.LOCATION, False),
    ]


def test_pets_named_are_other_with_their_kind() -> None:
    res = one("I have a dog named Max. He is a golden retriever.")
    max_entity = next(e for e in res.entities if e.name == "Max")
    assert max_entity.entity_type is T.OTHER
    assert max_entity.attributes == {"kind": "dog"}
    assert ("User", "has", "Max") in rels(res)
    # "He" in the next sentence is resolved to the one name just introduced
    assert "Max is a golden retriever." in texts(res)


# --- relations --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            "I'm a Python developer working at Acme Corp.",
            {("Ana", "works_as", "Python developer"), ("Ana", "works_at", "Acme Corp")},
        ),
        ("I work for Stripe as a designer.", {("Ana", "works_at", "Stripe")}),
        ("I study biology at Stanford.", {("Ana", "studies_at", "Stanford"), ("Ana", "learns", "biology")}),
        ("I live in Lisbon with my partner.", {("Ana", "lives_in", "Lisbon")}),
        ("I'm originally from Sweden.", {("Ana", "from", "Sweden")}),
        ("I was born in Ohio but grew up in Texas.", {("Ana", "born_in", "Ohio"), ("Ana", "from", "Texas")}),
        ("We moved to Berlin last year.", {("Ana", "moved_to", "Berlin")}),
        ("Last summer I visited Japan and Korea.", {("Ana", "visited", "Japan"), ("Ana", "visited", "Korea")}),
        (
            "I love hiking, swimming and reading.",
            {("Ana", "likes", "hiking"), ("Ana", "likes", "swimming"), ("Ana", "likes", "reading")},
        ),
        ("I really enjoy playing the guitar.", {("Ana", "likes", "playing guitar")}),
        ("I love to cook Italian food.", {("Ana", "likes", "cooking italian food")}),
        ("I hate cilantro.", {("Ana", "dislikes", "cilantro")}),
        ("I don't like horror movies.", {("Ana", "dislikes", "horror movies")}),
        ("I can't stand reality TV.", {("Ana", "dislikes", "reality tv")}),
        ("I prefer tea over coffee.", {("Ana", "prefers", "tea")}),
        ("I'm allergic to peanuts.", {("Ana", "allergic_to", "peanuts")}),
        ("I use VS Code and Neovim for work.", {("Ana", "uses", "VS Code"), ("Ana", "uses", "Neovim")}),
        ("I have a dog named Max.", {("Ana", "has", "Max")}),
        ("I have two kids.", {("Ana", "has", "two kids")}),
        ("I have a son named Leo and a daughter named Mia.", {("Leo", "child_of", "Ana"), ("Mia", "child_of", "Ana")}),
        ("My sister Sarah works at Google.", {("Sarah", "sister_of", "Ana"), ("Sarah", "works_at", "Google")}),
        ("My husband John is a chef.", {("John", "married_to", "Ana"), ("John", "works_as", "chef")}),
        ("Tom is my best friend.", {("Tom", "friend_of", "Ana")}),
        ("I'm married to Priya.", {("Ana", "married_to", "Priya")}),
        ("My colleague Dave and I built the billing service.", {("Dave", "colleague_of", "Ana")}),
        ("I'm a member of the Sierra Club.", {("Ana", "member_of", "Sierra Club")}),
        ("I play the piano and tennis.", {("Ana", "plays", "piano")}),
        ("I speak Spanish and French fluently.", {("Ana", "speaks", "Spanish"), ("Ana", "speaks", "French")}),
        ("I'm learning Japanese on Duolingo.", {("Ana", "learns", "Japanese")}),
        ("My favorite band is Radiohead.", {("Ana", "prefers", "Radiohead")}),
    ],
)
def test_relations(said: str, expected: set[tuple[str, str, str]]) -> None:
    got = rels(one(said, "Ana"))
    assert expected <= got, got


@pytest.mark.parametrize(
    "said",
    [
        "I'd love to visit Japan someday.",
        "I want to work at Google one day.",
        "I don't work at Acme anymore.",
        "I used to think Paris was overrated.",
        "She looks like her mom.",
        "I love it!",
        "It feels like home here.",
    ],
)
def test_no_relation_from_wishes_negations_or_vague_objects(said: str) -> None:
    got = {r for r in rels(one(said, "Ana")) if r[1] in ("visited", "works_at", "likes")}
    assert got == set(), got


def test_relation_properties() -> None:
    res = one("I used to live in Boston.", "Ana")
    r = next(r for r in res.relationships if r.relation == "lives_in")
    assert r.properties == {"past": True}
    res = one("I'm moving to Austin next month.", "Ana")
    r = next(r for r in res.relationships if r.relation == "moved_to")
    assert r.properties == {"planned": True}
    res = one("I prefer tea over coffee.", "Ana")
    assert res.relationships[0].properties == {"over": "coffee"}


def test_relation_targets_are_entities() -> None:
    res = one("I love hiking and I work at Acme Corp.", "Ana")
    e = ents(res)
    assert e["hiking"] is T.PREFERENCE
    assert e["Acme Corp"] is T.ORGANIZATION
    for r in res.relationships:
        assert r.source in e and r.target in e


def test_relation_retypes_unknown_targets() -> None:
    res = one("I moved to Zorbistan last year.", "Ana")
    assert ("Ana", "moved_to", "Zorbistan") in rels(res)
    assert ents(res)["Zorbistan"] is T.LOCATION


def test_find_relations_directly() -> None:
    text = "Caroline's friends Sarah and Tom live in Denver."
    spans = find_entities(text, {"caroline": T.PERSON})
    got = {(h.source, h.relation, h.target) for h in find_relations(text, spans, set(text.lower().replace(".", "").split()))}
    assert got == {
        ("Sarah", "friend_of", "Caroline"),
        ("Tom", "friend_of", "Caroline"),
        ("Sarah", "lives_in", "Denver"),
        ("Tom", "lives_in", "Denver"),
    }


def test_gerund() -> None:
    assert [gerund(v) for v in ("cook", "hike", "swim", "run", "visit", "lie", "read", "travel")] == [
        "cooking",
        "hiking",
        "swimming",
        "running",
        "visiting",
        "lying",
        "reading",
        "traveling",
    ]


# --- importance and confidence ------------------------------------------------------------------------------------


def test_importance_orders_what_matters() -> None:
    identity = one("I'm a nurse at Boston General Hospital.").facts[0].importance
    health = one("I'm allergic to peanuts and shellfish.").facts[0].importance
    chitchat = one("The weather was rainy and I was bored all afternoon.").facts[0].importance
    remember = one("Remember that my wife's birthday is on June 3rd.").facts[0].importance
    assert chitchat < 0.4 < identity
    assert chitchat < health
    assert remember >= 0.8
    for v in (identity, health, chitchat, remember):
        assert 0.0 <= v <= 1.0


def test_importance_function_bounds() -> None:
    assert importance_of("lol the weather") == pytest.approx(0.25)
    assert importance_of("x" * 50) == pytest.approx(0.4)
    assert importance_of("Remember: my sister is allergic, never forget, important!", remember=True) <= 0.95


def test_confidence_is_lower_when_hedged() -> None:
    sure = one("I work at Acme Corp.").facts[0]
    hedged = one("I think I might switch to Rust next year.").facts[0]
    assert sure.confidence == pytest.approx(0.8)
    assert hedged.confidence < sure.confidence
    assert hedged.metadata.get("hedged") is True


def test_remember_prefix_is_dropped_from_the_text() -> None:
    res = one("Remember that I'm allergic to peanuts.")
    assert texts(res) == ["The user is allergic to peanuts."]
    assert ("User", "allergic_to", "peanuts") in rels(res)


# --- batches ----------------------------------------------------------------------------------------------------


def test_batch_source_indices_and_dedup() -> None:
    res = run(
        ("user", "Hi! I'm a Python developer at Acme Corp.", "Caroline"),
        ("assistant", "Nice to meet you, Caroline! What do you work on?"),
        ("user", "Mostly data pipelines. Yesterday I went hiking with my sister Sarah.", "Caroline"),
        ("system", "Caroline likes hiking."),
        ("user", "I'm a Python developer at Acme Corp.", "Caroline"),
        ("user", "Sarah lives in Denver with her dog.", "Caroline"),
    )
    facts = {f.text: f.source_indices for f in res.facts}
    assert facts["Caroline is a Python developer at Acme Corp."] == [0, 4]
    assert facts["On 2023-05-09 Caroline went hiking with Caroline's sister Sarah."] == [2]
    assert facts["Sarah lives in Denver with her dog."] == [5]
    by_name = {e.name: e for e in res.entities}
    assert by_name["Caroline"].source_indices == [0, 2, 4]
    assert by_name["Sarah"].source_indices == [2, 5]
    assert by_name["Acme Corp"].source_indices == [0, 4]
    assert len([e for e in res.entities if e.name.lower() == "acme corp"]) == 1
    sources = {(r.source, r.relation, r.target): r.source_indices for r in res.relationships}
    assert sources[("Caroline", "works_at", "Acme Corp")] == [0, 4]
    assert sources[("Sarah", "sister_of", "Caroline")] == [2]
    assert sources[("Sarah", "lives_in", "Denver")] == [5]
    for f in res.facts:
        assert all(0 <= i < 6 for i in f.source_indices)
        assert 3 not in f.source_indices  # the system message


def test_short_name_is_merged_into_the_long_one() -> None:
    res = run(("user", "I work at Acme Corp in Berlin.", "Ana"), ("user", "Acme is hiring two more engineers.", "Ana"))
    names = [e.name for e in res.entities]
    assert "Acme Corp" in names and "Acme" not in names
    acme = next(e for e in res.entities if e.name == "Acme Corp")
    assert acme.source_indices == [0, 1]
    assert any("Acme Corp" in f.entities for f in res.facts if f.source_indices == [1])


def test_assistant_uses_the_users_name_from_the_batch() -> None:
    res = run(("user", "Can you suggest some dinner ideas?", "Marta"), ("assistant", "Since you're vegan, here are some ideas."))
    assert res.facts == [] or all("User" not in f.text for f in res.facts)
    res = run(("user", "Any gift ideas?", "Marta"), ("assistant", "You mentioned you love ceramics and pottery."))
    assert texts(res) == ["Marta loves ceramics and pottery."]


# --- languages and sizes -----------------------------------------------------------------------------------------


def test_chinese_first_person_becomes_a_fact_with_the_speaker() -> None:
    res = one("我是一名Python开发者，昨天我去了北京。你呢？", "小明")
    assert texts(res) == ["小明是一名Python开发者，2023年5月9日小明去了北京。"]
    fact = res.facts[0]
    assert fact.memory_type is MemoryType.EPISODIC
    assert fact.occurred_at == datetime(2023, 5, 9, tzinfo=UTC)
    assert ents(res) == {"小明": T.PERSON, "Python": T.TECHNOLOGY}


@pytest.mark.parametrize(
    "said",
    [
        "你好！谢谢！",
        "你喜欢什么电影？",
        "北京的天气很好。",
        "こんにちは、私はエンジニアです。東京に住んでいます。",
        "안녕하세요, 저는 서울에 살아요.",
        "Ich wohne in Berlin und arbeite bei SAP.",
        "Je travaille chez Google à Paris depuis deux ans.",
        "Me gusta mucho la comida italiana y viajar.",
        "Я живу в Москве и работаю программистом.",
    ],
)
def test_other_languages_give_no_garbage(said: str) -> None:
    res = one(said)
    assert res.facts == []
    assert res.relationships == []
    assert all(e.entity_type is not T.OTHER for e in res.entities)


def test_mixed_language_message_keeps_the_english_part() -> None:
    res = one("Ich wohne in Berlin. I work at SAP as a data engineer.", "Jonas")
    assert texts(res) == ["Jonas works at SAP as a data engineer."]


def test_very_long_message() -> None:
    sentence = "I went to the farmers market with my sister Sarah and we bought tomatoes. "
    long = sentence * 140  # ~10k characters
    assert len(long) > 10_000
    res = one(long)
    assert texts(res) == ["The user went to the farmers market with their sister Sarah and bought tomatoes."]
    assert res.facts[0].source_indices == [0]
    # one 10k-character run-on sentence is not a memory
    res = one("word " * 2500)
    assert res.facts == []


def test_code_blocks_are_not_memories() -> None:
    res = one("I fixed it like this:\n```python\nI = 1  # I love hacks\nprint('My Secret Corp')\n```\nI love Python.")
    assert texts(res) == ["The user loves Python."]
    assert "My Secret Corp" not in ents(res)


def test_sentence_splitting_keeps_abbreviations_decimals_and_urls() -> None:
    got = [
        s.text
        for s in split_sentences(
            clean_text(
                "I met Dr. Lee at 9 a.m. today. Python 3.12 is fast, e.g. for loops. See https://example.com/a.b?x=1. Bye!"
            )
        )
    ]
    assert got == [
        "I met Dr. Lee at 9 a.m. today.",
        "Python 3.12 is fast, e.g. for loops.",
        "See https://example.com/a.b?x=1.",
        "Bye!",
    ]
    got = [s.text for s in split_sentences("我是开发者。我住在北京！你呢？")]
    assert got == ["我是开发者。", "我住在北京！", "你呢？"]


# --- API -------------------------------------------------------------------------------------------------------


async def test_async_extract_matches_sync_inline_and_threaded() -> None:
    batch = msgs(
        ("user", "Yesterday I went hiking with my sister Sarah in Yosemite.", "Ana"),
        ("user", "I work at Acme Corp as a data engineer.", "Ana"),
    )
    expected = EX.extract_sync(batch, ctx())
    assert await EX.extract(batch, ctx()) == expected
    threaded = RuleExtractor(thread_threshold=1)
    assert await threaded.extract(batch, ctx()) == expected
    many = await asyncio.gather(*(threaded.extract(batch, ctx()) for _ in range(4)))
    assert all(r == expected for r in many)


def test_rejects_bad_input() -> None:
    with pytest.raises(ValidationError):
        EX.extract_sync([{"role": "user", "content": "hi"}], ctx())  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        EX.extract_sync(msgs(("user", "I live in Paris.")), None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        RuleExtractor(min_content_words=0)
    with pytest.raises(ValidationError):
        RuleExtractor(thread_threshold=0)


def test_options() -> None:
    batch = msgs(("user", "Any recipe ideas?", "Ana"), ("assistant", "You mentioned that you love Thai food."))
    assert texts(RuleExtractor().extract_sync(batch, ctx())) == ["Ana loves Thai food."]
    assert RuleExtractor(assistant_facts=False).extract_sync(batch, ctx()).facts == []
    assert RuleExtractor(min_content_words=6).extract_sync(msgs(("user", "I love hiking in the Alps.")), ctx()).facts == []


def test_name_and_metadata() -> None:
    assert RuleExtractor.name == "rules"
    fact = one("Last week I moved to Berlin.", "Ana").facts[0]
    assert fact.metadata["speaker"] == "Ana"
    assert fact.metadata["role"] == "user"
    assert fact.metadata["time_expression"] == "Last week"
    assert fact.metadata["time_granularity"] == "week"


# --- more behaviour ------------------------------------------------------------------------------------------


def test_credentials_never_become_memories() -> None:
    for said in (
        "Note: my wifi password is hunter2.",
        "My API key is sk-abcdefghijklmnop1234.",
        "My card number is 4111 1111 1111 1111.",
    ):
        assert one(said).facts == [], said


def test_birthdays_are_semantic_but_dated() -> None:
    fact = one("My mom's birthday is on July 14 and she loves orchids.").facts[0]
    assert fact.memory_type is MemoryType.SEMANTIC
    assert fact.occurred_at == datetime(2023, 7, 14, tzinfo=UTC)


def test_present_perfect_states_are_semantic_events_are_episodic() -> None:
    assert one("I've lived in London since 2018.").facts[0].memory_type is MemoryType.SEMANTIC
    assert one("I have known Sarah for ten years.").facts[0].memory_type is MemoryType.SEMANTIC
    assert one("I have visited Japan twice.").facts[0].memory_type is MemoryType.EPISODIC
    assert ("User", "lives_in", "London") in rels(one("I've lived in London since 2018."))
    assert next(r for r in one("I've lived in London since 2018.").relationships).properties == {}


def test_object_me_before_subject_i_reads_well() -> None:
    res = one("My boss Jennifer told me I'm getting promoted next month.", "Ana")
    assert texts(res) == ["Ana's boss Jennifer told Ana that Ana is getting promoted in June 2023."]
    assert set(ents(res)) == {"Ana", "Jennifer"}
    assert ("Jennifer", "manager_of", "Ana") in rels(res)


def test_several_pets_named_at_once() -> None:
    res = one("You have two cats named Milo and Luna.", role="assistant")
    assert {("User", "has", "Milo"), ("User", "has", "Luna")} <= rels(res)
    by_name = {e.name: e for e in res.entities}
    assert by_name["Luna"].entity_type is T.OTHER and by_name["Luna"].attributes == {"kind": "cat"}


def test_pet_name_stays_a_pet_later_in_the_batch() -> None:
    res = run(
        ("user", "I adopted a puppy named Max last week.", "Ana"), ("user", "Max loves chasing squirrels in the park.", "Ana")
    )
    by_name = {e.name: e for e in res.entities}
    assert by_name["Max"].entity_type is T.OTHER
    assert by_name["Max"].source_indices == [0, 1]
    assert ("Max", "likes", "chasing squirrels") in rels(res)


def test_modifiers_are_not_places() -> None:
    res = one("Yesterday I went to a LGBTQ support group and it was powerful.")
    assert not any(r[1] == "visited" for r in rels(res))
    assert "LGBTQ" not in ents(res)


def test_talk_about_the_other_person_is_skipped() -> None:
    res = run(
        ("user", "So cool you found such a helpful group.", "Melanie"),
        ("user", "Your empathy will really help the people you work with.", "Melanie"),
    )
    assert res.facts == []


def test_random_input_never_breaks_the_invariants() -> None:
    import random
    import string

    rnd = random.Random(7)
    alphabet = string.printable + "éüñß我你的了。！？こんにちは안녕😀👍🏽\u200b\u00a0"
    vocab_text = "I my me we you Sarah Acme Corp yesterday last week May 8 2023 love hate work at in Paris the a dog named Max has was went to . , ! ?"
    vocab = vocab_text.split()
    for i in range(400):
        if i % 2:
            content = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 300)))
        else:
            content = " ".join(rnd.choice(vocab) for _ in range(rnd.randint(0, 60)))
        role = rnd.choice(["user", "assistant", "system", "tool"])
        res = EX.extract_sync(
            [MessageIn(index=0, role=role, content=content, said_at=SAID, name=rnd.choice([None, "Ana"]))], ctx()
        )
        names = {e.name for e in res.entities}
        for f in res.facts:
            assert f.source_indices == [0] and f.text.strip()
            assert set(f.entities) <= names
        for r in res.relationships:
            assert r.source in names and r.target in names and r.source_indices == [0]
        for e in res.entities:
            assert e.name.strip() and e.name not in ("I", "My", "Me", "You", "We")
            if e.entity_type not in (T.PREFERENCE, T.CONCEPT):
                assert not e.name[:1].islower() or e.name in ("iPhone", "iPad", "macOS", "iOS", "eBay"), e.name


def test_a_preference_stops_before_a_preposition() -> None:
    res = RulePipeline().run(
        [MessageIn(role="user", content="I love long walks along the river.", index=0, said_at=datetime(2024, 3, 4, tzinfo=UTC))],
        ExtractionContext(user_id="u", conversation_id="c", now=datetime(2024, 3, 4, tzinfo=UTC)),
    )
    assert [(r.relation, r.target) for r in res.relationships] == [("likes", "long walks")]
