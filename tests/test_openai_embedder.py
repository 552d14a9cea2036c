"""OpenAIEmbedder against the fake OpenAI-compatible server (real HTTP on 127.0.0.1, real openai SDK)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr

from deepcontext.embed import build_embedder
from deepcontext.embed.openai import EmbeddingAPIError, OpenAIEmbedder
from deepcontext.errors import ConfigurationError, EmbeddingError, ValidationError
from deepcontext.settings import DeepContextSettings, EmbedderKind
from tests.support.fake_openai import FakeOpenAI, Reply, fake_embedding

KEY = "sk-test-very-secret-0123456789"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as running:
        yield running


@pytest.fixture
def fake(server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's fake server with an empty script and request log."""
    server.reset()
    yield server
    server.reset()


def _embedder(server: FakeOpenAI, model: str = "text-embedding-3-small", **kw: object) -> OpenAIEmbedder:
    kw.setdefault("api_key", KEY)
    kw.setdefault("max_retries", 0)
    return OpenAIEmbedder(model, base_url=server.url, **kw)  # type: ignore[arg-type]


def test_vectors_come_from_the_server_normalised_and_in_order(fake: FakeOpenAI) -> None:
    emb = _embedder(fake, dimensions=64)
    texts = ["my sister lives in Berlin", "pizza tonight", "my sister lives in Berlin", ""]
    out = emb.embed(texts)

    assert out.shape == (4, 64) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out[0], fake_embedding(texts[0], 64), atol=1e-6)
    np.testing.assert_allclose(out[1], fake_embedding(texts[1], 64), atol=1e-6)
    np.testing.assert_allclose(out[3], fake_embedding(" ", 64), atol=1e-6)  # empty text sent as one space
    assert np.array_equal(out[0], out[2])

    (req,) = fake.embedding_requests  # one request, repeats removed
    assert req.body["input"] == ["my sister lives in Berlin", "pizza tonight", " "]
    assert req.body["model"] == "text-embedding-3-small"
    assert req.body["dimensions"] == 64
    assert req.body["encoding_format"] == "float"
    assert req.headers["authorization"] == f"Bearer {KEY}"


def test_repeated_texts_are_served_from_the_cache(fake: FakeOpenAI) -> None:
    emb = _embedder(fake, dimensions=16)
    first = emb.embed(["alpha", "beta"])
    second = emb.embed(["beta", "alpha"])
    assert len(fake.embedding_requests) == 1
    assert np.array_equal(first[::-1], second)


def test_batches_are_split_by_batch_size(fake: FakeOpenAI) -> None:
    emb = _embedder(fake, dimensions=8, batch_size=2)
    out = emb.embed([f"text {i}" for i in range(5)])
    assert [len(r.body["input"]) for r in fake.embedding_requests] == [2, 2, 1]
    np.testing.assert_allclose(out[4], fake_embedding("text 4", 8), atol=1e-6)


def test_known_model_size_needs_no_request_and_sends_no_dimensions(fake: FakeOpenAI) -> None:
    emb = _embedder(fake)
    assert emb.dimensions == 1536
    assert emb.model_id == "openai/text-embedding-3-small/1536"
    assert fake.requests == []
    assert emb.embed(["hello"]).shape == (1, 1536)
    assert "dimensions" not in fake.embedding_requests[0].body


def test_unknown_model_size_is_probed_once_lazily(fake: FakeOpenAI) -> None:
    emb = _embedder(fake, model="nomic-embed-text")
    assert fake.requests == []  # constructing asks nothing
    assert emb.dimensions == 1536  # the fake server's native size
    assert emb.model_id == "openai/nomic-embed-text/1536"
    assert len(fake.embedding_requests) == 1
    emb.embed(["one", "two"])
    assert len(fake.embedding_requests) == 2


def test_http_500_becomes_embedding_error_with_the_status(fake: FakeOpenAI) -> None:
    fake.script(Reply.error(500, "the GPU caught fire"), endpoint="embeddings")
    emb = _embedder(fake, dimensions=8)
    with pytest.raises(EmbeddingAPIError) as err:
        emb.embed(["x"])
    assert isinstance(err.value, EmbeddingError)
    assert err.value.status_code == 500
    assert "HTTP 500" in str(err.value) and "the GPU caught fire" in str(err.value)
    assert KEY not in str(err.value)
    assert emb.embed(["x"]).shape == (1, 8)  # the next call works: nothing bad was cached


def test_sdk_retries_recover_from_a_transient_error(fake: FakeOpenAI) -> None:
    fake.script(Reply.error(503, retry_after=0), endpoint="embeddings")
    emb = _embedder(fake, dimensions=8, max_retries=1)
    out = emb.embed(["retry me"])
    np.testing.assert_allclose(out[0], fake_embedding("retry me", 8), atol=1e-6)
    assert len(fake.embedding_requests) == 2


def test_the_api_key_never_appears_in_an_error(fake: FakeOpenAI) -> None:
    fake.script(Reply.error(401, f"Incorrect API key provided: {KEY}"), endpoint="embeddings")
    with pytest.raises(EmbeddingAPIError) as err:
        _embedder(fake, dimensions=8).embed(["x"])
    assert err.value.status_code == 401
    assert KEY not in str(err.value) and KEY not in repr(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_an_unreachable_server_is_an_embedding_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    emb = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, dimensions=8, max_retries=0)
    with pytest.raises(EmbeddingAPIError) as err:
        emb.embed(["x"])
    assert err.value.status_code is None
    assert f"127.0.0.1:{port}" in str(err.value)


def test_from_settings_falls_back_to_the_openai_key(fake: FakeOpenAI, tmp_path: Path) -> None:
    settings = DeepContextSettings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embedder=EmbedderKind.OPENAI,
        embedding_model="my-embedder",
        embedding_base_url=fake.url,
        openai_api_key=SecretStr("sk-from-openai-key"),
        embedding_dimensions=32,
        embedding_batch_size=7,
    )
    emb = build_embedder(settings)
    assert isinstance(emb, OpenAIEmbedder)
    assert (emb.model, emb.dimensions, emb.batch_size) == ("my-embedder", 32, 7)
    assert emb.model_id == "openai/my-embedder/32"
    emb.embed(["hello"])
    req = fake.embedding_requests[0]
    assert req.headers["authorization"] == "Bearer sk-from-openai-key"
    assert req.body["dimensions"] == 32


def test_from_settings_prefers_the_embedding_key(fake: FakeOpenAI, tmp_path: Path) -> None:
    settings = DeepContextSettings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path,
        embedder=EmbedderKind.OPENAI,
        embedding_model="my-embedder",
        embedding_base_url=fake.url,
        embedding_api_key=SecretStr("sk-embedding"),
        openai_api_key=SecretStr("sk-other"),
        embedding_dimensions=8,
    )
    OpenAIEmbedder.from_settings(settings).embed(["x"])
    assert fake.embedding_requests[0].headers["authorization"] == "Bearer sk-embedding"


def test_from_settings_maps_the_local_default_model_for_openai(tmp_path: Path) -> None:
    settings = DeepContextSettings(
        _env_file=None, data_dir=tmp_path, embedder=EmbedderKind.OPENAI, openai_api_key=SecretStr("sk-x")
    )  # type: ignore[call-arg]
    emb = OpenAIEmbedder.from_settings(settings)
    assert emb.model == "text-embedding-3-small"  # not "all-MiniLM-L6-v2", which OpenAI does not serve
    assert emb.dimensions == 1536  # known: no request needed (none could be made here)


def test_openai_itself_needs_a_key() -> None:
    with pytest.raises(ConfigurationError, match="API key"):
        OpenAIEmbedder("text-embedding-3-small")


def test_a_local_server_needs_no_key(fake: FakeOpenAI) -> None:
    emb = OpenAIEmbedder("text-embedding-3-small", base_url=fake.url, dimensions=8, max_retries=0)
    assert emb.embed(["x"]).shape == (1, 8)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValidationError):
        OpenAIEmbedder("", api_key=KEY)
    with pytest.raises(ValidationError):
        OpenAIEmbedder("m", api_key=KEY, dimensions=0)
    with pytest.raises(ValidationError):
        OpenAIEmbedder("m", api_key=KEY, timeout=0)
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder("text-embedding-ada-002", api_key=KEY, dimensions=256)  # ada cannot be shortened


def test_close_then_use_again(fake: FakeOpenAI) -> None:
    emb = _embedder(fake, dimensions=8)
    emb.embed(["a"])
    emb.close()
    assert emb.embed(["b"]).shape == (1, 8)
