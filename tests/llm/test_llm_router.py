"""The router: retries with backoff on timeouts, 429 (Retry-After) and 5xx, fallback, concurrency."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

import pytest

from deepcontext.errors import ConfigurationError, LLMBackendError, LLMRateLimitError, LLMTimeoutError, ValidationError
from deepcontext.llm import LLMError, OpenAICompatibleLLM, Router, backoff_delay
from tests.support.fake_openai import FakeOpenAI, Reply

Make = Callable[..., OpenAICompatibleLLM]
MakeRouter = Callable[..., Router]
HI = [{"role": "user", "content": "hi"}]


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    rng = random.Random(7)
    delays = [backoff_delay(n, base=1.0, max_wait=100.0, rng=rng) for n in (1, 2, 3, 4)]
    for n, d in zip((1, 2, 3, 4), delays, strict=True):
        full = 2 ** (n - 1)
        assert full / 2 <= d <= full
    assert backoff_delay(20, base=1.0, max_wait=5.0) == 5.0
    # Retry-After is a floor, max_wait a ceiling
    assert backoff_delay(1, base=0.01, retry_after=2.0, max_wait=30.0) == 2.0
    assert backoff_delay(1, base=0.01, retry_after=120.0, max_wait=3.0) == 3.0


async def test_500_then_success_is_retried(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.error(500), Reply.error(502), Reply.text("finally"))
    completion = await make_router(max_retries=2).chat(HI)
    assert completion.text == "finally"
    assert completion.attempts == 3
    assert len(fake_openai.chat_requests) == 3


async def test_5xx_retries_exhausted_raise_backend_error(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(*[Reply.error(503)] * 3)
    with pytest.raises(LLMBackendError) as info:
        await make_router(max_retries=2).chat(HI)
    assert info.value.status_code == 503
    assert info.value.attempts == 3
    assert "3 attempt(s)" in str(info.value)
    assert len(fake_openai.chat_requests) == 3


async def test_timeout_then_success(fake_openai: FakeOpenAI, make_llm: Make, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.slow(3.0), Reply.text("quick"))
    router = make_router([make_llm(name="main", timeout=0.3)], max_retries=1)
    completion = await router.chat(HI)
    assert completion.text == "quick"
    first, second = fake_openai.chat_requests
    assert first.messages == second.messages == HI


async def test_timeouts_exhausted_raise_timeout_error(fake_openai: FakeOpenAI, make_llm: Make, make_router: MakeRouter) -> None:
    fake_openai.script(*[Reply.slow(3.0)] * 3)
    router = make_router([make_llm(name="main", timeout=0.2)], max_retries=2)
    with pytest.raises(LLMTimeoutError) as info:
        await router.chat(HI)
    assert isinstance(info.value, LLMError) and isinstance(info.value, TimeoutError)  # as in Memory Graph
    assert info.value.attempts == 3 and info.value.backend == "main"
    assert len(fake_openai.chat_requests) == 3


async def test_request_timeout_overrides_the_backend_default(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.slow(3.0))
    with pytest.raises(LLMTimeoutError):
        await make_router(max_retries=0).chat(HI, timeout=0.2)
    assert len(fake_openai.chat_requests) == 1


async def test_429_waits_at_least_retry_after(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.rate_limited(retry_after=1), Reply.text("ok"))
    started = time.monotonic()
    completion = await make_router(max_retries=1, backoff_base=0.01).chat(HI)
    elapsed = time.monotonic() - started
    assert completion.text == "ok"
    first, second = fake_openai.chat_requests
    assert second.received_at - first.received_at >= 1.0
    assert elapsed >= 1.0


async def test_retry_after_is_capped_by_max_wait(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.rate_limited(retry_after=60), Reply.text("ok"))
    started = time.monotonic()
    assert (await make_router(max_retries=1, max_wait=0.2).chat(HI)).text == "ok"
    assert time.monotonic() - started < 30  # did not sit out the advertised minute


async def test_429_exhausted_keeps_retry_after(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.rate_limited(retry_after=0.05), Reply.rate_limited(retry_after=0.05))
    with pytest.raises(LLMRateLimitError) as info:
        await make_router(max_retries=1).chat(HI)
    assert info.value.retry_after == pytest.approx(0.05)
    assert info.value.status_code == 429


async def test_client_errors_are_not_retried(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.script(Reply.error(404, "model not found"), Reply.text("never"))
    with pytest.raises(LLMBackendError) as info:
        await make_router(max_retries=3).chat(HI)
    assert info.value.status_code == 404
    assert "model not found" in str(info.value)
    assert len(fake_openai.chat_requests) == 1
    assert fake_openai.pending() == 1


async def test_fallback_to_a_second_backend(
    fake_openai: FakeOpenAI, fake_openai_factory: Callable[[], FakeOpenAI], make_llm: Make, make_router: MakeRouter
) -> None:
    second = fake_openai_factory()
    fake_openai.script(Reply.error(500), Reply.error(500))
    second.script(Reply.text("from the spare"))
    router = make_router(
        [make_llm(name="primary"), make_llm(second, name="spare", model="spare-model")],
        fallback=["spare"],
        max_retries=1,
    )
    completion = await router.chat(HI)
    assert completion.text == "from the spare"
    assert completion.backend == "spare"
    assert completion.attempts == 3
    assert len(fake_openai.chat_requests) == 2
    [req] = second.chat_requests
    assert req.model == "spare-model" and req.messages == HI


async def test_a_request_can_pick_its_backend(
    fake_openai: FakeOpenAI, fake_openai_factory: Callable[[], FakeOpenAI], make_llm: Make, make_router: MakeRouter
) -> None:
    second = fake_openai_factory()
    second.script(Reply.text("picked"))
    router = make_router([make_llm(name="a"), make_llm(second, name="b")])
    assert (await router.chat(HI, backend="b")).backend == "b"
    assert fake_openai.chat_requests == []
    with pytest.raises(ValidationError):
        await router.chat(HI, backend="nope")
    # and its own fallback order (Memory Graph's fallback_order)
    fake_openai.script(Reply.error(500))
    second.script(Reply.text("rescued"))
    completion = await router.chat(HI, backend="a", fallback=["b"])
    assert (completion.text, completion.backend) == ("rescued", "b")
    with pytest.raises(ValidationError):
        await router.chat(HI, fallback=["nope"])


async def test_per_backend_max_retries(fake_openai: FakeOpenAI, make_llm: Make, make_router: MakeRouter) -> None:
    fake_openai.script(*[Reply.error(500)] * 5)
    router = make_router([make_llm(name="main", max_retries=0)], max_retries=4)
    with pytest.raises(LLMBackendError):
        await router.chat(HI)
    assert len(fake_openai.chat_requests) == 1


async def test_concurrency_limit(fake_openai: FakeOpenAI, make_router: MakeRouter) -> None:
    fake_openai.default_reply = Reply.slow(0.2, "done")
    router = make_router(max_concurrency=2)
    results = await asyncio.gather(*(router.chat(HI) for _ in range(6)))
    assert [r.text for r in results] == ["done"] * 6
    assert len(fake_openai.chat_requests) == 6
    assert fake_openai.max_in_flight == 2


def test_router_configuration_is_validated(make_llm: Make) -> None:
    a = make_llm(name="a")
    with pytest.raises(ConfigurationError):
        Router([])
    with pytest.raises(ConfigurationError):
        Router([a], fallback=["missing"])
    with pytest.raises(ConfigurationError):
        Router([a, make_llm(name="a")])
    router = Router([a, make_llm(name="b")], default="b", fallback=["a", "b"])
    assert router.order() == ["b", "a"]
    assert router.order("a") == ["a", "b"]  # the fallback order follows the chosen backend
