"""The OpenAI-compatible backend against the fake server, through the real openai SDK."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pydantic import BaseModel

from deepcontext.errors import LLMBackendError, LLMResponseError, LLMValidationError, ValidationError
from deepcontext.llm import OpenAICompatibleLLM
from deepcontext.settings import JSONMode
from tests.llm.helpers import TEST_KEY
from tests.support.fake_openai import FakeOpenAI, Reply

Make = Callable[..., OpenAICompatibleLLM]


class Person(BaseModel):
    name: str
    age: int


MESSAGES = [{"role": "system", "content": "You read profiles."}, {"role": "user", "content": "Ana is 31."}]


async def test_chat_returns_text_usage_and_backend(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text("Hello Ana"))
    llm = make_llm(name="local")
    completion = await llm.chat([{"role": "user", "content": "Hi, I am Ana"}], temperature=0.2, max_tokens=50)
    assert completion.text == "Hello Ana"
    assert completion.backend == "local"
    assert completion.finish_reason == "stop"
    assert completion.usage.completion_tokens == 2
    [req] = fake_openai.chat_requests
    assert req.model == "fake-model"
    assert req.messages == [{"role": "user", "content": "Hi, I am Ana"}]
    assert req.body["temperature"] == 0.2 and req.body["max_tokens"] == 50
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert "response_format" not in req.body


async def test_invalid_messages_are_rejected_before_any_request(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    llm = make_llm()
    with pytest.raises(ValidationError):
        await llm.chat([{"role": "wizard", "content": "x"}])
    with pytest.raises(ValidationError):
        await llm.chat([])
    assert fake_openai.requests == []


async def test_complete_json_sends_schema_and_validates(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.json({"name": "Ana", "age": 31}))
    person = await make_llm().complete_json(MESSAGES, Person)
    assert person == Person(name="Ana", age=31)
    [req] = fake_openai.chat_requests
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Person"
    assert fmt["json_schema"]["schema"]["required"] == ["name", "age"]
    # the instructions and the schema also travel in the system prompt (appended to the caller's)
    assert req.messages[0]["role"] == "system"
    assert req.messages[0]["content"].startswith("You read profiles.")
    assert '"age"' in req.messages[0]["content"] and "JSON" in req.messages[0]["content"]
    assert req.body["temperature"] == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        '<think>The user says Ana is 31, so {"age": 30} is wrong.</think>\n{"name": "Ana", "age": 31}',
        '```json\n{"name": "Ana", "age": 31}\n```',
        '<think>ok</think>\n\n```json\n{"name": "Ana", "age": 31}\n```',
        'Here you go:\n{"name": "Ana", "age": 31}',
    ],
)
async def test_think_blocks_and_fences_are_stripped(fake_openai: FakeOpenAI, make_llm: Make, answer: str) -> None:
    fake_openai.script(Reply.text(answer))
    assert await make_llm().complete_json(MESSAGES, Person) == Person(name="Ana", age=31)
    assert len(fake_openai.chat_requests) == 1  # no repair needed


async def test_malformed_json_is_repaired_once(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text('{"name": "Ana", "age": "thirty-one"'), Reply.json({"name": "Ana", "age": 31}))
    assert await make_llm().complete_json(MESSAGES, Person) == Person(name="Ana", age=31)
    first, second = fake_openai.chat_requests
    # the repair request replays the conversation, the bad answer, then the error
    assert second.messages[: len(first.messages)] == first.messages
    assert second.messages[-2] == {"role": "assistant", "content": '{"name": "Ana", "age": "thirty-one"'}
    assert second.messages[-1]["role"] == "user"
    assert "could not be used" in second.messages[-1]["content"]


async def test_schema_errors_are_sent_back_for_the_repair(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.json({"name": "Ana", "age": "old"}), Reply.json({"name": "Ana", "age": 31}))
    assert await make_llm().complete_json(MESSAGES, Person) == Person(name="Ana", age=31)
    repair = fake_openai.chat_requests[1].messages[-1]["content"]
    assert "age" in repair and "integer" in repair


async def test_two_bad_answers_raise_validation_error(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.json({"name": "Ana"}), Reply.json({"name": "Ana", "years": 31}))
    with pytest.raises(LLMValidationError) as info:
        await make_llm(name="local").complete_json(MESSAGES, Person)
    err = info.value
    assert "after one repair attempt" in str(err)
    assert err.backend == "local"
    assert any(e.startswith("age:") for e in err.errors)
    assert len(fake_openai.chat_requests) == 2  # exactly one repair


async def test_prose_twice_raises_response_error(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text("Ana is 31 years old."), Reply.text("<think>still no JSON</think>"))
    with pytest.raises(LLMResponseError) as info:
        await make_llm().complete_json(MESSAGES, Person)
    assert not isinstance(info.value, LLMValidationError)
    assert len(fake_openai.chat_requests) == 2


async def test_repair_can_be_turned_off(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text("nope"))
    with pytest.raises(LLMResponseError):
        await make_llm().complete_json(MESSAGES, Person, repair=False)
    assert len(fake_openai.chat_requests) == 1


async def test_auto_json_mode_steps_down_when_the_server_rejects_json_schema(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(
        Reply.error(400, "response_format json_schema is not supported"),
        Reply.json({"name": "Ana", "age": 31}),
        Reply.json({"name": "Bo", "age": 5}),
    )
    llm = make_llm()
    assert await llm.complete_json(MESSAGES, Person) == Person(name="Ana", age=31)
    assert llm.effective_json_mode is JSONMode.JSON_OBJECT
    assert await llm.complete_json(MESSAGES, Person) == Person(name="Bo", age=5)
    formats = [r.body["response_format"]["type"] for r in fake_openai.chat_requests]
    assert formats == ["json_schema", "json_object", "json_object"]


async def test_prompt_json_mode_sends_no_response_format(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.json({"name": "Ana", "age": 31}))
    assert await make_llm(json_mode="prompt").complete_json(MESSAGES, Person) == Person(name="Ana", age=31)
    [req] = fake_openai.chat_requests
    assert "response_format" not in req.body
    assert '"age"' in req.messages[0]["content"]


async def test_explicit_json_schema_mode_does_not_step_down(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.error(400, "bad response_format"))
    llm = make_llm(json_mode="json_schema")
    with pytest.raises(LLMBackendError) as info:
        await llm.complete_json(MESSAGES, Person)
    assert info.value.status_code == 400 and not info.value.retryable
    assert llm.effective_json_mode is JSONMode.JSON_SCHEMA
    assert len(fake_openai.chat_requests) == 1


async def test_no_api_key_sends_a_placeholder_not_the_environment_key(
    fake_openai: FakeOpenAI, make_llm: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    fake_openai.script(Reply.text("hi"))
    await make_llm(api_key=None).chat([{"role": "user", "content": "x"}])
    assert "sk-from-the-environment" not in fake_openai.chat_requests[0].headers["authorization"]


async def test_json_request_body_is_plain_json(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.json({"name": "李雷", "age": 20}))
    person = await make_llm().complete_json([{"role": "user", "content": "李雷二十岁。"}], Person)
    assert person.name == "李雷"
    assert json.dumps(fake_openai.chat_requests[0].body, ensure_ascii=False).count("李雷二十岁") == 1
