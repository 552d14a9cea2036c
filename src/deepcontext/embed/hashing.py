"""A deterministic embedder with no model: hashed word and character n-gram features.

Similar texts get similar vectors (shared words and spellings), identical texts identical ones.
Fast and dependency-free; made for tests and tiny installs. Retrieval quality is far below MiniLM.
"""

from __future__ import annotations

import hashlib

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.text import word_tokens

__all__ = ["HashEmbedder"]


class HashEmbedder(Embedder):
    def __init__(self, dimensions: int = 256, *, cache_size: int = 4096) -> None:
        super().__init__(cache_size=cache_size)
        self.dimensions = dimensions
        self.model_id = f"hash-v1-{dimensions}"
        self.batch_size = 256

    def _features(self, text: str) -> list[tuple[str, float]]:
        toks = word_tokens(text)
        feats: list[tuple[str, float]] = [("w:" + t, 1.0) for t in toks]
        feats += [("b:" + a + " " + b, 0.5) for a, b in zip(toks, toks[1:], strict=False)]
        for t in toks:
            padded = f"<{t}>"
            feats += [("c:" + padded[i : i + 3], 0.25) for i in range(max(1, len(padded) - 2))]
        return feats

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, weight in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
                sign = 1.0 if (h >> 63) & 1 else -1.0
                out[row, h % self.dimensions] += sign * weight
            if not out[row].any():
                out[row, 0] = 1.0  # empty text: a fixed unit vector
        return out
