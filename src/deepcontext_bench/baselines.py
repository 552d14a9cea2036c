"""Reference retrievers for the benchmarks, deliberately simple: BM25 alone, cosine alone, and
the naive hybrid of ``shared/data/README.md`` (cosine + BM25 fused by RRF k=60, one document per
turn "speaker: text")."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

__all__ = ["BM25", "cosine_rank", "rrf_merge"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75) over a fixed corpus."""

    def __init__(self, docs: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(tokenize(d)) for d in docs]
        self.lens = np.array([sum(c.values()) for c in self.docs], dtype=np.float64)
        self.avg = float(self.lens.mean()) if len(self.docs) else 0.0
        df: Counter[str] = Counter()
        for c in self.docs:
            df.update(c.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def rank(self, query: str, k: int) -> list[int]:
        q = set(tokenize(query))
        scores = np.zeros(len(self.docs))
        for i, c in enumerate(self.docs):
            s = 0.0
            for t in q:
                f = c.get(t)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.lens[i] / self.avg))
            scores[i] = s
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order[:k] if scores[i] > 0]


def cosine_rank(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]


def rrf_merge(rankings: list[list[int]], k: int = 60, limit: int = 100) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for r, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + r)
    return sorted(scores, key=lambda d: -scores[d])[:limit]
