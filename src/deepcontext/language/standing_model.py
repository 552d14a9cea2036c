"""Standing facts and requests recognised from sentence embeddings, beside the rules.

The rules of :mod:`deepcontext.language.standing` read careful English well and chat poorly: "cat
dander wrecks me, eyes swell shut in like an hour" states an allergy in words no rule lists. Two
linear models over the default embedder's vectors (multinomial logistic regression, fitted by
``benchmarks/fit_standing.py`` on the project's labelled sentences, every number chosen by
cross-validation) catch what the rules miss:

- which kind of standing fact a user's message states, if any (read off the vector its turn memory
  is embedded with, so it costs one small matrix product per add);
- whether a query asks for a recommendation or a decision (read off the query's vector).

Each answers only where its probability clears the cross-validated threshold, so it adds to the
rules and never overrides them. The weights belong to one embedding model: with any other
embedder (OpenAI, hashing) :func:`model_for` returns None and the rules work alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

__all__ = ["StandingModel", "model_for"]

_WEIGHTS = "standing_model.npz"


@dataclass(frozen=True, slots=True)
class StandingModel:
    """The two fitted models; ``kinds`` lists the classes of ``kind_w``'s columns (``""``: none)."""

    model_id: str
    kinds: tuple[str, ...]
    kind_w: np.ndarray  # (dimensions, classes)
    kind_b: np.ndarray  # (classes,)
    kind_threshold: float
    request_w: np.ndarray  # (dimensions,)
    request_b: float
    request_threshold: float

    def kinds_of(self, vectors: np.ndarray) -> list[str | None]:
        """The standing kind each row of ``vectors`` (turn memories of the user) states, or None."""
        if not len(vectors):
            return []
        logits = np.asarray(vectors, dtype=np.float32) @ self.kind_w + self.kind_b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        best = p.argmax(axis=1)
        return [self.kinds[j] or None if p[i, j] >= self.kind_threshold else None for i, j in enumerate(best.tolist())]

    def is_request(self, vector: np.ndarray) -> bool:
        """Whether a query with this embedding asks for a recommendation or a decision."""
        z = float(np.asarray(vector, dtype=np.float32) @ self.request_w) + self.request_b
        return bool(1.0 / (1.0 + np.exp(-z)) >= self.request_threshold)


@cache
def _load() -> StandingModel | None:
    try:
        ref = resources.files("deepcontext.language").joinpath(_WEIGHTS)
        with resources.as_file(ref) as path, np.load(path, allow_pickle=False) as z:
            return StandingModel(
                model_id=str(z["model_id"]),
                kinds=tuple(str(k) for k in z["kinds"]),
                kind_w=z["kind_w"].astype(np.float32),
                kind_b=z["kind_b"].astype(np.float32),
                kind_threshold=float(z["kind_threshold"]),
                request_w=z["request_w"].astype(np.float32),
                request_b=float(z["request_b"]),
                request_threshold=float(z["request_threshold"]),
            )
    except FileNotFoundError:  # pragma: no cover - the weights ship with the package
        return None


def model_for(model_id: str) -> StandingModel | None:
    """The fitted models for the embedder ``model_id``, or None when they were fitted on another."""
    model = _load()
    return model if model is not None and model.model_id == model_id else None
