"""An approximate nearest-neighbour index (HNSW, usearch) beside a user's exact vector matrix.

The exact scan of :class:`deepcontext.store.vectors.UserVectors` reads the whole matrix for every
query (memory-bound). Past ``min_rows`` vectors a user also gets an HNSW graph (usearch, cosine as
inner product of unit vectors, half-precision storage), built in a background thread the first time
the matrix is big enough (a search meanwhile scans exactly), then kept in step with every change the
matrix sees. Candidates from the graph are rescored exactly against the matrix and filtered there,
so the graph only proposes; when filters leave too few, the caller scans.

Nothing is written to disk: a process rebuilds the graph in the background after a restart.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["AnnIndex", "ann_available"]

log = logging.getLogger(__name__)

#: HNSW parameters: neighbours per node, candidate list while adding / searching (a longer search
#: list buys recall for little time)
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 160


def ann_available() -> bool:
    try:
        import usearch.index  # noqa: F401
    except ImportError:  # pragma: no cover - usearch is a dependency; a broken install scans exactly
        return False
    return True


class AnnIndex:
    """One user's HNSW graph, keyed by memory id. Not thread-safe on its own: the owner
    (:class:`~deepcontext.store.vectors.UserVectors`) calls it under its lock, except for the
    initial :meth:`build`, which runs on a private index before it is published."""

    def __init__(self, dim: int) -> None:
        from usearch.index import Index

        self.dim = dim
        self.index = Index(
            ndim=dim,
            metric="ip",
            dtype="f16",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def __len__(self) -> int:
        return len(self.index)

    def build(self, ids: np.ndarray, mat: np.ndarray, threads: int = 0) -> None:
        if len(ids):
            self.index.add(ids.astype(np.uint64, copy=False), np.ascontiguousarray(mat, dtype=np.float32), threads=threads)

    def upsert(self, ids: Iterable[int], vectors: np.ndarray) -> None:
        keys = np.fromiter(ids, dtype=np.uint64)
        if not len(keys):
            return
        self.index.remove(keys)
        self.index.add(keys, np.ascontiguousarray(vectors, dtype=np.float32))

    def remove(self, ids: Iterable[int]) -> None:
        keys = np.fromiter(ids, dtype=np.uint64)
        if len(keys):
            self.index.remove(keys)

    def search(self, queries: np.ndarray, k: int) -> list[np.ndarray]:
        """Candidate memory ids for each query row (best first)."""
        k = min(k, len(self.index))
        if k <= 0:
            return [np.empty(0, dtype=np.int64) for _ in range(len(queries))]
        q = np.ascontiguousarray(queries, dtype=np.float32)
        found: Any = self.index.search(q, k)
        if q.shape[0] == 1:  # a single query's Matches hold only what was found
            return [np.asarray(found.keys, dtype=np.int64)]
        keys = np.asarray(found.keys, dtype=np.int64)
        counts = np.asarray(found.counts)
        return [keys[j, : int(counts[j])] for j in range(q.shape[0])]


class AnnBuilder:
    """Builds a user's graph in a thread; changes made meanwhile are replayed on publish. The build
    adds vectors in chunks and stops between two chunks when cancelled: a thread still inside the
    native library when the interpreter exits would abort the process, so every unfinished build
    is cancelled and joined at exit (and by :meth:`VectorCache.close`)."""

    CHUNK = 4096

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.ready = threading.Event()
        self.cancelled = threading.Event()
        self.failed = False
        #: memory ids changed since the build's snapshot (replayed before the graph is used)
        self.pending: set[int] = set()
        self.result: AnnIndex | None = None

    def start(self, dim: int, ids: np.ndarray, mat: np.ndarray) -> None:
        def run() -> None:
            try:
                idx = AnnIndex(dim)
                for i in range(0, len(ids), self.CHUNK):
                    if self.cancelled.is_set():
                        self.failed = True
                        return
                    idx.build(ids[i : i + self.CHUNK], mat[i : i + self.CHUNK])
                self.result = idx
            except Exception:  # noqa: BLE001 - an index that cannot be built means exact scans
                log.exception("building the vector index failed; searches scan exactly")
                self.failed = True
            finally:
                self.ready.set()
                _running.discard(self)

        _running.add(self)
        self.thread = threading.Thread(target=run, name="deepcontext-ann-build", daemon=True)
        self.thread.start()

    def cancel(self, wait: float | None = 30.0) -> None:
        self.cancelled.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(wait)


_running: set[AnnBuilder] = set()


@atexit.register
def _cancel_all() -> None:
    for b in list(_running):
        b.cancel()
