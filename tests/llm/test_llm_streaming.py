"""Streaming: never blocks the event loop; retried or moved to another backend only before the first chunk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from deepcontext.errors import LLMBackendError, LLMStreamError, LLMTimeoutError
from deepcontext.llm import OpenAICompatibleLLM, Router
from tests.support.fake_openai import FakeOpenAI, Reply

Make = Callable[..., OpenAICompatibleLLM]
MakeRouter = Callable[..., Router]
HI = [{"role": "user", "content": "tell me a story"}]
STORY = "Once upon a time there was a memory layer that never forgot anything important."


async def collect(stream) -> list[str]:  # type: ignore[no-untyped-def]
    return [chunk async for chunk in stream]


async def test_stream_yields_the_answer_in_chunks(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.text(STORY, chunk_size=10))
    chunks = await collect(make_router().chat_stream(HI))
    assert "".join(chunks) == STORY
    assert len(chunks) == -(-len(STORY) // 10)
    [req] = fake_openai.chat_requests
    assert req.stream and req.messages == HI


async def test_backend_stream_without_router(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text(STORY, chunk_size=20))
    assert "".join(await collect(make_llm().chat_stream(HI))) == STORY


async def test_stream_cut_halfway_raises_and_is_not_retried(
    fake_openai: FakeOpenAI, fake_openai_factory: Callable[[], FakeOpenAI], make_llm: Make, make_router: MakeRouter
) -> None:
    spare = fake_openai_factory()
    spare.default_reply = Reply.text("spare answer")
    fake_openai.script(Reply.cut(STORY, after_chunks=2, chunk_size=8), Reply.text("a retry would get this"))
    router = make_router([make_llm(name="main"), make_llm(spare, name="spare")], fallback=["spare"], max_retries=3)
    received: list[str] = []
    with pytest.raises(LLMStreamError) as info:
        async for chunk in router.chat_stream(HI):
            received.append(chunk)
    assert "".join(received) == STORY[:16]
    assert info.value.partial_text == STORY[:16]
    assert info.value.backend == "main"
    assert not info.value.retryable
    assert len(fake_openai.chat_requests) == 1  # no retry after text was yielded
    assert spare.chat_requests == []  # and no fallback either
    assert fake_openai.pending() == 1


async def test_stream_ending_without_finish_is_an_error(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    # the server closes the body cleanly but never sends a finish reason nor [DONE]
    fake_openai.script(Reply.cut(STORY, after_chunks=3, mode="eof", chunk_size=5))
    received: list[str] = []
    with pytest.raises(LLMStreamError) as info:
        async for chunk in make_llm().chat_stream(HI):
            received.append(chunk)
    assert "".join(received) == STORY[:15] == info.value.partial_text


async def test_failure_before_the_first_chunk_is_retried(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.error(500), Reply.rate_limited(retry_after=0.05), Reply.text(STORY))
    assert "".join(await collect(make_router(max_retries=2).chat_stream(HI))) == STORY
    assert len(fake_openai.chat_requests) == 3


async def test_stream_cut_before_any_text_is_retried(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.cut(STORY, after_chunks=0), Reply.text(STORY))
    assert "".join(await collect(make_router(max_retries=1).chat_stream(HI))) == STORY
    assert len(fake_openai.chat_requests) == 2


async def test_stream_falls_back_before_the_first_chunk(
    fake_openai: FakeOpenAI, fake_openai_factory: Callable[[], FakeOpenAI], make_llm: Make, make_router: MakeRouter
) -> None:
    spare = fake_openai_factory()
    spare.script(Reply.text("spare story", chunk_size=4))
    fake_openai.script(Reply.error(503), Reply.error(503))
    router = make_router([make_llm(name="main"), make_llm(spare, name="spare")], fallback=["spare"], max_retries=1)
    assert "".join(await collect(router.chat_stream(HI))) == "spare story"
    assert len(fake_openai.chat_requests) == 2 and len(spare.chat_requests) == 1


async def test_stream_errors_exhausted(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.error(500), Reply.error(500))
    with pytest.raises(LLMBackendError) as info:
        await collect(make_router(max_retries=1).chat_stream(HI))
    assert not isinstance(info.value, LLMStreamError)
    assert info.value.status_code == 500


async def test_a_stalled_stream_times_out_per_chunk(fake_openai: FakeOpenAI, make_llm: Make) -> None:
    fake_openai.script(Reply.text(STORY, chunk_size=10, chunk_delay=2.0))
    with pytest.raises(LLMTimeoutError):
        await collect(make_llm(timeout=0.3).chat_stream(HI))


async def test_streaming_does_not_block_the_event_loop(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.text(STORY, chunk_size=8, chunk_delay=0.05))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    task = asyncio.create_task(ticker())
    seen: list[int] = []
    try:
        async for _ in make_router().chat_stream(HI):
            seen.append(ticks)
    finally:
        task.cancel()
    assert len(seen) == -(-len(STORY) // 8)
    # the ticker kept running between chunks while the stream waited for the server (a blocking
    # client would let it run between none of them; a loaded machine may coalesce a few chunks)
    gaps = list(zip(seen, seen[1:], strict=False))
    assert sum(later > earlier for earlier, later in gaps) >= len(gaps) // 2
    assert seen[-1] - seen[0] >= len(gaps)


async def test_streams_hold_a_concurrency_slot(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.default_reply = Reply.text("x" * 40, chunk_size=10, chunk_delay=0.05)
    router = make_router(max_concurrency=1)
    texts = await asyncio.gather(*(collect(router.chat_stream(HI)) for _ in range(3)))
    assert ["".join(t) for t in texts] == ["x" * 40] * 3
    assert fake_openai.max_in_flight == 1


async def test_breaking_out_of_a_stream_releases_the_slot(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.default_reply = Reply.text(STORY, chunk_size=5)
    router = make_router(max_concurrency=1)
    stream = router.chat_stream(HI)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert (await router.chat(HI)).text == STORY
