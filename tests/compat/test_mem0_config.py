"""mem0's ``config`` dict read by the drop-in: an LLM it configures is the one called; each provider
becomes deepcontext's settings; what deepcontext cannot do is refused with the key and what to set."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest

from deepcontext import SyncDeepContext
from deepcontext.compat.mem0 import AsyncMemory, Memory
from deepcontext.errors import ValidationError
from deepcontext.llm import prompts
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

DIMS = 64


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user with no deepcontext settings and no provider keys in the environment; the hash
    embedder where the config names none, so nothing loads a model."""
    for key in list(os.environ):
        if key.startswith("DEEPCONTEXT_"):
            monkeypatch.delenv(key)
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENROUTER_API_BASE", "DEEPSEEK_API_KEY", "DEEPSEEK_API_BASE",
                "VLLM_BASE_URL", "VLLM_API_KEY"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DEEPCONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DEEPCONTEXT_EMBEDDER", "hash")


def _settings(config: Any, **kwargs: Any) -> Any:
    m = Memory(config, **kwargs)
    try:
        return m.context.settings
    finally:
        m.close()


def _secret(value: Any) -> str | None:
    return None if value is None else value.get_secret_value()


# --- the LLM the config names is the one called -------------------------------------------------------
def _extracting(body: dict[str, Any]) -> Reply:
    """One fact per user message for deepcontext's extraction prompt; other calls are not answered
    (the offline rules take over)."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    if not system.startswith(prompts.EXTRACT_SYSTEM[:60]):
        return Reply.error(404, "not scripted")
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    window = user.split("Messages to extract from:\n", 1)[1]
    facts = [
        {"text": f"Fact: {text}", "type": "semantic", "source_indices": [int(i)], "importance": 0.7, "confidence": 0.9}
        for i, text in re.findall(r"^\[(\d+)\] .*?User: (.*)$", window, flags=re.M)
    ]
    return Reply.json({"facts": facts, "entities": [], "relations": []})


def _server_config(server: FakeOpenAI, tmp_path: Path) -> dict[str, Any]:
    """A mem0 script's config, its OpenAI pointed at the fake server (as the side-by-side tests give mem0)."""
    openai = {"api_key": "sk-test", "openai_base_url": server.url}
    return {
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "qdrant"), "collection_name": "t"}},
        "embedder": {"provider": "openai", "config": {**openai, "embedding_dims": DIMS}},
        "llm": {"provider": "openai", "config": {**openai, "model": "fake-model", "temperature": 0.2}},
        "history_db_path": str(tmp_path / "history.db"),
    }


def test_the_configured_llm_extracts(fake_openai: FakeOpenAI, tmp_path: Path) -> None:  # noqa: F811
    fake_openai.responder = _extracting
    m = Memory.from_config(_server_config(fake_openai, tmp_path), llm_max_retries=0)
    try:
        out = m.add("I keep bees on the roof of my flat", user_id="alice")
        assert [r["memory"] for r in out["results"]] == ["Fact: I keep bees on the roof of my flat"]
        assert [r.model for r in fake_openai.chat_requests] and all(r.model == "fake-model" for r in fake_openai.chat_requests)
        assert fake_openai.embedding_requests, "the config's embedder is the fake server too"
        assert all(r.headers.get("authorization") == "Bearer sk-test" for r in fake_openai.requests)
    finally:
        m.close()


async def test_async_memory_reads_the_config(fake_openai: FakeOpenAI, tmp_path: Path) -> None:  # noqa: F811
    fake_openai.responder = _extracting
    async with AsyncMemory.from_config(_server_config(fake_openai, tmp_path), llm_max_retries=0) as m:
        out = await m.add("My sister is called Ana", user_id="bob")
        assert [r["memory"] for r in out["results"]] == ["Fact: My sister is called Ana"]
        assert m.context.settings.embedding_dimensions == DIMS
    assert fake_openai.chat_requests


# --- each provider as settings ------------------------------------------------------------------------
def _llm(provider: str, **config: Any) -> dict[str, Any]:
    return {"llm": {"provider": provider, "config": config}}


def _embedder(provider: str, **config: Any) -> dict[str, Any]:
    return {"embedder": {"provider": provider, "config": config}}


LLM_CASES = {
    "openai": (
        _llm("openai", model="gpt-4.1-mini", api_key="sk-a", max_tokens=500, top_p=0.5),
        {
            "llm_provider": "openai",
            "llm_model": "gpt-4.1-mini",
            "llm_base_url": None,
            "openai_api_key": "sk-a",
            "llm_api_key": None,
        },
    ),
    "openai-default-model": (_llm("openai", api_key="sk-a"), {"llm_model": "gpt-4o-mini", "openai_api_key": "sk-a"}),
    "openai-base-url": (
        _llm("openai", model="m", api_key="k", openai_base_url="http://gpu:9000/v1"),
        {"llm_provider": "openai", "llm_base_url": "http://gpu:9000/v1", "llm_api_key": "k", "openai_api_key": None},
    ),
    "ollama": (
        _llm("ollama"),
        {"llm_provider": "openai", "llm_base_url": "http://localhost:11434/v1", "llm_model": "llama3.1:70b"},
    ),
    "ollama-url": (
        _llm("ollama", model="qwen3", ollama_base_url="http://box:11434/"),
        {"llm_base_url": "http://box:11434/v1", "llm_model": "qwen3"},
    ),
    "lmstudio": (
        _llm("lmstudio", model="m"),
        {"llm_provider": "openai", "llm_base_url": "http://localhost:1234/v1", "llm_model": "m"},
    ),
    "vllm": (
        _llm("vllm", api_key="v"),
        {"llm_base_url": "http://localhost:8000/v1", "llm_model": "Qwen/Qwen2.5-32B-Instruct", "llm_api_key": "v"},
    ),
    "deepseek": (
        _llm("deepseek", api_key="d", deepseek_base_url="https://ds.example/v1"),
        {"llm_base_url": "https://ds.example/v1", "llm_model": "deepseek-chat", "llm_api_key": "d"},
    ),
    "litellm": (
        _llm("litellm", model="anthropic/claude-3-5-haiku"),
        {"llm_provider": "litellm", "llm_model": "anthropic/claude-3-5-haiku"},
    ),
}


@pytest.mark.parametrize("config, expected", LLM_CASES.values(), ids=list(LLM_CASES))
def test_llm_providers(config: dict[str, Any], expected: dict[str, Any]) -> None:
    s = _settings(config)
    for name, value in expected.items():
        got = getattr(s, name)
        got = got.value if hasattr(got, "value") else _secret(got) if name.endswith("api_key") else got
        assert got == value, name


def test_openai_goes_to_openrouter_with_its_key_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # as mem0's openai llm does when OPENROUTER_API_KEY is set
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    s = _settings(_llm("openai", model="openai/gpt-4o-mini"))
    assert (s.llm_provider.value, s.llm_model, _secret(s.openrouter_api_key)) == ("openrouter", "openai/gpt-4o-mini", "or-key")


def test_the_config_wins_over_the_environment_and_keywords_over_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPCONTEXT_LLM_BASE_URL", "http://elsewhere:1/v1")
    monkeypatch.setenv("DEEPCONTEXT_LLM_MODEL", "env-model")
    config = _llm("openai", model="gpt-4.1-mini", api_key="sk-a")
    s = _settings(config)
    assert (s.llm_base_url, s.llm_model) == (None, "gpt-4.1-mini")
    assert _settings(config, llm_model="x").llm_model == "x"
    # a keyword choosing the backend replaces the config's section, unknown providers included
    s = _settings(_llm("anthropic", model="claude-3-5-haiku"), llm_provider="litellm", llm_model="anthropic/claude-3-5-haiku")
    assert (s.llm_provider.value, s.llm_model) == ("litellm", "anthropic/claude-3-5-haiku")
    assert _settings(_embedder("gemini"), embedder="hash").embedder.value == "hash"


EMBEDDER_CASES = {
    "openai": (
        _embedder("openai", model="text-embedding-3-large", embedding_dims=256, api_key="e", openai_base_url="http://emb/v1"),
        {"embedder": "openai", "embedding_model": "text-embedding-3-large", "embedding_dimensions": 256,
         "embedding_api_key": "e", "embedding_base_url": "http://emb/v1"},
    ),
    "openai-default-model": (
        _embedder("openai", api_key="e"),
        {"embedder": "openai", "embedding_model": "text-embedding-3-small", "embedding_base_url": None},
    ),
    "ollama": (
        _embedder("ollama", ollama_base_url="http://box:11434", embedding_dims=768),
        {"embedder": "openai", "embedding_base_url": "http://box:11434/v1", "embedding_model": "nomic-embed-text",
         "embedding_dimensions": None},
    ),
    "huggingface-default": (_embedder("huggingface"), {"embedder": "local", "embedding_model": "all-MiniLM-L6-v2"}),
    "huggingface-minilm": (
        _embedder("huggingface", model="sentence-transformers/all-MiniLM-L6-v2", embedding_dims=384),
        {"embedder": "local"},
    ),
    "huggingface-tei": (
        _embedder("huggingface", huggingface_base_url="http://tei:8080/v1"),
        {"embedder": "openai", "embedding_base_url": "http://tei:8080/v1", "embedding_model": "tei"},
    ),
    "lmstudio": (
        _embedder("lmstudio", model="nomic"),
        {"embedder": "openai", "embedding_base_url": "http://localhost:1234/v1", "embedding_model": "nomic"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("config, expected", EMBEDDER_CASES.values(), ids=list(EMBEDDER_CASES))
def test_embedder_providers(config: dict[str, Any], expected: dict[str, Any]) -> None:
    s = _settings(config)
    for name, value in expected.items():
        got = getattr(s, name)
        got = got.value if hasattr(got, "value") else _secret(got) if name.endswith("api_key") else got
        assert got == value, name


@pytest.mark.parametrize(
    "config, url",
    [
        (
            {"user": "u", "password": "p@ss word", "host": "db", "port": 5433, "dbname": "mem"},
            "postgresql://u:p%40ss%20word@db:5433/mem",
        ),
        (
            {"user": "u", "password": "p", "port": 5432, "sslmode": "require"},
            "postgresql://u:p@localhost:5432/postgres?sslmode=require",
        ),
        ({"connection_string": "postgresql://a:b@h:1/d"}, "postgresql://a:b@h:1/d"),
        (
            {"connection_string": "host=h port=6 dbname=d user=a password='x y' sslmode=disable"},
            "postgresql://a:x%20y@h:6/d?sslmode=disable",
        ),
    ],
    ids=["fields", "sslmode", "url", "keyword-value"],
)
def test_pgvector_becomes_the_database_url(config: dict[str, Any], url: str) -> None:
    s = _settings({"vector_store": {"provider": "pgvector", "config": {**config, "collection_name": "c", "hnsw": True}}})
    assert s.database_url == url


def test_mem0s_memory_config_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # read by mem0 when it is first imported: no telemetry, its home folder in the test's
    monkeypatch.setenv("MEM0_TELEMETRY", "false")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))
    pytest.importorskip("mem0")
    from deepcontext_bench.mem0_peer import network_guard

    with network_guard():
        from mem0.configs.base import MemoryConfig
        from mem0.llms.configs import LlmConfig

    config = MemoryConfig(llm=LlmConfig(provider="ollama", config={"model": "qwen3"}))
    s = _settings(config)
    assert (s.llm_base_url, s.llm_model, s.embedder.value) == ("http://localhost:11434/v1", "qwen3", "hash")


def test_storage_and_reranker_are_accepted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    config = {
        "vector_store": {"provider": "chroma", "config": {"collection_name": "notes"}},
        "history_db_path": "/somewhere/history.db",
        "reranker": {"provider": "cohere", "config": {"api_key": "c"}},
        "version": "v1.1",
    }
    with caplog.at_level(logging.INFO, logger="deepcontext"):
        s = _settings(config, database_url="postgresql://me:secret@db/mem")
    lines = [r.getMessage() for r in caplog.records if "compat.mem0" in r.getMessage()]
    assert lines == [
        "deepcontext.compat.mem0: the config's vector_store (chroma, collection 'notes') and history_db_path are not "
        "used: memories, vectors and history are kept in postgresql://me:***@db/mem (database_url)",
        "deepcontext.compat.mem0: the config's reranker (cohere) is not used: every search is rescored",
    ]
    assert s.database_url == "postgresql://me:secret@db/mem"


def test_a_given_engine_takes_a_config_that_asks_nothing(tmp_path: Path) -> None:
    ctx = SyncDeepContext(database_url=f"sqlite:///{tmp_path / 'e.db'}", embedder="hash")
    try:
        m = Memory({"version": "v1.1", "vector_store": {"provider": "qdrant"}}, context=ctx)
        assert m.context is ctx
        with pytest.raises(ValidationError, match=r"asks for llm_base_url, llm_model, llm_provider, but context= is an engine"):
            Memory(_llm("ollama"), context=ctx)
        with pytest.raises(ValidationError, match="asks for llm_base_url"):
            AsyncMemory(_llm("ollama"), context=ctx.async_context)
    finally:
        ctx.close()


# --- refusals -----------------------------------------------------------------------------------------
REFUSALS = {
    "unknown-key": ({"llm": {}, "vector_stores": {}}, "vector_stores", r"unknown mem0 config key 'vector_stores'; known: llm, embedder, vector_store"),
    "llm-provider": (_llm("anthropic", model="claude-3-5-haiku"), "llm.provider",
                     r"'anthropic' is not available here: pass llm_provider='litellm', llm_model='anthropic/claude-3-5-haiku'"),
    "llm-key": (_llm("ollama", openai_base_url="http://x"), "llm.config.openai_base_url", r"not a setting of mem0's ollama llm"),
    "vision": (_llm("openai", api_key="k", enable_vision=True), "llm.config.enable_vision", r"images in messages are not described"),
    "proxies": (_llm("openai", api_key="k", http_client_proxies="http://proxy:3128"), "llm.config.http_client_proxies", r"HTTPS_PROXY"),
    "openrouter-models": (_llm("openai", api_key="k", models=["a", "b"]), "llm.config.models", r"llm_backends with llm_fallback"),
    "no-openai-key": (_llm("openai", model="gpt-4o-mini"), "llm.config.api_key", r"has no API key: set llm.config.api_key or OPENAI_API_KEY"),
    "no-deepseek-key": (_llm("deepseek"), "llm.config.api_key", r"DEEPSEEK_API_KEY"),
    "hf-model": (_embedder("huggingface", model="BAAI/bge-small-en-v1.5"), "embedder.config.model",
                 r"'BAAI/bge-small-en-v1.5' is not available: .*all-MiniLM-L6-v2 only; .*embedder='openai' with embedding_base_url="),
    "hf-dims": (_embedder("huggingface", embedding_dims=768), "embedder.config.embedding_dims", r"384 dimensions"),
    "embedder-provider": (_embedder("gemini"), "embedder.provider", r"'gemini' is not available here: .*embedder='openai'"),
    "embedder-key": (_embedder("openai", modell="x"), "embedder.config.modell", r"not a setting of mem0's embedders"),
    "no-embedding-key": (_embedder("openai"), "embedder.config.api_key", r"embedder \(openai\) has no API key"),
    "fact-prompt": ({"custom_fact_extraction_prompt": "Extract…"}, "custom_fact_extraction_prompt", r"not supported: deepcontext extracts memories with its own prompts"),
    "update-prompt": ({"custom_update_memory_prompt": "Update…"}, "custom_update_memory_prompt", r"not supported"),
    "instructions": ({"custom_instructions": "Only food."}, "custom_instructions", r"not supported"),
    "graph": ({"graph_store": {"provider": "neo4j", "config": {"url": "bolt://x"}}}, "graph_store", r"graph_store is not supported: deepcontext links related memories"),
    "pgvector-fields": ({"vector_store": {"provider": "pgvector", "config": {"dbname": "d"}}}, "vector_store.config", r"needs connection_string"),
    "pgvector-pool": ({"vector_store": {"provider": "pgvector", "config": {"connection_pool": object()}}}, "vector_store.config.connection_pool", r"not supported"),
    "section": ({"llm": "openai"}, "llm", r"llm must be a dict with 'provider' and 'config'"),
}  # fmt: skip


@pytest.mark.parametrize("config, field, message", REFUSALS.values(), ids=list(REFUSALS))
def test_refusals(config: dict[str, Any], field: str, message: str) -> None:
    for build in (lambda: Memory(config), lambda: Memory.from_config(config), lambda: AsyncMemory.from_config(config)):
        with pytest.raises(ValidationError, match=message) as info:
            build()
        assert info.value.field == field
        assert isinstance(info.value, ValueError)  # what mem0 raises for a bad config


def test_ignored_values_are_accepted() -> None:
    # empty prompt keys and a graph_store without a provider ask for nothing
    config = {"custom_instructions": None, "custom_fact_extraction_prompt": "", "graph_store": {}, "llm": None}
    assert _settings(config).llm_model == "gpt-4o-mini"
    asyncio.run(AsyncMemory(config).close())


def test_no_config_is_the_default() -> None:
    for config in (None, {}):
        s = _settings(config)
        assert (s.llm_provider.value, s.embedder.value, s.database_url) == ("openai", "hash", "")
