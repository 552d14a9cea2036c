"""build_llm from settings and the environment; keys never leak into errors, reprs or logs."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from deepcontext.errors import ConfigurationError, LLMBackendError
from deepcontext.llm import OpenAICompatibleLLM, Router, build_llm
from deepcontext.llm.openai_compat import OPENROUTER_BASE_URL
from deepcontext.settings import DeepContextSettings, JSONMode
from tests.support.fake_openai import FakeOpenAI, Reply

HI = [{"role": "user", "content": "hi"}]
SECRET = "sk-secret-do-not-leak-42"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> pytest.MonkeyPatch:
    """No DEEPCONTEXT_* or provider keys from the machine; no .env file in the working directory."""
    import os

    for name in list(os.environ):
        if name.startswith("DEEPCONTEXT_") or name in ("OPENAI_API_KEY", "OPENROUTER_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


@pytest.fixture
async def built() -> AsyncIterator[Callable[[DeepContextSettings], Router | None]]:
    routers: list[Router] = []

    def build(settings: DeepContextSettings) -> Router | None:
        router = build_llm(settings)
        if router is not None:
            routers.append(router)
        return router

    yield build
    for r in routers:
        await r.aclose()


def backend(router: Router | None, name: str) -> OpenAICompatibleLLM:
    assert router is not None
    b = router.backends[name]
    assert isinstance(b, OpenAICompatibleLLM)
    return b


def test_no_key_and_no_base_url_means_offline(clean_env: pytest.MonkeyPatch) -> None:
    assert build_llm(DeepContextSettings()) is None
    assert build_llm(DeepContextSettings(llm_provider="openrouter")) is None
    assert build_llm(DeepContextSettings(llm_provider="none", openai_api_key="sk-x")) is None


async def test_seed_openai_key_and_base_url(clean_env: pytest.MonkeyPatch, fake_openai: FakeOpenAI, built) -> None:  # type: ignore[no-untyped-def]
    settings = DeepContextSettings(openai_api_key="sk-seed-key", llm_base_url=fake_openai.url, llm_model="my-model")
    router = built(settings)
    b = backend(router, "openai")
    assert b.model == "my-model" and router.default == "openai"
    fake_openai.script(Reply.text("hello"))
    assert (await router.chat(HI)).text == "hello"
    [req] = fake_openai.chat_requests
    assert req.headers["authorization"] == "Bearer sk-seed-key"
    assert req.model == "my-model"


async def test_bare_openai_api_key_variable_is_honoured(clean_env: pytest.MonkeyPatch, built) -> None:  # type: ignore[no-untyped-def]
    clean_env.setenv("OPENAI_API_KEY", "sk-bare")
    router = built(DeepContextSettings())
    assert backend(router, "openai").base_url is None  # api.openai.com, the SDK's default


async def test_openrouter_uses_its_url_and_key(clean_env: pytest.MonkeyPatch, fake_openai: FakeOpenAI, built) -> None:  # type: ignore[no-untyped-def]
    router = built(
        DeepContextSettings(
            llm_provider="openrouter", openrouter_api_key="sk-or-key", openai_api_key="sk-openai-key", llm_model="a/b"
        )
    )
    assert backend(router, "openrouter").base_url == OPENROUTER_BASE_URL
    # pointed at the fake server, the request carries the OpenRouter key, not the OpenAI one
    routed = built(
        DeepContextSettings(
            llm_provider="openrouter",
            openrouter_api_key="sk-or-key",
            openai_api_key="sk-openai-key",
            llm_base_url=fake_openai.url,
        )
    )
    fake_openai.script(Reply.text("via openrouter"))
    assert (await routed.chat(HI)).text == "via openrouter"
    assert fake_openai.chat_requests[0].headers["authorization"] == "Bearer sk-or-key"


async def test_backends_fallback_and_limits_from_env(
    clean_env: pytest.MonkeyPatch,
    fake_openai: FakeOpenAI,
    fake_openai_factory: Callable[[], FakeOpenAI],
    built,  # type: ignore[no-untyped-def]
) -> None:
    spare = fake_openai_factory()
    backends = [
        {"name": "local", "base_url": fake_openai.url, "model": "qwen3", "timeout": 7, "max_retries": 0},
        {"name": "spare", "base_url": spare.url, "model": "llama", "api_key": "sk-spare", "json_mode": "prompt"},
    ]
    clean_env.setenv("DEEPCONTEXT_LLM_BACKENDS", json.dumps(backends))
    clean_env.setenv("DEEPCONTEXT_LLM_FALLBACK", "spare")
    clean_env.setenv("DEEPCONTEXT_LLM_MAX_CONCURRENCY", "3")
    clean_env.setenv("DEEPCONTEXT_LLM_MAX_RETRIES", "4")
    clean_env.setenv("DEEPCONTEXT_LLM_JSON_MODE", "json_object")
    settings = DeepContextSettings()
    router = built(settings)
    assert router.default == "local" and router.fallback == ["spare"]
    assert router.max_concurrency == 3 and router.max_retries == 4
    local, sp = backend(router, "local"), backend(router, "spare")
    assert (local.timeout, local.max_retries, local.json_mode) == (7, 0, JSONMode.JSON_OBJECT)
    assert (sp.timeout, sp.max_retries, sp.json_mode) == (settings.llm_timeout, None, JSONMode.PROMPT)
    fake_openai.script(Reply.error(500))
    spare.script(Reply.text("spare"))
    assert (await router.chat(HI)).backend == "spare"
    assert len(fake_openai.chat_requests) == 1  # local: max_retries 0
    assert spare.chat_requests[0].headers["authorization"] == "Bearer sk-spare"
    # a listed backend with its own base_url never receives the OpenAI key
    assert "sk-" not in fake_openai.chat_requests[0].headers["authorization"]


def test_fallback_accepts_json_or_commas(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("DEEPCONTEXT_LLM_FALLBACK", '["a", "b"]')
    assert DeepContextSettings().llm_fallback == ["a", "b"]
    assert DeepContextSettings(llm_fallback="a, b ,c").llm_fallback == ["a", "b", "c"]


def test_bad_backend_configs_are_rejected(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(PydanticValidationError):
        DeepContextSettings(llm_backends=[{"name": "x", "model": "m"}, {"name": "x", "model": "n"}])
    with pytest.raises(PydanticValidationError):
        DeepContextSettings(llm_backends=[{"name": "x", "model": "m", "provider": "none"}])
    with pytest.raises(PydanticValidationError):
        DeepContextSettings(llm_backends=[{"name": "x", "model": "m", "temperature": 3}])
    with pytest.raises(ConfigurationError, match="nope"):
        build_llm(DeepContextSettings(openai_api_key="sk-x", llm_fallback=["nope"]))
    with pytest.raises(ConfigurationError, match="no API key"):
        build_llm(DeepContextSettings(llm_provider="none", llm_backends=[{"name": "x", "model": "m"}]))


def test_litellm_provider_without_litellm_says_how_to_install(
    clean_env: pytest.MonkeyPatch,
) -> None:
    import sys

    clean_env.setitem(sys.modules, "litellm", None)  # as if it were not installed
    with pytest.raises(ConfigurationError, match="pip install"):
        build_llm(DeepContextSettings(llm_provider="litellm", llm_model="ollama/qwen3"))


async def test_keys_never_leak(
    clean_env: pytest.MonkeyPatch,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
    built,  # type: ignore[no-untyped-def]
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = DeepContextSettings(
        openai_api_key=SECRET,
        llm_base_url=fake_openai.url,
        llm_backends=[{"name": "other", "model": "m", "base_url": fake_openai.url, "api_key": SECRET + "-2"}],
        llm_fallback=["other"],
        llm_max_retries=1,
        llm_retry_max_wait=0.01,
    )
    router = built(settings)
    # the server echoes the key in its error, as OpenAI does for a wrong key
    fake_openai.default_reply = Reply.error(500, f"Incorrect API key provided: {SECRET}. Or {SECRET}-2?")
    with pytest.raises(LLMBackendError) as info:
        await router.chat(HI)
    assert len(fake_openai.chat_requests) == 4
    seen = [
        str(info.value),
        repr(info.value),
        *(str(e) for e in info.value.failures),  # type: ignore[attr-defined]
        repr(router),
        repr(settings),
        str(settings.redacted()),
        caplog.text,
    ]
    assert "Incorrect API key provided" in str(info.value)
    for text in seen:
        assert SECRET not in text
