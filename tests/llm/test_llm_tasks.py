"""Conversation summaries and consolidation merges against the fake server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from deepcontext.errors import LLMResponseError, ValidationError
from deepcontext.extract.interface import MessageIn
from deepcontext.llm import Router, prompts
from deepcontext.llm.tasks import MergedFact, merge_memories, summarize_conversation
from tests.support.fake_openai import FakeOpenAI, Reply

MakeRouter = Callable[..., Router]
SAID = datetime(2024, 5, 3, 14, 0, tzinfo=UTC)


async def test_summary_merges_previous_summary_and_new_turns(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.text("<think>short</think>\nAna moved to Berlin on 2024-05-02 and works at Acme."))
    turns = [
        MessageIn(index=0, role="user", content="I moved to Berlin yesterday", said_at=SAID, name="Ana"),
        {"role": "assistant", "content": "Congratulations!"},
    ]
    summary = await summarize_conversation(make_router(), turns, "Ana works at Acme.", max_words=80)
    assert summary == "Ana moved to Berlin on 2024-05-02 and works at Acme."
    [req] = fake_openai.chat_requests
    system, user = req.messages[0]["content"], req.messages[1]["content"]
    assert "At most 80 words" in system and prompts.LANGUAGE_RULE in system
    assert user.startswith("Previous summary:\nAna works at Acme.")
    assert "(2024-05-03 14:00 UTC, Friday) Ana (user): I moved to Berlin yesterday" in user
    assert "Assistant: Congratulations!" in user


async def test_summary_keeps_the_newest_turns_within_the_budget(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.text("s"))
    turns = [{"role": "user", "content": f"message number {i} " + "x" * 50} for i in range(40)]
    await summarize_conversation(make_router(), turns, max_chars=500)
    user = fake_openai.chat_requests[0].messages[1]["content"]
    assert "message number 39" in user and "message number 0 " not in user


async def test_summary_without_turns_or_with_empty_answer(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    assert await summarize_conversation(make_router(), [], "kept") == "kept"
    with pytest.raises(ValidationError):
        await summarize_conversation(make_router(), [])
    assert fake_openai.requests == []
    fake_openai.script(Reply.text("<think>nothing to say</think>"))
    with pytest.raises(LLMResponseError):
        await summarize_conversation(make_router(), [{"role": "user", "content": "hi"}])


async def test_merge_keeps_contradictions_apart_and_covers_every_input(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    texts = [
        "Ana likes pizza",
        "Ana likes margherita pizza",
        "Ana lives in Paris",
        "Ana lives in Berlin",
        "Ana has a cat",
    ]
    fake_openai.script(
        Reply.json(
            {
                "facts": [
                    {"text": "Ana likes pizza, especially margherita", "sources": [0, 1]},
                    {"text": "Ana lives in Paris", "sources": [2]},
                    {"text": "Ana lives in Berlin", "sources": [3]},
                    {"text": "Ana has a dog", "sources": [9]},  # cites nothing real: dropped
                ]
            }
        )
    )
    merged = await merge_memories(make_router(), texts)
    assert merged == [
        MergedFact(text="Ana likes pizza, especially margherita", sources=[0, 1]),
        MergedFact(text="Ana lives in Paris", sources=[2]),
        MergedFact(text="Ana lives in Berlin", sources=[3]),
        MergedFact(text="Ana has a cat", sources=[4]),  # not covered by the answer: kept verbatim
    ]
    [req] = fake_openai.chat_requests
    assert "contradict each other are NOT merged" in req.messages[0]["content"]
    assert "[3] Ana lives in Berlin" in req.messages[1]["content"]


async def test_merge_of_one_or_none_makes_no_call(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    assert await merge_memories(make_router(), []) == []
    assert await merge_memories(make_router(), ["only"]) == [MergedFact(text="only", sources=[0])]
    with pytest.raises(ValidationError):
        await merge_memories(make_router(), ["a", " "])
    assert fake_openai.requests == []
