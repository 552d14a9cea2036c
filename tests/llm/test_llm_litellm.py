"""The optional LiteLLM backend against the fake server (skipped when litellm is not installed)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel

from deepcontext.errors import LLMRateLimitError, LLMStreamError, LLMTimeoutError
from deepcontext.llm import Router
from tests.llm.helpers import TEST_KEY
from tests.support.fake_openai import FakeOpenAI, Reply

pytest.importorskip("litellm")

from deepcontext.llm.litellm_backend import LiteLLMBackend  # noqa: E402

HI = [{"role": "user", "content": "hi"}]

# litellm's own imports warn (pydantic on its TypedDicts); that is its noise, not ours
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
async def lite(fake_openai: FakeOpenAI) -> AsyncIterator[LiteLLMBackend]:
    backend = LiteLLMBackend("openai/fake-model", name="lite", base_url=fake_openai.url, api_key=TEST_KEY, timeout=5)
    yield backend
    await backend.aclose()


async def test_chat_and_json(fake_openai: FakeOpenAI, lite: LiteLLMBackend) -> None:
    fake_openai.script(Reply.text("hello"), Reply.text('<think>x</think>```json\n{"name": "Ana", "age": 31}\n```'))
    completion = await lite.chat(HI, temperature=0.1)
    assert (completion.text, completion.backend, completion.finish_reason) == ("hello", "lite", "stop")
    assert await lite.complete_json(HI, Person) == Person(name="Ana", age=31)
    first, second = fake_openai.chat_requests
    assert first.model == "fake-model" and first.messages == HI
    assert first.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert second.body["response_format"]["type"] == "json_schema"


async def test_stream_and_cut_stream(fake_openai: FakeOpenAI, lite: LiteLLMBackend) -> None:
    fake_openai.script(Reply.text("streamed answer", chunk_size=4), Reply.cut("a long story to cut", 2, chunk_size=4))
    assert "".join([c async for c in lite.chat_stream(HI)]) == "streamed answer"
    with pytest.raises(LLMStreamError) as info:
        async for _ in lite.chat_stream(HI):
            pass
    assert info.value.partial_text == "a long s"


async def test_errors_are_translated_and_routed(fake_openai: FakeOpenAI, lite: LiteLLMBackend) -> None:
    fake_openai.script(Reply.rate_limited(retry_after=0.05))
    with pytest.raises(LLMRateLimitError):
        await lite.chat(HI)
    fake_openai.script(Reply.slow(3.0))
    with pytest.raises(LLMTimeoutError):
        await lite.chat(HI, timeout=0.3)
    fake_openai.script(Reply.error(500), Reply.text("after retry"))
    router = Router([lite], max_retries=1, backoff_base=0.01)
    assert (await router.chat(HI)).text == "after retry"
