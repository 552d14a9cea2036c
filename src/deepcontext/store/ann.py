"""An approximate nearest-neighbour index (HNSW, usearch) beside a user's exact vector matrix.

The exact scan of :class:`deepcontext.store.vectors.UserVectors` reads the whole matrix for every
query (memory-bound). Past ``min_rows`` vectors a user also gets an HNSW graph (usearch, cosine as
inner product of unit vectors, half-precision storage), built in a background thread the first time
the matrix is big enough (a search meanwhile scans exactly), then kept in step with every change the
matrix sees. Candidates from the graph are rescored exactly against the matrix and filtered there,
so the graph only proposes; when filters leave too few, the caller scans.

A SQLite database saves each user's graph beside it (:mod:`deepcontext.store.ann_files`): a
process that restarts loads the file in the background and replays the rows changed since it was
saved, instead of building the graph again.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from deepcontext.store.ann_files import GraphFiles, GraphHeader

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
    """Builds a user's graph, or loads its saved one, in a thread; changes made meanwhile are
    replayed on publish. The build adds vectors in chunks and stops between two chunks when
    cancelled: a thread still inside the native library when the interpreter exits would abort the
    process, so every unfinished build is cancelled and joined at exit (and by
    :meth:`VectorCache.close`)."""

    CHUNK = 4096

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.ready = threading.Event()
        self.cancelled = threading.Event()
        self.failed = False
        #: memory ids changed since the build's snapshot (replayed before the graph is used)
        self.pending: set[int] = set()
        self.result: AnnIndex | None = None
        #: a load of a saved graph (a failed one is followed by a build)
        self.from_file = False
        #: changes the loaded graph took to catch up with the rows (not yet saved)
        self.replayed = 0

    def start(self, dim: int, ids: np.ndarray, mat: np.ndarray, after: Callable[[AnnIndex], object] | None = None) -> None:
        """Build from a snapshot; ``after`` (saving it) runs in the thread before it is published."""

        def job() -> AnnIndex | None:
            idx = AnnIndex(dim)
            for i in range(0, len(ids), self.CHUNK):
                if self.cancelled.is_set():
                    return None
                idx.build(ids[i : i + self.CHUNK], mat[i : i + self.CHUNK])
            if after is not None and not self.cancelled.is_set():
                try:
                    after(idx)
                except Exception:  # noqa: BLE001 - an unsaved graph is rebuilt after a restart
                    log.exception("saving the vector index failed")
            return idx

        self._run(job)

    def load(
        self, files: GraphFiles, user_id: str, header: GraphHeader, live: np.ndarray, changed: np.ndarray, vectors: np.ndarray
    ) -> None:
        """Load the user's saved graph and bring it to the snapshot: ``live`` are the ids of the live
        vectors, ``changed`` (with ``vectors``) those of the live rows changed since the file's
        version. Keys of no live vector are removed; a live vector neither in the file nor changed
        means the file is not what its header says, and it is dropped (a build follows)."""
        self.from_file = True

        def job() -> AnnIndex | None:
            idx = files.load(user_id, header)
            keys = np.asarray(idx.index.keys, dtype=np.int64)
            stale = keys[~np.isin(keys, live)]
            idx.remove(stale.tolist())
            idx.upsert(changed.tolist(), vectors)
            missing = live[~np.isin(live, keys)]  # two membership tests: a set difference of a union is far slower
            missing = missing[~np.isin(missing, changed)]
            if len(missing):
                raise ValueError(f"{len(missing)} live vectors missing")
            self.replayed = len(stale) + len(changed)
            return idx

        self._run(job)

    def _run(self, job: Callable[[], AnnIndex | None]) -> None:
        def run() -> None:
            try:
                self.result = job()
                self.failed = self.result is None
            except Exception as exc:  # noqa: BLE001 - an index that cannot be built or loaded means exact scans
                if self.from_file:
                    log.warning("a saved vector index is unusable (%s); rebuilding it", exc)
                else:
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
_saving: set[threading.Thread] = set()


def in_background(fn: Callable[[], object], name: str) -> threading.Thread:
    """Run ``fn`` (saving a graph) in a daemon thread that the interpreter's exit waits for: a save
    cannot stop halfway through the native library, and takes seconds at most."""

    def run() -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - an unsaved graph is rebuilt after a restart
            log.exception("saving the vector index failed")
        finally:
            _saving.discard(thread)

    thread = threading.Thread(target=run, name=name, daemon=True)
    _saving.add(thread)
    thread.start()
    return thread


@atexit.register
def _cancel_all() -> None:
    for b in list(_running):
        b.cancel()
    for t in list(_saving):
        t.join(60)
