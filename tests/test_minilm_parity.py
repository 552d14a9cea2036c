"""MiniLMEmbedder (ONNX Runtime, no torch) must match sentence-transformers: cosine >= 0.9999 per text.

Two ways, the same texts and thresholds:

- always: against reference vectors and token counts that sentence-transformers computed once from
  the same weights, committed in ``tests/fixtures/minilm_reference.npz`` (no torch needed);
- live, when sentence-transformers is installed (``pip install -e ".[parity]"``): against the model
  itself; without it these tests skip with one message (they fail when DEEPCONTEXT_REQUIRE_PARITY=1).

After changing TEXTS or MIXED, write the fixture again (needs the parity extra)::

    python tests/test_minilm_parity.py --write-reference
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deepcontext.embed.minilm import MiniLMEmbedder, find_model_dir

pytestmark = pytest.mark.slow

MIN_COSINE = 0.9999
_INSTALL = 'pip install -e ".[parity]"'
FIXTURE = Path(__file__).with_name("fixtures") / "minilm_reference.npz"

_LONG_EN = " ".join(
    f"Sentence number {i} of a long note about the migration plan, the budget and the on-call rota." for i in range(40)
)  # ~800 tokens: far past the 256-token truncation
_LONG_ZH = "我们明天早上九点在会议室讨论新项目的预算和时间表。" * 30
TEXTS = [
    "hi",
    "Hello, world!",
    "",
    "   ",
    "What's my sister's birthday again?? I forgot... again!!!",
    "Order #4521 ships on 2024-03-15 at 09:30; total: $1,299.99 (incl. 19% VAT).",
    "3.14159 2.71828 1.41421 0 -1 1e10 0x1F",
    "我喜欢在周末去公园跑步，然后和朋友一起吃早餐。",
    "東京で寿司を食べるのが大好きです。来月また行きます！",
    "Party tonight 🎉🎉 don't forget the 🍕 and 🍺!!",
    "ThIs Is MiXeD cAsE tExT with CamelCaseWords and ALLCAPS.",
    "naïve café résumé Zürich São Paulo Ångström",
    "def f(x):\n    return x ** 2  # square\n\ttabbed\tline",
    "I prefer vegetarian restaurants and I'm allergic to peanuts, so please keep that in mind when booking.",
    _LONG_EN,
    _LONG_ZH,
    "word " * 255,  # around the truncation boundary
    "word " * 254,
]
# short and long texts mixed in one call (batch_size 3 forces several padded model batches)
MIXED = ["ok", _LONG_EN, "a b c", _LONG_ZH, "Meeting moved to 3pm.", "x" * 3000, "🙂"]


def _require_sentence_transformers() -> None:
    if importlib.util.find_spec("sentence_transformers") is not None:
        return
    if os.environ.get("DEEPCONTEXT_REQUIRE_PARITY") == "1":
        pytest.fail(f"the live MiniLM parity check needs sentence-transformers: `{_INSTALL}`", pytrace=False)
    pytest.skip(f"live parity with sentence-transformers: not installed (`{_INSTALL}`); the fixture checks ran")


def _load_reference_model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(find_model_dir()), device="cpu")


@pytest.fixture(scope="module")
def reference() -> Iterator[Any]:
    """sentence-transformers' all-MiniLM-L6-v2 from the same bundled folder, offline, on CPU."""
    _require_sentence_transformers()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        yield _load_reference_model()


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    """The committed reference: what sentence-transformers answered for TEXTS and MIXED."""
    with np.load(FIXTURE, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    for k in ("batch", "mixed"):
        v = data[k].astype(np.float32)
        data[k] = v / np.linalg.norm(v, axis=1, keepdims=True)
    assert list(data["texts"]) == TEXTS and list(data["mixed_texts"]) == MIXED, (
        "TEXTS or MIXED changed: write the fixture again (python tests/test_minilm_parity.py --write-reference)"
    )
    return data


def _st(model: Any, texts: list[str], batch_size: int = 32) -> np.ndarray:
    return np.asarray(model.encode(texts, batch_size=batch_size, normalize_embeddings=True), dtype=np.float32)


def _fresh() -> MiniLMEmbedder:
    return MiniLMEmbedder(cache_size=0)  # no LRU: every call really runs the model


def _assert_close(ours: np.ndarray, ref: np.ndarray, texts: list[str]) -> None:
    cos = np.sum(ours * ref, axis=1)
    bad = [(t[:40], float(c)) for t, c in zip(texts, cos, strict=True) if c < MIN_COSINE]
    assert not bad, f"cosine < {MIN_COSINE} for {bad}"


def test_reference_truncates_at_256(reference: Any) -> None:
    assert reference.max_seq_length == 256  # the premise of our truncation


def test_saved_reference_truncates_at_256(saved: dict[str, Any]) -> None:
    assert int(saved["max_seq_length"]) == 256


def test_batch_matches_sentence_transformers(reference: Any) -> None:
    ours = _fresh().embed(TEXTS)
    _assert_close(ours, _st(reference, TEXTS), TEXTS)


def test_batch_matches_the_saved_reference(saved: dict[str, Any]) -> None:
    _assert_close(_fresh().embed(TEXTS), saved["batch"], TEXTS)


def test_each_text_alone_matches(reference: Any) -> None:
    emb = _fresh()
    ours = np.stack([emb.embed([t])[0] for t in TEXTS])
    _assert_close(ours, _st(reference, TEXTS, batch_size=1), TEXTS)


def test_each_text_alone_matches_the_saved_reference(saved: dict[str, Any]) -> None:
    # sentence-transformers' vectors of a text alone and in a batch differ by < 1e-6: one reference
    emb = _fresh()
    _assert_close(np.stack([emb.embed([t])[0] for t in TEXTS]), saved["batch"], TEXTS)


def test_single_text_equals_same_text_in_batch() -> None:
    emb = _fresh()
    batch = emb.embed(TEXTS)
    for i, t in enumerate(TEXTS):
        alone = emb.embed([t])[0]
        assert float(alone @ batch[i]) >= MIN_COSINE, t[:40]


def test_very_different_lengths_in_one_small_batch(reference: Any) -> None:
    ours = MiniLMEmbedder(batch_size=3, cache_size=0).embed(MIXED)
    _assert_close(ours, _st(reference, MIXED, batch_size=len(MIXED)), MIXED)


def test_very_different_lengths_match_the_saved_reference(saved: dict[str, Any]) -> None:
    _assert_close(MiniLMEmbedder(batch_size=3, cache_size=0).embed(MIXED), saved["mixed"], MIXED)


def test_token_counts_match_the_reference_tokenizer(reference: Any) -> None:
    emb = _fresh()
    tok = reference.tokenizer
    for t in TEXTS:
        assert emb.count_tokens(t) == len(tok(t, add_special_tokens=False)["input_ids"]), t[:40]


def test_token_counts_match_the_saved_reference(saved: dict[str, Any]) -> None:
    emb = _fresh()
    assert [emb.count_tokens(t) for t in TEXTS] == [int(n) for n in saved["token_counts"]]


def write_reference(path: Path = FIXTURE) -> None:
    """Compute the reference with sentence-transformers and save it. float16 keeps it small: the
    rounding moves a vector's cosine by < 1e-6, far inside MIN_COSINE."""
    model = _load_reference_model()
    tok = model.tokenizer
    path.parent.mkdir(exist_ok=True)
    np.savez_compressed(
        path,
        texts=np.array(TEXTS),
        mixed_texts=np.array(MIXED),
        batch=_st(model, TEXTS).astype(np.float16),
        mixed=_st(model, MIXED, batch_size=len(MIXED)).astype(np.float16),
        token_counts=np.array([len(tok(t, add_special_tokens=False)["input_ids"]) for t in TEXTS], dtype=np.int32),
        max_seq_length=np.array(model.max_seq_length, dtype=np.int32),
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-reference"]:
        sys.exit("usage: python tests/test_minilm_parity.py --write-reference")
    write_reference()
    print(f"wrote {FIXTURE}")
