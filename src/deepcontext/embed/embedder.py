"""The embedder seam: one abstract method, everything else (validation, caching, batching,
normalisation) lives here once."""

from __future__ import annotations

import hashlib
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from deepcontext.errors import EmbeddingError, ValidationError

__all__ = ["Embedder", "EmbedderStats"]


@dataclass(slots=True)
class EmbedderStats:
    """Counts of an :class:`Embedder`'s work. ``model_seconds`` sums the time of calls that ran the
    model, over all threads (calls running at once count each their own time)."""

    #: texts handed to ``embed`` (repeats included)
    texts_asked: int = 0
    #: texts the model embedded (the others came from the cache or repeated a text of the same call)
    texts_embedded: int = 0
    #: ``embed`` calls that ran the model
    model_calls: int = 0
    model_seconds: float = 0.0

    def __sub__(self, other: EmbedderStats) -> EmbedderStats:
        return EmbedderStats(
            self.texts_asked - other.texts_asked, self.texts_embedded - other.texts_embedded,
            self.model_calls - other.model_calls, self.model_seconds - other.model_seconds,
        )  # fmt: skip


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    Subclasses implement :meth:`embed_batch` only. ``model_id`` names the model and its settings;
    a store remembers it and refuses to mix vectors of two different models.
    """

    #: stable identifier of the model + settings, stored in the database
    model_id: str = "unknown"
    #: vector size
    dimensions: int = 0
    #: largest batch handed to embed_batch at once
    batch_size: int = 64

    def __init__(self, *, cache_size: int = 4096) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._stats = EmbedderStats()

    @abstractmethod
    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dimensions). Need not be normalised."""

    # -- public -------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; repeated texts (within the call and recently seen) are embedded once."""
        if isinstance(texts, str):
            raise ValidationError("embed() takes a sequence of strings, not a string", field="texts")
        items = list(texts)
        for i, t in enumerate(items):
            if not isinstance(t, str):
                raise ValidationError(f"texts[{i}] is {type(t).__name__}, not str", field=f"texts[{i}]")
        out = np.empty((len(items), self.dimensions), dtype=np.float32)
        keys = [self._key(t) for t in items]
        missing: dict[str, str] = {}
        with self._lock:
            for i, k in enumerate(keys):
                v = self._cache.get(k)
                if v is not None:
                    self._cache.move_to_end(k)
                    out[i] = v
                elif k not in missing:
                    missing[k] = items[i]
            self._stats.texts_asked += len(items)
        if missing:
            todo_keys = list(missing)
            todo = [missing[k] for k in todo_keys]
            started = time.perf_counter()
            vecs = self._embed_all(todo)
            elapsed = time.perf_counter() - started
            computed = dict(zip(todo_keys, vecs, strict=True))
            with self._lock:
                self._stats.texts_embedded += len(todo)
                self._stats.model_calls += 1
                self._stats.model_seconds += elapsed
                for k, v in computed.items():
                    self._cache[k] = v
                    self._cache.move_to_end(k)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            for i, k in enumerate(keys):
                if k in computed:
                    out[i] = computed[k]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def stats(self) -> EmbedderStats:
        """What this embedder has done since it was created (a copy: take two and subtract)."""
        with self._lock:
            return replace(self._stats)

    def clear_cache(self) -> None:
        """Forget cached vectors (the next embed of any text runs the model)."""
        self._cache.clear()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` (an estimate unless the embedder has a tokenizer): ~4 chars a token."""
        return max(1, (len(text) + 3) // 4) if text else 0

    def warm_up(self) -> None:  # noqa: B027 - optional hook
        """Load now what the first embedding would load (a model), so it is off the first call's
        path. Embedders with nothing to load do nothing."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (sessions, HTTP clients)."""

    # -- internals ----------------------------------------------------------------------------
    @staticmethod
    def _key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def _embed_all(self, texts: list[str]) -> np.ndarray:
        parts = []
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            try:
                arr = np.asarray(self.embed_batch(chunk), dtype=np.float32)
            except EmbeddingError:
                raise
            except Exception as exc:  # a provider failure of any kind
                raise EmbeddingError(f"{type(self).__name__} failed: {exc}") from exc
            if arr.shape != (len(chunk), self.dimensions):
                raise EmbeddingError(
                    f"{type(self).__name__} returned shape {arr.shape}, expected {(len(chunk), self.dimensions)}"
                )
            if not np.all(np.isfinite(arr)):
                raise EmbeddingError(f"{type(self).__name__} returned non-finite values")
            parts.append(arr)
        mat = np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (mat / norms).astype(np.float32, copy=False)
