"""LLMClassifier: one call per batch; ids not shown for a candidate are rejected for the offline rule."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from deepcontext.errors import LLMBackendError, ValidationError
from deepcontext.extract.interface import ExistingMemory, ExtractedFact, ExtractionContext
from deepcontext.extract.llm_classifier import LLMClassifier, offline_decision
from deepcontext.llm import Router
from deepcontext.types import MemoryType
from tests.support.fake_openai import FakeOpenAI, Reply

MakeRouter = Callable[..., Router]
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
CTX = ExtractionContext(user_id="u1", conversation_id="c1", now=NOW)


def fact(text: str) -> ExtractedFact:
    return ExtractedFact(text=text, source_indices=[0])


def mem(id: int, text: str, similarity: float) -> ExistingMemory:
    return ExistingMemory(
        id=id,
        text=text,
        memory_type=MemoryType.SEMANTIC,
        similarity=similarity,
        said_at=datetime(2024, 1, 5, tzinfo=UTC),
    )


CANDIDATES = [
    fact("Ana lives in Berlin"),
    fact("Ana likes pizza, especially margherita"),
    fact("Ana no longer has a car"),
    fact("Ana is vegetarian"),
    fact("Ana has a cat named Miso"),
]
NEIGHBOURS = [
    [mem(11, "Ana lives in Paris", 0.82), mem(12, "Ana likes Paris", 0.61)],
    [mem(21, "Ana likes pizza", 0.88)],
    [mem(31, "Ana has a red car", 0.74)],
    [mem(41, "Ana is vegetarian", 0.99)],
    [],
]


async def test_decisions_for_the_batch_in_one_call(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.json(
            {
                "decisions": [
                    {"candidate": 0, "action": "REPLACE", "memory_id": 11, "reason": "moved"},
                    {
                        "candidate": 1,
                        "action": "update",
                        "memory_id": 21,
                        "text": "Ana likes pizza, especially margherita",
                    },
                    {"candidate": 2, "action": "DELETE", "memory_id": 31, "reason": "sold the car"},
                    {"candidate": 3, "action": "NOOP", "memory_id": 41},
                ]
            }
        )
    )
    decisions = await LLMClassifier(make_router()).classify(CANDIDATES, NEIGHBOURS, CTX)
    assert [(d.action, d.memory_id) for d in decisions] == [
        ("REPLACE", 11),
        ("UPDATE", 21),
        ("DELETE", 31),
        ("NOOP", 41),
        ("ADD", None),
    ]
    assert decisions[0].text == "Ana lives in Berlin"  # REPLACE defaults to the candidate's text
    assert decisions[1].text == "Ana likes pizza, especially margherita"
    assert decisions[2].text is None and decisions[0].reason == "moved"
    # one request; the candidate without neighbours was not sent
    [req] = fake_openai.chat_requests
    user = req.messages[1]["content"]
    assert 'Candidate 0 (semantic): "Ana lives in Berlin"' in user
    assert '- id 11 (similarity 0.82, said 2024-01-05 00:00 UTC, Friday): "Ana lives in Paris"' in user
    assert "Candidate 4" not in user and "Miso" not in user


async def test_ids_not_shown_for_the_candidate_are_rejected(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.json(
            {
                "decisions": [
                    {"candidate": 0, "action": "REPLACE", "memory_id": 21},  # shown, but for candidate 1
                    {"candidate": 1, "action": "UPDATE", "memory_id": 999, "text": "x"},  # never shown
                    {"candidate": 2, "action": "DELETE"},  # no id
                    {"candidate": 3, "action": "UPDATE", "memory_id": 41},  # no text
                ]
            }
        )
    )
    classifier = LLMClassifier(make_router())
    decisions = await classifier.classify(CANDIDATES, NEIGHBOURS, CTX)
    assert [(d.action, d.memory_id) for d in decisions] == [
        ("ADD", None),
        ("ADD", None),
        ("ADD", None),
        ("NOOP", 41),  # the offline rule: similarity 0.99 >= 0.95
        ("ADD", None),
    ]
    assert "memory id 21, which was not among the memories shown" in (decisions[0].reason or "")
    assert "999" in (decisions[1].reason or "")
    assert "DELETE without a memory id" in (decisions[2].reason or "")
    assert "UPDATE without the new text" in (decisions[3].reason or "")
    assert "offline rule: NOOP (similarity 0.990" in (decisions[3].reason or "")
    assert classifier.rejected_total == 4


async def test_missing_and_unknown_decisions_fall_back(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.json(
            {
                "decisions": [
                    {"candidate": 0, "action": "MERGE", "memory_id": 11},
                    {"candidate": 1, "action": "NOOP"},  # no id: the closest shown memory
                    {"candidate": 1, "action": "DELETE", "memory_id": 21},  # a second decision is ignored
                    {"candidate": 17, "action": "DELETE", "memory_id": 11},  # no such candidate
                ]
            }
        )
    )
    decisions = await LLMClassifier(make_router()).classify(CANDIDATES[:4], NEIGHBOURS[:4], CTX)
    assert [(d.action, d.memory_id) for d in decisions] == [("ADD", None), ("NOOP", 21), ("ADD", None), ("NOOP", 41)]
    assert "unknown action 'MERGE'" in (decisions[0].reason or "")
    assert "no decision was given" in (decisions[2].reason or "")


async def test_a_bare_list_answer_wrapped_in_think_is_accepted(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.text('<think>easy</think>[{"candidate": 0, "action": "ADD"}]'))
    decisions = await LLMClassifier(make_router()).classify(CANDIDATES[:1], NEIGHBOURS[:1], CTX)
    assert decisions[0].action == "ADD" and decisions[0].memory_id is None


async def test_no_neighbours_no_call(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    decisions = await LLMClassifier(make_router()).classify([fact("a"), fact("b")], [[], []], CTX)
    assert [d.action for d in decisions] == ["ADD", "ADD"]
    assert fake_openai.requests == []


async def test_llm_failure_raises_or_uses_rules(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.default_reply = Reply.error(500)
    with pytest.raises(LLMBackendError):
        await LLMClassifier(make_router(max_retries=0)).classify(CANDIDATES, NEIGHBOURS, CTX)
    decisions = await LLMClassifier(make_router(max_retries=0), on_error="rules").classify(CANDIDATES, NEIGHBOURS, CTX)
    assert [d.action for d in decisions] == ["ADD", "ADD", "ADD", "NOOP", "ADD"]
    assert "LLM unavailable" in (decisions[3].reason or "")


async def test_mismatched_lengths_are_rejected(make_router: MakeRouter) -> None:
    with pytest.raises(ValidationError):
        await LLMClassifier(make_router()).classify(CANDIDATES, NEIGHBOURS[:2], CTX)


def test_offline_rule() -> None:
    assert offline_decision([]).action == "ADD"
    assert offline_decision([mem(1, "x", 0.94)]).action == "ADD"
    d = offline_decision([mem(1, "x", 0.5), mem(2, "y", 0.97)])
    assert (d.action, d.memory_id) == ("NOOP", 2)


async def test_a_change_said_as_an_event_replaces_with_what_holds_now(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(
        Reply.json({"decisions": [{"candidate": 0, "action": "REPLACE", "memory_id": 51, "text": "Ana works at Wise"}]})
    )
    candidates = [fact("Ana left Starling and joined Wise")]
    decisions = await LLMClassifier(make_router()).classify(candidates, [[mem(51, "Ana works at Starling", 0.7)]], CTX)
    assert [(d.action, d.memory_id, d.text) for d in decisions] == [("REPLACE", 51, "Ana works at Wise")]
    # the system prompt asks for the standing fact in the old memory's words, as the offline rule writes it
    [req] = fake_openai.chat_requests
    system = req.messages[0]["content"]
    assert "what holds now in the memory's own words" in system
