"""In-RAM vector matrices per user, for the SQLite backend.

Each user's active vectors live in one float32 matrix with a few attribute arrays beside it (tier,
type, status, time, expiry, conversation), so a vector search with filters is one matrix-vector
product and a few boolean masks. The cache stays correct across processes: every write bumps the
user's ``version`` and stamps the rows it changed with it (``rev``); before a search the cache reads
the version (one indexed lookup) and, if it moved, loads only the rows with a newer ``rev``. A user
row re-created after a delete has a new ``incarnation``, which forces a full reload.

A user's HNSW graph (:mod:`deepcontext.store.ann`) and, beside it, the matrix, when the store
saves them (:mod:`deepcontext.store.ann_files`), are read from their files at the user's first
refresh (the matrix first, then only the rows changed since it was saved) and saved after a build,
when enough changes accumulated, and at close.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.store.ann import AnnBuilder, AnnIndex, ann_available
from deepcontext.store.vector_search import TIERS, TYPES, MatrixSearch

if TYPE_CHECKING:
    from deepcontext.store.ann_files import GraphFiles, GraphHeader, SavedMatrix

__all__ = ["UserVectors", "VectorRow"]

log = logging.getLogger(__name__)


#: graph changes after which a saved graph is written again (or a twentieth of the user's vectors,
#: if more): a restart replays at most about this many rows
SAVE_AFTER = 1000
#: refreshes that wait for the rows of a saved graph newer than the rows read (another process
#: saved it meanwhile) before building instead
FILE_TRIES = 3


@dataclass(slots=True)
class VectorRow:
    id: int
    active: bool
    tier: str
    memory_type: str
    when: float  # said_at, else created_at (epoch seconds)
    expires_at: float | None
    conversation_id: str | None
    embedding: np.ndarray | None


@dataclass
class UserVectors(MatrixSearch):
    dim: int
    incarnation: str = ""
    version: int = -1
    n: int = 0
    ids: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    mat: np.ndarray = field(default_factory=lambda: np.empty((0, 0), dtype=np.float32))
    alive: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))
    tier: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))
    mtype: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))
    when: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    expires: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.float64))
    conv: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int32))
    pos: dict[int, int] = field(default_factory=dict)
    conv_codes: dict[str | None, int] = field(default_factory=dict)
    dead: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: live vectors from which an HNSW graph proposes candidates (0: always scan exactly)
    ann_min_rows: int = 0
    ann: AnnIndex | None = None
    builder: AnnBuilder | None = None
    user_id: str = ""
    #: where the user's graph is saved (None: nowhere)
    files: GraphFiles | None = None
    #: changes the graph took since the version its file holds
    unsaved: int = 0
    #: while a save writes the graph outside the lock, the changes waiting for it (searches scan
    #: exactly while there are some)
    held: set[int] | None = None
    saver: threading.Thread | None = None
    #: dropped from the cache (a deleted user, an older incarnation): never saved again
    retired: bool = False
    #: the saved graph was looked at (being loaded, loaded, or not usable)
    file_checked: bool = False
    file_tries: int = 0
    #: where the graph came from: "file" or "build"
    source: str = ""
    #: where the matrix came from: "file" (then the rows changed since) or "rows"
    matrix_source: str = ""
    #: the saved matrix is missing, unusable or behind: the next save writes it even with no
    #: change to the graph
    matrix_unsaved: bool = False

    # -- maintenance ----------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = self.mat.shape[0]
        if need <= cap:
            return
        # a small user stays small (most hold a few hundred); a big one grows by a quarter, not twice
        new_cap = max(need, cap + max(cap // 4, 64))

        def grown(a: np.ndarray, fill: Any = 0) -> np.ndarray:
            shape = (new_cap,) + a.shape[1:] if a.ndim > 1 else (new_cap,)
            b = np.full(shape, fill, dtype=a.dtype)
            b[: self.n] = a[: self.n]
            return b

        if self.mat.shape[1] != self.dim:
            self.mat = np.empty((0, self.dim), dtype=np.float32)
        self.ids = grown(self.ids)
        self.mat = grown(self.mat)
        self.alive = grown(self.alive, False)
        self.tier = grown(self.tier)
        self.mtype = grown(self.mtype)
        self.when = grown(self.when)
        self.expires = grown(self.expires, np.inf)
        self.conv = grown(self.conv)

    def apply(self, rows: Iterable[VectorRow]) -> None:
        """Insert, update or retire rows (called with the rows whose rev moved); the graph, when
        there is one, follows."""
        if self.n == 0 and self.ann is None and self.builder is None:
            self._fill(rows)
            return
        changed: list[int] = []
        for r in rows:
            i = self.pos.get(r.id)
            usable = r.active and r.embedding is not None and r.embedding.shape[0] == self.dim
            changed.append(r.id)
            if i is None:
                if not usable:
                    continue
                self._grow(self.n + 1)
                i = self.n
                self.n += 1
                self.pos[r.id] = i
                self.ids[i] = r.id
            elif not usable:
                if self.alive[i]:
                    self.alive[i] = False
                    self.dead += 1
                continue
            elif not self.alive[i]:
                self.dead -= 1
            assert r.embedding is not None
            self.mat[i] = r.embedding
            self.alive[i] = True
            self.tier[i] = TIERS.get(r.tier, 0)
            self.mtype[i] = TYPES.get(r.memory_type, 0)
            self.when[i] = r.when
            self.expires[i] = np.inf if r.expires_at is None else r.expires_at
            code = self.conv_codes.setdefault(r.conversation_id, len(self.conv_codes))
            self.conv[i] = code
        if self.builder is not None:
            self.builder.pending.update(changed)
        elif self.held is not None:
            self.held.update(changed)
        elif self.ann is not None:
            self._sync_ann(changed)
        if self.dead > 1024 and self.dead > self.n // 4:
            self._compact()

    def _fill(self, rows: Iterable[VectorRow]) -> None:
        """The first load of an empty matrix (a restart reads a big user's rows before its first
        search): the usable rows at once."""
        use = [r for r in rows if r.active and r.embedding is not None and r.embedding.shape[0] == self.dim]
        n = len(use)
        if not n:
            return
        self._grow(n)
        np.stack([r.embedding for r in use], out=self.mat[:n])  # type: ignore[misc]
        self.ids[:n] = [r.id for r in use]
        self.alive[:n] = True
        self.tier[:n] = [TIERS.get(r.tier, 0) for r in use]
        self.mtype[:n] = [TYPES.get(r.memory_type, 0) for r in use]
        self.when[:n] = [r.when for r in use]
        self.expires[:n] = [np.inf if r.expires_at is None else r.expires_at for r in use]
        codes = self.conv_codes
        self.conv[:n] = [codes.setdefault(r.conversation_id, len(codes)) for r in use]
        self.pos = {r.id: i for i, r in enumerate(use)}
        self.n = n

    def saved(self) -> SavedMatrix:
        """A copy of the live rows (called under the lock), to be saved outside it."""
        from deepcontext.store.ann_files import SavedMatrix

        keep = np.flatnonzero(self.alive[: self.n])
        codes = sorted(self.conv_codes.items(), key=lambda kv: kv[1])
        return SavedMatrix(
            ids=self.ids[keep], when=self.when[keep], expires=self.expires[keep], mat=self.mat[keep],
            conv=self.conv[keep], tier=self.tier[keep], mtype=self.mtype[keep], conversations=[c for c, _ in codes],
        )  # fmt: skip

    def read_saved(self, version: int, read_rows: Callable[[int], list[VectorRow]], count_live: Callable[[], int]) -> bool:
        """Fill an empty matrix from the user's saved one, if it belongs to this user row and covers
        no newer rows than ``version``, then apply the rows changed since. ``count_live()`` is the
        number of the user's active rows: a saved matrix that does not come to it after the replay
        (a row removed for good meanwhile leaves no changed row behind) is not used. False when the
        caller must read every row."""
        files = self.files
        if files is None or self.ann_min_rows <= 0 or self.n:
            return False
        header = files.matrix_header(self.user_id)
        if header is None or not files.matches(header, self.incarnation) or header.version > version:
            return False
        try:
            saved = files.load_matrix(self.user_id, header)
        except (OSError, ValueError) as exc:
            log.warning("a saved vector matrix is unusable (%s); reading the rows", exc)
            return False
        n = len(saved.ids)
        self.ids, self.when, self.expires, self.mat = saved.ids, saved.when, saved.expires, saved.mat
        self.conv, self.tier, self.mtype = saved.conv, saved.tier, saved.mtype
        self.alive = np.ones(n, dtype=bool)
        self.conv_codes = {c: i for i, c in enumerate(saved.conversations)}
        self.pos = dict(zip(self.ids.tolist(), range(n), strict=True))
        self.n = n
        if header.version < version:
            self.apply(read_rows(header.version))
            self.matrix_unsaved = True  # saved again, caught up, once the graph is ready
        if self.n - self.dead != count_live():
            self._reset()
            return False
        return True

    def _reset(self) -> None:
        fresh = UserVectors(dim=self.dim)
        for name in ("ids", "mat", "alive", "tier", "mtype", "when", "expires", "conv", "pos", "conv_codes"):
            setattr(self, name, getattr(fresh, name))
        self.n = self.dead = 0

    def _sync_ann(self, ids: Iterable[int]) -> None:
        """Make the graph hold exactly the live vectors among ``ids``."""
        assert self.ann is not None
        live: list[int] = []
        gone: list[int] = []
        for mid in dict.fromkeys(ids):
            i = self.pos.get(mid)
            (live if i is not None and self.alive[i] else gone).append(mid)
        self.ann.remove(gone)
        if live:
            self.ann.upsert(live, self.mat[[self.pos[m] for m in live]])
        self.unsaved += len(live) + len(gone)

    def _graph(self) -> AnnIndex | None:
        """The graph if it is ready (published here); starts building it when the user has grown big
        enough and has no saved graph to load."""
        if self.ann is not None or self.ann_min_rows <= 0:
            return self.ann
        if self.builder is None:
            if self.n - self.dead < self.ann_min_rows or not ann_available():
                return None
            if self.files is not None and not self.file_checked:
                return None  # the next refresh looks for a saved graph first
            self._start_build()
            return None
        if not self.builder.ready.is_set():
            return None
        builder, self.builder = self.builder, None
        if builder.failed or builder.result is None:
            if builder.from_file and not builder.cancelled.is_set():
                self._start_build()  # the file was unusable (logged)
            else:
                self.ann_min_rows = 0  # scan exactly from now on (the failure was logged)
            return None
        self.ann = builder.result
        self.source = "file" if builder.from_file else "build"
        self.unsaved = builder.replayed
        self._sync_ann(builder.pending)
        return self.ann

    def _start_build(self) -> None:
        files, incarnation, version = self.files, self.incarnation, self.version
        snapshot = self.saved()
        self.builder = AnnBuilder()

        def save(idx: AnnIndex) -> None:
            # the graph and the matrix as of the snapshot; the changes since are replayed on publish
            # (and saved later)
            if files is not None:
                if files.write(self.user_id, idx, incarnation, version, self.wanted) and files.write_matrix(
                    self.user_id, snapshot, incarnation, version, self.wanted
                ):
                    self.matrix_unsaved = False

        self.builder.start(self.dim, snapshot.ids, snapshot.mat, save if files is not None else None)

    def look_for_file(self, read_rows: Callable[[int], list[VectorRow]]) -> None:
        """Once the user is big enough for a graph and has none: start loading the saved one, if it
        belongs to this user row and covers no newer rows than those read; ``read_rows(version)``
        gives the rows changed since it was saved, which the load replays. Without a usable file the
        next search starts a build."""
        files = self.files
        if (
            files is None
            or self.file_checked
            or self.ann is not None
            or self.builder is not None
            or self.ann_min_rows <= 0
            or self.n - self.dead < self.ann_min_rows
            or not ann_available()
        ):
            return
        header = files.header(self.user_id)
        usable = header is not None and files.matches(header, self.incarnation)
        if usable and header is not None and header.version > self.version and self.file_tries < FILE_TRIES:
            self.file_tries += 1  # saved by a process that read newer rows: look again after them
            return
        self.file_checked = True
        if header is None or not usable or header.version > self.version:
            return
        changed = read_rows(header.version) if header.version < self.version else []
        self.start_load(header, [r.id for r in changed])

    def start_load(self, header: GraphHeader, changed_ids: Iterable[int]) -> None:
        """Load the saved graph in the background, replaying the live rows among ``changed_ids`` (the
        rows changed since its version) and removing what is no longer live."""
        assert self.files is not None
        keep = np.flatnonzero(self.alive[: self.n])
        changed = [m for m in dict.fromkeys(changed_ids) if m in self.pos and self.alive[self.pos[m]]]
        self.builder = AnnBuilder()
        self.builder.load(
            self.files, self.user_id, header, self.ids[keep].copy(), np.asarray(changed, dtype=np.int64),
            self.mat[[self.pos[m] for m in changed]].copy(),
        )  # fmt: skip

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until a graph being built or loaded is ready (True if the user has a graph
        afterwards; a load that failed is followed by a build, waited for too)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            builder = self.builder
            if builder is not None:
                builder.ready.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            with self.lock:
                if self._graph() is not None:
                    return True
                if self.builder is None or self.builder is builder:
                    return False
            if deadline is not None and time.monotonic() >= deadline:
                return False

    # -- saving ---------------------------------------------------------------------------------
    def save_due(self) -> bool:
        """Whether enough changes accumulated to write the graph again (in the background)."""
        return (
            self.files is not None
            and self.files.saving
            and self.ann is not None
            and self.held is None
            and not self.retired
            and (self.saver is None or not self.saver.is_alive())
            and (self.matrix_unsaved or self.unsaved >= max(SAVE_AFTER, (self.n - self.dead) // 20))
        )

    def save(self) -> bool:
        """Write the graph to its file if it changed since it was saved (a background thread, or
        close: never a search). Searches go on during the write; changes meanwhile wait in ``held``
        and are applied after it."""
        files = self.files
        with self.lock:
            if files is None or not files.saving or self.ann is None or self.held is not None or self.retired:
                return False
            if not self.unsaved and not self.matrix_unsaved:
                return False
            ann, incarnation, version = self.ann, self.incarnation, self.version
            snapshot = self.saved()
            self.held = set()
        ok = False
        try:
            ok = files.write(self.user_id, ann, incarnation, version, self.wanted)
            ok = ok and files.write_matrix(self.user_id, snapshot, incarnation, version, self.wanted)
        finally:
            with self.lock:
                held, self.held = self.held, None
                if ok:
                    self.unsaved = 0
                    self.matrix_unsaved = False
                self._sync_ann(held)
        return ok

    def wanted(self) -> bool:
        """Whether files of this user's state may still be written (not for a dropped user)."""
        return not self.retired

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        for name in ("ids", "mat", "alive", "tier", "mtype", "when", "expires", "conv"):
            arr = getattr(self, name)
            setattr(self, name, arr[keep].copy())
        self.n = len(keep)
        self.dead = 0
        self.pos = {int(mid): i for i, mid in enumerate(self.ids[: self.n])}
