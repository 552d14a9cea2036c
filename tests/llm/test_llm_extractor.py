"""LLMExtractor against the fake server: what the prompt carries, what comes back, what is rejected."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from deepcontext.errors import LLMValidationError
from deepcontext.extract.interface import ExtractionContext, ExtractionResult, MessageIn
from deepcontext.extract.llm_extractor import LLMExtractor, parse_occurred_at
from deepcontext.llm import Router, prompts
from deepcontext.types import EntityType, MemoryType
from tests.support.fake_openai import FakeOpenAI, Reply

MakeRouter = Callable[..., Router]
SAID = datetime(2024, 5, 3, 14, 0, tzinfo=UTC)  # a Friday


def msgs(*texts: str, role: str = "user", name: str | None = "Ana") -> list[MessageIn]:
    return [MessageIn(index=i, role=role, content=t, said_at=SAID + timedelta(minutes=i), name=name) for i, t in enumerate(texts)]


def ctx(**kw: object) -> ExtractionContext:
    return ExtractionContext(user_id="u1", conversation_id="c1", now=SAID + timedelta(hours=1), **kw)  # type: ignore[arg-type]


GOOD = {
    "facts": [
        {
            "text": "Ana moved to Berlin on 2024-05-02",
            "type": "episodic",
            "importance": 0.8,
            "confidence": 0.9,
            "entities": ["Ana", "Berlin"],
            "source_indices": [0],
            "occurred_at": "2024-05-02",
        },
        {
            "text": "Ana works at Acme as a data engineer",
            "type": "semantic",
            "importance": 9,
            "confidence": 0.95,
            "entities": ["Ana", "Acme"],
            "source_indices": [1],
        },
        {
            "text": "To deploy Ana's app, run make release",
            "type": "how-to",
            "source_indices": [2],
            "entities": [],
        },
        {"text": "Ana owns a yacht", "type": "semantic", "source_indices": [7]},
        {"text": "Ana likes sailing", "type": "semantic", "source_indices": []},
    ],
    "entities": [
        {"name": "Ana", "type": "person", "source_indices": [0, 1]},
        {"name": "Berlin", "type": "city", "source_indices": [0]},
        {"name": "Acme", "type": "company", "source_indices": [1]},
        {"name": "Ghost Corp", "type": "organization", "source_indices": [99]},
    ],
    "relations": [
        {"source": "Ana", "relation": "lives in", "target": "Berlin", "source_indices": [0]},
        {"source": "Ana", "relation": "works_at", "target": "Acme", "source_indices": [1, 5]},
        {"source": "Ana", "relation": "owns", "target": "Yacht", "source_indices": [42]},
    ],
}
CONVERSATION = msgs(
    "I moved to Berlin yesterday!",
    "I'm a data engineer at Acme now.",
    "Note to self: to deploy my app, run make release.",
)


async def test_extracts_typed_cited_facts_entities_and_relations(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.json(GOOD))
    extractor = LLMExtractor(make_router())
    result = await extractor.extract(CONVERSATION, ctx())
    assert isinstance(result, ExtractionResult)
    texts = [f.text for f in result.facts]
    assert texts == [
        "Ana moved to Berlin on 2024-05-02",
        "Ana works at Acme as a data engineer",
        "To deploy Ana's app, run make release",
    ]
    moved, job, howto = result.facts
    assert moved.memory_type is MemoryType.EPISODIC
    assert moved.occurred_at == datetime(2024, 5, 2, tzinfo=UTC)
    assert moved.metadata["occurred_at_precision"] == "day"
    assert moved.source_indices == [0] and moved.entities == ["Ana", "Berlin"]
    assert (moved.importance, moved.confidence) == (0.8, 0.9)
    assert job.importance == 0.9  # a 0..10 score rescaled
    assert howto.memory_type is MemoryType.PROCEDURAL
    assert [e.name for e in result.entities] == ["Ana", "Berlin", "Acme"]
    assert [e.entity_type for e in result.entities] == [EntityType.PERSON, EntityType.LOCATION, EntityType.ORGANIZATION]
    assert [(r.source, r.relation, r.target, r.source_indices) for r in result.relationships] == [
        ("Ana", "lives_in", "Berlin", [0]),
        ("Ana", "works_at", "Acme", [1]),  # the bogus citation 5 is dropped, 1 kept
    ]
    # citing no real message: rejected, counted, never returned
    rejected = {(r.kind, r.text) for r in result.rejected}
    assert rejected == {
        ("fact", "Ana owns a yacht"),
        ("fact", "Ana likes sailing"),
        ("entity", "Ghost Corp"),
        ("relationship", "Ana owns Yacht"),
    }
    assert extractor.rejected_total == 4
    assert "Yacht" not in {e.name for e in result.entities}


async def test_the_prompt_carries_times_indices_and_the_language_rule(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.json({"facts": []}))
    earlier = MessageIn(index=-1, role="assistant", content="Welcome back!", said_at=SAID - timedelta(days=1))
    await LLMExtractor(make_router()).extract(
        CONVERSATION,
        ctx(recent_messages=[earlier], summary="Ana talks about her move.", known_entities=["Acme"], user_name="Ana"),
    )
    [req] = fake_openai.chat_requests
    system, user = req.messages[0]["content"], req.messages[1]["content"]
    assert prompts.LANGUAGE_RULE in system and "occurred_at" in system
    assert "[0] (2024-05-03 14:00 UTC, Friday) Ana (user): I moved to Berlin yesterday!" in user
    assert "[2] (2024-05-03 14:02 UTC, Friday) Ana (user): Note to self" in user
    assert "Earlier messages (context only, do not cite):" in user and "Welcome back!" in user
    assert "[-1]" not in user
    assert "Ana talks about her move." in user and "Entities already known: Acme" in user
    assert "The user's name is Ana" in user  # the display name, for turns without a name
    assert req.body["response_format"]["json_schema"]["name"] == "ExtractionAnswer"


async def test_chinese_conversation_keeps_chinese_facts(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.json(
            {
                "facts": [{"text": "小明在北京工作", "type": "semantic", "entities": ["小明", "北京"], "source_indices": [0]}],
                "entities": [{"name": "小明", "type": "person", "source_indices": [0]}],
                "relations": [{"source": "小明", "relation": "works_in", "target": "北京", "source_indices": [0]}],
            }
        )
    )
    result = await LLMExtractor(make_router()).extract(msgs("我叫小明，我在北京工作。", name=None), ctx())
    assert [f.text for f in result.facts] == ["小明在北京工作"]
    assert {e.name for e in result.entities} == {"小明", "北京"}
    user = fake_openai.chat_requests[0].messages[1]["content"]
    assert "User: 我叫小明，我在北京工作。" in user
    assert "Chinese" in fake_openai.chat_requests[0].messages[0]["content"]


async def test_think_wrapped_answer_and_duplicates(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    answer = (
        '<think>The user moved. {"facts": []}</think>\n```json\n'
        '{"facts": [{"text": "Ana lives in Berlin", "source_indices": [0]},'
        ' {"text": "ana  lives in berlin", "source_indices": [1], "importance": 0.9}]}\n```'
    )
    fake_openai.script(Reply.text(answer))
    result = await LLMExtractor(make_router()).extract(CONVERSATION, ctx())
    [fact] = result.facts
    assert fact.source_indices == [0, 1] and fact.importance == 0.9
    assert len(fake_openai.chat_requests) == 1


async def test_malformed_then_repaired(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.text('{"facts": [{"text": "Ana lives in Berlin", "source_indices": [0]},'),
        Reply.json({"facts": [{"text": "Ana lives in Berlin", "source_indices": [0]}]}),
    )
    result = await LLMExtractor(make_router()).extract(CONVERSATION, ctx())
    assert [f.text for f in result.facts] == ["Ana lives in Berlin"]
    assert len(fake_openai.chat_requests) == 2


async def test_unusable_answers_raise_and_return_nothing(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.json({"facts": [{"txt": "x"}]}), Reply.json({"facts": [{"txt": "x"}]}))
    with pytest.raises(LLMValidationError):
        await LLMExtractor(make_router()).extract(CONVERSATION, ctx())


async def test_long_batches_are_split_into_windows(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    def answer(body: dict) -> Reply:  # type: ignore[type-arg]
        user = body["messages"][1]["content"]
        indices = [i for i in range(5) if f"[{i}] (" in user]
        return Reply.json({"facts": [{"text": f"fact {i}", "source_indices": [i]} for i in indices]})

    fake_openai.responder = answer
    extractor = LLMExtractor(make_router(), max_messages_per_call=2, context_messages=1)
    result = await extractor.extract(msgs("a", "b", "c", "d", "e"), ctx())
    assert [f.text for f in result.facts] == ["fact 0", "fact 1", "fact 2", "fact 3", "fact 4"]
    assert len(fake_openai.chat_requests) == 3
    later = [r.messages[1]["content"] for r in fake_openai.chat_requests if "[2] (" in r.messages[1]["content"]][0]
    assert "Earlier messages" in later and "Ana (user): b" in later


async def test_no_messages_no_call(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    assert (await LLMExtractor(make_router()).extract([], ctx())).facts == []
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("raw", "expected", "precision"),
    [
        ("2024-05-02", datetime(2024, 5, 2, tzinfo=UTC), "day"),
        ("2024-05", datetime(2024, 5, 1, tzinfo=UTC), "month"),
        ("2023", datetime(2023, 1, 1, tzinfo=UTC), "year"),
        ("2024-05-02T09:30:00Z", datetime(2024, 5, 2, 9, 30, tzinfo=UTC), "time"),
        ("2024-05-02T09:30:00+02:00", datetime(2024, 5, 2, 7, 30, tzinfo=UTC), "time"),
        ("yesterday", None, None),
        (None, None, None),
    ],
)
def test_parse_occurred_at(raw: str | None, expected: datetime | None, precision: str | None) -> None:
    assert parse_occurred_at(raw) == (expected, precision)
