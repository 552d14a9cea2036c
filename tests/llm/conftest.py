"""Fixtures for the LLM tests: the fake OpenAI-compatible server and LLMs pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from deepcontext.llm import LLM, OpenAICompatibleLLM, Router
from tests.llm.helpers import TEST_KEY
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import fake_openai, fake_openai_factory, fake_openai_server  # noqa: F401


@pytest.fixture
async def make_llm(fake_openai: FakeOpenAI) -> AsyncIterator[Callable[..., OpenAICompatibleLLM]]:  # noqa: F811
    """Build OpenAI-compatible backends pointed at a fake server (the shared one by default)."""
    made: list[LLM] = []

    def make(server: FakeOpenAI | None = None, **kw: Any) -> OpenAICompatibleLLM:
        kw.setdefault("api_key", TEST_KEY)
        kw.setdefault("timeout", 5.0)
        llm = OpenAICompatibleLLM(kw.pop("model", "fake-model"), base_url=(server or fake_openai).url, **kw)
        made.append(llm)
        return llm

    yield make
    for llm in made:
        await llm.aclose()


@pytest.fixture
async def make_router(make_llm: Callable[..., OpenAICompatibleLLM]) -> AsyncIterator[Callable[..., Router]]:
    """Build routers over fake backends, with short backoffs so retries stay fast."""
    made: list[Router] = []

    def make(backends: Any = None, **kw: Any) -> Router:
        kw.setdefault("backoff_base", 0.01)
        kw.setdefault("seed", 1)
        router = Router(backends if backends is not None else [make_llm(name="main")], **kw)
        made.append(router)
        return router

    yield make
    for router in made:
        await router.aclose()
