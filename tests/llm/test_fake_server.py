"""The fake OpenAI-compatible server's own contract (other suites rely on it): embeddings, models, log."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from tests.support.fake_openai import DEFAULT_EMBEDDING_DIMENSIONS, FakeOpenAI, Reply, fake_embedding


@pytest.fixture
async def client(fake_openai: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    c = AsyncOpenAI(base_url=fake_openai.url, api_key="sk-test", max_retries=0)
    yield c
    await c.close()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_embeddings_are_deterministic_normalised_and_sized(fake_openai: FakeOpenAI, client: AsyncOpenAI) -> None:
    texts = ["Ana lives in Berlin", "Ana lives in Paris", "quantum chromodynamics"]
    resp = await client.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=64)
    vectors = [d.embedding for d in resp.data]
    assert [len(v) for v in vectors] == [64, 64, 64]
    assert vectors[0] == pytest.approx(fake_embedding(texts[0], 64), abs=1e-6)
    assert math.isclose(sum(x * x for x in vectors[0]), 1.0, rel_tol=1e-5)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.3  # shared words are close
    [req] = fake_openai.embedding_requests
    assert req.body["input"] == texts and req.body["dimensions"] == 64
    assert req.body["encoding_format"] == "base64"  # what the SDK asks for by default


async def test_embeddings_float_format_default_size_and_errors(fake_openai: FakeOpenAI) -> None:
    async with httpx.AsyncClient(base_url=fake_openai.url) as http:
        resp = await http.post("/embeddings", json={"model": "m", "input": "hello", "encoding_format": "float"})
        assert resp.status_code == 200
        assert resp.json()["data"][0]["embedding"] == pytest.approx(fake_embedding("hello"), abs=1e-6)
        assert len(resp.json()["data"][0]["embedding"]) == DEFAULT_EMBEDDING_DIMENSIONS
        assert (await http.post("/embeddings", json={"model": "m", "input": [[1, 2, 3]]})).status_code == 400
        fake_openai.script(Reply.error(503), endpoint="embeddings")
        assert (await http.post("/embeddings", json={"model": "m", "input": "x"})).status_code == 503
        assert (await http.post("/embeddings", json={"model": "m", "input": "x"})).status_code == 200


async def test_models_and_unscripted_chat(fake_openai: FakeOpenAI, client: AsyncOpenAI) -> None:
    assert [m.id for m in (await client.models.list()).data] == ["fake-model"]
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}])
    assert fake_openai.unscripted == 1


async def test_per_model_queues_come_first(fake_openai: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake_openai.script(Reply.text("shared"))
    fake_openai.script(Reply.text("for b"), model="b")
    msgs = [{"role": "user", "content": "hi"}]
    a = await client.chat.completions.create(model="a", messages=msgs)  # type: ignore[arg-type]
    b = await client.chat.completions.create(model="b", messages=msgs)  # type: ignore[arg-type]
    assert (a.choices[0].message.content, b.choices[0].message.content) == ("shared", "for b")
    assert fake_openai.pending() == 0
