"""`bench locomo` reports search latency for every system it measures, each paying for the
question's embedding as a caller would: the embeddings come from the fake OpenAI-compatible server,
every answer held back 40 ms, so a figure that leaves the embedding out stays far below that."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepcontext_bench.locomo import run_locomo
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

DATA = Path(__file__).with_name("mini_locomo.json")
DELAY_MS = 40.0


@pytest.mark.slow  # one of the longest tests
async def test_every_system_reports_search_latency_with_the_query_embedding(tmp_path: Path, fake_openai: FakeOpenAI) -> None:  # noqa: F811
    fake_openai.script(*[Reply.text("", delay=DELAY_MS / 1000) for _ in range(400)], endpoint="embeddings")
    settings = {
        "embedder": "openai",
        "embedding_base_url": fake_openai.url,
        "embedding_api_key": "sk-test",
        "embedding_model": "text-embedding-3-small",
        "embedding_dimensions": 64,
    }
    result = await run_locomo(
        DATA, db_url=f"sqlite:///{tmp_path}/mini.db", settings=settings, baselines=True, user_ks=(), budgets=()
    )
    assert fake_openai.pending("embeddings") > 0, "every embedding request was held back"
    systems = result["systems"]
    assert set(systems) == {"deepcontext", "keyword (BM25)", "vector (cosine)", "naive hybrid (RRF)"}
    for name, s in systems.items():
        assert s["search_ms_p50"] is not None and s["search_ms_p95"] is not None, name
        assert s["search_ms_p50"] <= s["search_ms_p95"] <= s["search_ms_p99"], name
    for name in ("deepcontext", "vector (cosine)", "naive hybrid (RRF)"):
        assert systems[name]["search_ms_p50"] >= DELAY_MS, (name, systems[name])
    # BM25 embeds nothing: its figure must not carry the embedding
    assert systems["keyword (BM25)"]["search_ms_p95"] < DELAY_MS
    assert systems["naive hybrid (RRF)"]["search_ms_p50"] >= systems["vector (cosine)"]["search_ms_p50"]
