"""When the LLM fails during `add`: nothing is half-applied, the caller sees an LLMError, retries and
a second backend are used, and the opt-in offline fallback keeps the turns."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from deepcontext import DeepContext
from deepcontext.errors import LLMBackendError, LLMError, LLMResponseError, LLMValidationError
from deepcontext.llm import OpenAICompatibleLLM, Router
from tests.llm_e2e.conftest import KEY, Brain, MakeCtx, decisions, extraction, fact, user
from tests.support.fake_openai import FakeOpenAI, Reply

CHAT = user("I'm a data engineer at Acme.", "I live in Lisbon.")
GOOD = extraction(fact("Ana works at Acme as a data engineer", 0), fact("Ana lives in Lisbon", 1))


def nothing(stats: dict[str, int]) -> bool:
    return all(v == 0 for v in stats.values())


async def test_an_invalid_extraction_after_the_repair_writes_nothing(ctx: DeepContext, brain: Brain) -> None:
    brain.extract(Reply.text("Sure! Ana works at Acme."), {"facts": "Ana works at Acme"})
    with pytest.raises(LLMValidationError) as caught:
        await ctx.add(CHAT, user_id="ana")
    assert "after one repair attempt" in str(caught.value) and len(brain.seen["extract"]) == 2
    assert nothing(await ctx.stats("ana"))
    assert await ctx.users() == []
    # the same add goes through once the LLM answers properly
    brain.extract(GOOD)
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added == 4 and (await ctx.stats("ana"))["turns"] == 2


async def test_an_invalid_classification_writes_nothing(ctx: DeepContext, brain: Brain) -> None:
    brain.extract(GOOD)
    await ctx.add(CHAT, user_id="ana")
    before = await ctx.stats("ana")
    brain.extract(extraction(fact("Ana lives in Porto now", 0)))
    brain.classify(Reply.text("<think>hmm</think>"), Reply.json({"decisions": [{"action": "REPLACE"}]}))
    with pytest.raises(LLMResponseError):
        await ctx.add(user("I moved to Porto."), user_id="ana")
    assert len(brain.seen["classify"]) == 2  # the answer and its one repair
    assert await ctx.stats("ana") == before  # not even the turn
    page = await ctx.list("ana", include_inactive=True)
    assert all(m.is_active for m in page.memories) and "Ana lives in Lisbon" in {m.text for m in page.memories}


async def test_a_backend_that_stays_down_raises_after_its_retries_and_writes_nothing(ctx: DeepContext, brain: Brain) -> None:
    brain.defaults["extract"] = Reply.error(503, "overloaded")
    with pytest.raises(LLMBackendError) as caught:
        await ctx.add(CHAT, user_id="ana")
    assert caught.value.status_code == 503 and caught.value.attempts == 3  # the call and two retries
    assert len(brain.seen["extract"]) == 3
    assert nothing(await ctx.stats("ana"))


async def test_timeouts_and_429_are_retried_within_the_add(make_ctx: MakeCtx, brain: Brain, fake_openai: FakeOpenAI) -> None:
    router = Router(
        [OpenAICompatibleLLM("fake-model", name="main", base_url=fake_openai.url, api_key=KEY, timeout=0.5)],
        backoff_base=0.01,
        max_retries=2,
    )
    try:
        ctx = await make_ctx(llm=router)
        brain.extract(Reply.slow(3.0, "too late"), Reply.rate_limited(retry_after=0.05), GOOD)
        r = await ctx.add(CHAT, user_id="ana")
        assert r.memories_added == 4 and len(brain.seen["extract"]) == 3
        assert {m.text for m in (await ctx.list("ana", tier="short_term")).memories} == {
            "Ana works at Acme as a data engineer",
            "Ana lives in Lisbon",
        }
    finally:
        await router.aclose()


@pytest.fixture
async def second_server(fake_openai_factory: Callable[[], FakeOpenAI]) -> AsyncIterator[FakeOpenAI]:
    yield fake_openai_factory()


async def test_a_failing_primary_falls_back_to_the_second_backend(
    make_ctx: MakeCtx, brain: Brain, fake_openai: FakeOpenAI, second_server: FakeOpenAI
) -> None:
    spare = Brain(second_server)
    ctx = await make_ctx(
        llm_provider="none",
        llm_backends=[
            {"name": "primary", "model": "fake-model", "base_url": fake_openai.url, "api_key": KEY},
            {"name": "spare", "model": "spare-model", "base_url": second_server.url, "api_key": KEY},
        ],
        llm_fallback=["spare"],
        llm_max_retries=0,
        # short enough for the slow primary to time out, long enough for the spare on a loaded machine
        llm_timeout=2.0,
    )
    assert isinstance(ctx.llm, Router) and ctx.llm.order() == ["primary", "spare"]
    brain.extract(Reply.slow(6.0))  # the primary times out ...
    spare.extract(GOOD)  # ... the spare answers
    r = await ctx.add(CHAT, user_id="ana")
    assert r.memories_added == 4
    assert len(brain.seen["extract"]) == 1 and len(spare.seen["extract"]) == 1
    assert spare.seen["extract"][0]["model"] == "spare-model"

    brain.extract(Reply.error(500))  # then it fails: the spare classifies too
    brain.classify(Reply.error(500))
    spare.extract(extraction(fact("Ana lives in Porto", 0)))
    lisbon = {m.text: m.id for m in (await ctx.list("ana", tier="short_term")).memories}["Ana lives in Lisbon"]
    spare.classify(decisions({"candidate": 0, "action": "REPLACE", "memory_id": lisbon}))
    r = await ctx.add(user("I moved to Porto."), user_id="ana")
    assert r.memories_replaced == 1 and (await ctx.get(lisbon, "ana")).status.value == "superseded"


async def test_offline_fallback_when_enabled_keeps_the_turns_and_uses_the_rules(
    make_ctx: MakeCtx, router: Router, brain: Brain
) -> None:
    ctx = await make_ctx(llm=router, llm_offline_fallback=True)
    brain.defaults["extract"] = Reply.error(503)
    r = await ctx.add(user("I'm a data engineer at Acme."), user_id="ana")
    assert len(r.turn_ids) == 1 and r.semantic_facts  # the rules extracted something
    facts = (await ctx.list("ana", tier="short_term")).memories
    assert facts and {m.source for m in facts} == {"rules"}

    # extraction works again but classification is down: the offline rule decides
    del brain.defaults["extract"]
    brain.extract(extraction(fact("Ana enjoys hiking in the Alps", 0)))
    brain.defaults["classify"] = Reply.error(503)
    r = await ctx.add(user("I enjoy hiking in the Alps."), user_id="ana")
    assert r.memories_added == 2 and len(brain.seen["classify"]) == 3
    hiking = [m for m in (await ctx.list("ana", tier="short_term")).memories if m.source == "llm"]
    assert [m.text for m in hiking] == ["Ana enjoys hiking in the Alps"]


async def test_llm_errors_are_deepcontext_errors(ctx: DeepContext, brain: Brain) -> None:
    from deepcontext import DeepContextError

    brain.extract(Reply.text(""), Reply.text(""))
    with pytest.raises(LLMError) as caught:
        await ctx.add(CHAT, user_id="ana")
    assert isinstance(caught.value, DeepContextError)
    assert KEY not in str(caught.value)
