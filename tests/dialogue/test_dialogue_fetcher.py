"""LLMFetcher (the seed's API on deepcontext's router) against fake OpenAI servers: calls, named
backends, fallback order, retries on timeouts, streaming that never blocks the loop, errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from deepcontext.dialogue import (
    ContextManager,
    LLMBackendConfig,
    LLMBackendError,
    LLMContextGraph,
    LLMError,
    LLMFetcher,
    LLMTimeoutError,
)
from deepcontext.errors import ConfigurationError, LLMStreamError, ValidationError
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-0123456789abcdef"


def _cfg(name: str, server: FakeOpenAI, **kw: object) -> LLMBackendConfig:
    return LLMBackendConfig(name=name, provider="openai", model=f"model-{name}", api_key=KEY, api_url=server.url, **kw)  # type: ignore[arg-type]


async def test_the_seed_constructor_and_fetch(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Hello Ana"))
    async with LLMFetcher(fake_openai.url, KEY, "fake-model", timeout=5, backoff_base=0.01) as fetcher:
        answer = await fetcher.fetch(
            "And my name?",
            system_prompt="Be brief",
            temperature=0.2,
            max_tokens=50,
            prev_messages=[{"role": "user", "content": "I am Ana"}, {"role": "assistant", "content": "Hi"}],
        )
    assert answer.choices[0].message.content == "Hello Ana" == answer.text == str(answer)
    assert answer.backend == "default" and answer.attempts == 1
    (req,) = fake_openai.chat_requests
    assert [m["role"] for m in req.messages] == ["system", "user", "assistant", "user"]
    assert req.messages[-1]["content"] == "And my name?" and req.body["temperature"] == 0.2 and req.body["max_tokens"] == 50
    assert KEY not in repr(fetcher)


async def test_named_backends_fallback_order_and_backend_name(fake_openai_factory: Callable[[], FakeOpenAI]) -> None:
    a, b, c = fake_openai_factory(), fake_openai_factory(), fake_openai_factory()
    fetcher = LLMFetcher(backends=[_cfg("a", a), _cfg("b", b), _cfg("c", c)], default_backend="a", backoff_base=0.01)
    try:
        a.script(Reply.error(400, "bad model"))  # not retryable: straight to the next backend
        c.script(Reply.text("from c"))
        answer = await fetcher.fetch("hi", fallback_order=["c"])
        assert answer.text == "from c" and answer.backend == "c"
        assert len(b.chat_requests) == 0  # c came before b, as asked

        a.script(Reply.error(401, "no"))
        b.script(Reply.text("from b"))
        assert (await fetcher.fetch("hi")).backend == "b"  # then every other backend in order

        c.script(Reply.error(400, "nope"))
        with pytest.raises(LLMBackendError) as err:
            await fetcher.fetch("hi", backend_name="c")  # only that backend
        assert "nope" in str(err.value) and isinstance(err.value, LLMError)
        with pytest.raises(ValidationError):
            await fetcher.fetch("hi", backend_name="zzz")
    finally:
        await fetcher.aclose()


async def test_timeouts_are_retried_then_raised(fake_openai: FakeOpenAI) -> None:
    fetcher = LLMFetcher(backends=[_cfg("main", fake_openai, timeout=0.3)], backoff_base=0.01)
    try:
        fake_openai.script(Reply.slow(3.0), Reply.text("second try"))
        answer = await fetcher.fetch("hi")
        assert answer.text == "second try" and answer.attempts == 2
        fake_openai.script(Reply.slow(3.0), Reply.slow(3.0))
        with pytest.raises(LLMTimeoutError) as err:
            await fetcher.fetch("hi")
        assert isinstance(err.value, TimeoutError)
    finally:
        await fetcher.aclose()


async def test_streaming_never_blocks_the_event_loop(fake_openai: FakeOpenAI) -> None:
    text = "Streaming answers arrive in small pieces, one after the other."
    fake_openai.script(Reply.text(text, chunk_size=4, chunk_delay=0.03))
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    chunks: list[str] = []
    ticks_between: list[int] = []
    async with LLMFetcher(backends=[_cfg("main", fake_openai)], backoff_base=0.01) as fetcher:
        async for chunk in fetcher.fetch_stream("tell me", system_prompt="brief"):
            chunks.append(chunk)
            ticks_between.append(ticks)
    stop.set()
    await task
    assert "".join(chunks) == text and len(chunks) > 5
    assert ticks_between[-1] > ticks_between[0]  # the loop kept running other tasks between chunks
    assert fake_openai.chat_requests[0].stream


async def test_a_stream_falls_back_before_its_first_chunk_and_never_after(
    fake_openai_factory: Callable[[], FakeOpenAI],
) -> None:
    a, b = fake_openai_factory(), fake_openai_factory()
    fetcher = LLMFetcher(backends=[_cfg("a", a), _cfg("b", b)], backoff_base=0.01)
    try:
        a.script(Reply.error(400, "refused"))
        b.script(Reply.text("from b, streamed", chunk_size=3))
        assert "".join([c async for c in fetcher.fetch_stream("hi")]) == "from b, streamed"

        a.script(Reply.cut("half of an answer that breaks", after_chunks=2, chunk_size=4))
        got: list[str] = []
        with pytest.raises(LLMStreamError) as err:
            async for chunk in fetcher.fetch_stream("hi"):
                got.append(chunk)
        assert got and err.value.partial_text == "".join(got)
        assert len(b.chat_requests) == 1  # the broken stream was not moved to b
    finally:
        await fetcher.aclose()


async def test_the_limiter_is_held_for_each_call(fake_openai: FakeOpenAI) -> None:
    class Limiter:
        def __init__(self) -> None:
            self.held = 0
            self.calls = 0

        async def acquire_llm(self) -> None:
            self.held += 1
            self.calls += 1

        def release_llm(self) -> None:
            self.held -= 1

    limiter = Limiter()
    fake_openai.script(Reply.text("one"), Reply.text("two two two", chunk_size=2))
    async with LLMFetcher(backends=[_cfg("main", fake_openai)], limiter=limiter) as fetcher:
        await fetcher.fetch("x")
        async for _ in fetcher.fetch_stream("y"):
            assert limiter.held == 1
    assert limiter.calls == 2 and limiter.held == 0


async def test_bad_arguments_are_clear_errors(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ValidationError):
        LLMFetcher()
    with pytest.raises(ValidationError):
        LLMFetcher(backends=[_cfg("a", fake_openai), _cfg("a", fake_openai)])
    with pytest.raises(ValidationError):
        LLMFetcher(backends=[_cfg("a", fake_openai)], default_backend="b")
    with pytest.raises(ValidationError):
        LLMFetcher(backends=[LLMBackendConfig(name="x", provider="carrier-pigeon", model="m", api_key=KEY)])
    async with LLMFetcher(backends=[_cfg("a", fake_openai)]) as fetcher:
        with pytest.raises(ConfigurationError):
            await fetcher.fetch("x", tools=[{"type": "function"}])
    assert fake_openai.chat_requests == []


async def test_a_fetcher_drives_a_context_manager(fake_openai: FakeOpenAI, make_graph: Callable[[], LLMContextGraph]) -> None:
    fake_openai.default_reply = Reply.text("Qubits hold superpositions.")
    async with LLMFetcher(backends=[_cfg("main", fake_openai)]) as fetcher:
        cm = ContextManager(fetcher, backend=make_graph().backend)
        first = await cm.chat("What is a qubit?", auto_plan=False)
        second = await cm.chat("More please")
    assert cm.graph.nodes[second].context.llm_role.content == "Qubits hold superpositions."
    assert cm.graph.get_ancestor_chain(second) == [first, second]
    last = fake_openai.chat_requests[-1].messages
    assert [m["content"] for m in last if m["role"] == "user"] == ["What is a qubit?", "More please"]
