"""In-RAM vector matrices per user, for the SQLite backend.

Each user's active vectors live in one float32 matrix with a few attribute arrays beside it (tier,
type, status, time, expiry, conversation), so a vector search with filters is one matrix-vector
product and a few boolean masks. The cache stays correct across processes: every write bumps the
user's ``version`` and stamps the rows it changed with it (``rev``); before a search the cache reads
the version (one indexed lookup) and, if it moved, loads only the rows with a newer ``rev``. A user
row re-created after a delete has a new ``incarnation``, which forces a full reload.

A user's HNSW graph (:mod:`deepcontext.store.ann`), when the store saves graphs
(:mod:`deepcontext.store.ann_files`), is loaded from its file at the user's first refresh and
saved after a build, when enough changes accumulated, and at close.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.store.ann import AnnBuilder, AnnIndex, ann_available, in_background
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import MemoryTier, MemoryType

if TYPE_CHECKING:
    from deepcontext.store.ann_files import GraphFiles, GraphHeader

__all__ = ["UserVectors", "VectorCache", "VectorRow"]

_TIERS = {t.value: i for i, t in enumerate(MemoryTier)}
_TYPES = {t.value: i for i, t in enumerate(MemoryType)}

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
class UserVectors:
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

    # -- maintenance ----------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = self.mat.shape[0]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 64)  # a small user stays small: most users hold a few hundred

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
            self.tier[i] = _TIERS.get(r.tier, 0)
            self.mtype[i] = _TYPES.get(r.memory_type, 0)
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
        self.tier[:n] = [_TIERS.get(r.tier, 0) for r in use]
        self.mtype[:n] = [_TYPES.get(r.memory_type, 0) for r in use]
        self.when[:n] = [r.when for r in use]
        self.expires[:n] = [np.inf if r.expires_at is None else r.expires_at for r in use]
        codes = self.conv_codes
        self.conv[:n] = [codes.setdefault(r.conversation_id, len(codes)) for r in use]
        self.pos = {r.id: i for i, r in enumerate(use)}
        self.n = n

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
        keep = np.flatnonzero(self.alive[: self.n])
        files, incarnation, version = self.files, self.incarnation, self.version
        self.builder = AnnBuilder()

        def save(idx: AnnIndex) -> None:
            # the graph as of the snapshot; the changes since are replayed on publish (and saved later)
            if files is not None:
                files.write(self.user_id, idx, incarnation, version, lambda: not self.retired)

        self.builder.start(self.dim, self.ids[keep].copy(), self.mat[keep].copy(), save if files is not None else None)

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
            and self.unsaved >= max(SAVE_AFTER, (self.n - self.dead) // 20)
        )

    def save(self) -> bool:
        """Write the graph to its file if it changed since it was saved (a background thread, or
        close: never a search). Searches go on during the write; changes meanwhile wait in ``held``
        and are applied after it."""
        files = self.files
        with self.lock:
            if files is None or not files.saving or self.ann is None or self.held is not None or self.retired or not self.unsaved:
                return False
            ann, incarnation, version = self.ann, self.incarnation, self.version
            self.held = set()
        ok = False
        try:
            ok = files.write(self.user_id, ann, incarnation, version, lambda: not self.retired)
        finally:
            with self.lock:
                held, self.held = self.held, None
                if ok:
                    self.unsaved = 0
                self._sync_ann(held)
        return ok

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        for name in ("ids", "mat", "alive", "tier", "mtype", "when", "expires", "conv"):
            arr = getattr(self, name)
            setattr(self, name, arr[keep].copy())
        self.n = len(keep)
        self.dead = 0
        self.pos = {int(mid): i for i, mid in enumerate(self.ids[: self.n])}

    # -- search ---------------------------------------------------------------------------------
    def mask(
        self, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None, at: np.ndarray | None = None
    ) -> np.ndarray:
        """Which rows pass the filters: all rows, or the rows at positions ``at``."""
        sel: Any = slice(0, self.n) if at is None else at
        m = self.alive[sel].copy()
        if not filters.include_expired:
            m &= self.expires[sel] > now
        if filters.tiers is not None:
            m &= np.isin(self.tier[sel], [_TIERS[t.value] for t in filters.tiers])
        if filters.types is not None:
            m &= np.isin(self.mtype[sel], [_TYPES[t.value] for t in filters.types])
        if filters.conversation_ids is not None:
            codes = [self.conv_codes[c] for c in filters.conversation_ids if c in self.conv_codes]
            m &= np.isin(self.conv[sel], codes)
        if filters.after is not None:
            m &= self.when[sel] >= filters.after.timestamp()
        if filters.before is not None:
            m &= self.when[sel] < filters.before.timestamp()
        if allowed_ids is not None:
            m &= np.isin(self.ids[sel], allowed_ids)
        return m

    def search(
        self, query: np.ndarray, k: int, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None
    ) -> list[tuple[int, float]]:
        return self.search_many(query.reshape(1, -1), k, filters, now, allowed_ids)[0]

    def search_many(
        self, queries: np.ndarray, k: int, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        """Top-k (id, cosine) for each row of ``queries``: from the graph's candidates rescored
        exactly when the user has a graph, else (or when filters leave the graph too few) with one
        matrix product for all."""
        n = self.n
        if n == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        queries = queries.astype(np.float32, copy=False)
        ann = self._graph()
        want = self._candidates(k, filters, allowed_ids)
        # a graph asked for every live vector is no shortcut: the scan is exact and no slower
        if ann is not None and not self.held and want < n - self.dead:
            out = self._search_ann(ann, queries, k, filters, now, allowed_ids, want)
            rest = [j for j, r in enumerate(out) if r is None]
            if rest:
                exact = self._search_exact(queries[rest], k, filters, now, allowed_ids)
                for j, r in zip(rest, exact, strict=True):
                    out[j] = r
            return [r or [] for r in out]
        return self._search_exact(queries, k, filters, now, allowed_ids)

    def _search_ann(
        self,
        ann: AnnIndex,
        queries: np.ndarray,
        k: int,
        filters: MemoryFilters,
        now: float,
        allowed_ids: np.ndarray | None,
        want: int,
    ) -> list[list[tuple[int, float]] | None]:
        """Per query: the top k of the graph's ``want`` candidates that pass the filters, by exact
        cosine; None where fewer than k passed while more vectors exist (the caller looks further:
        the filters may have dropped most candidates, or the graph returned fewer than asked)."""
        out: list[list[tuple[int, float]] | None] = []
        for q, cand in zip(queries, ann.search(queries, want), strict=True):
            at = np.fromiter((self.pos.get(int(c), -1) for c in cand), dtype=np.int64, count=len(cand))
            at = at[at >= 0]
            at = at[self.mask(filters, now, allowed_ids, at)]
            if len(at) < k and len(at) < self.n - self.dead:  # the scan may find more
                out.append(None)
                continue
            scores = self.mat[at] @ q
            order = np.argsort(-scores, kind="stable")[:k]
            out.append([(int(self.ids[at[i]]), float(scores[i])) for i in order])
        return out

    @staticmethod
    def _unfiltered(filters: MemoryFilters, allowed_ids: np.ndarray | None) -> bool:
        """Whether no filter beyond liveness and expiry applies."""
        return (
            filters.tiers is None
            and filters.types is None
            and filters.conversation_ids is None
            and filters.after is None
            and filters.before is None
            and allowed_ids is None
        )

    def _candidates(self, k: int, filters: MemoryFilters, allowed_ids: np.ndarray | None) -> int:
        """How many candidates to ask the graph for. It holds live vectors only, so without filters
        twice ``k`` suffice (a longer list buys little recall); filters drop some, so four times."""
        return max((2 if self._unfiltered(filters, allowed_ids) else 4) * k, 100)

    def _search_exact(
        self, queries: np.ndarray, k: int, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        n = self.n
        all_scores = self.mat[:n] @ queries.T  # (n, m)
        plain = (
            self._unfiltered(filters, allowed_ids)
            and self.dead == 0
            and (filters.include_expired or not np.isfinite(self.expires[:n]).any())
        )
        if not plain:
            m = self.mask(filters, now, allowed_ids)
            all_scores = np.where(m[:, None], all_scores, -np.inf)
            valid = int(m.sum())
        else:
            valid = n
        k = min(k, valid)
        out: list[list[tuple[int, float]]] = []
        for j in range(all_scores.shape[1]):
            if k <= 0:
                out.append([])
                continue
            scores = all_scores[:, j]
            top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-scores[top], kind="stable")]
            out.append([(int(self.ids[i]), float(scores[i])) for i in top if np.isfinite(scores[i])])
        return out


class VectorCache:
    """Per-user :class:`UserVectors`, least recently used users evicted past ``max_rows``; their
    graphs saved in ``files`` when given."""

    def __init__(self, dim: int, max_rows: int, ann_min_rows: int = 0, files: GraphFiles | None = None) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self.ann_min_rows = ann_min_rows
        self.files = files
        self._users: OrderedDict[str, UserVectors] = OrderedDict()
        self._lock = threading.Lock()

    def _new(self, user_id: str, incarnation: str = "") -> UserVectors:
        return UserVectors(
            dim=self.dim, incarnation=incarnation, ann_min_rows=self.ann_min_rows, user_id=user_id, files=self.files
        )

    def get(self, user_id: str) -> UserVectors:
        with self._lock:
            uv = self._users.get(user_id)
            if uv is None:
                uv = self._new(user_id)
                self._users[user_id] = uv
            self._users.move_to_end(user_id)
            return uv

    def drop(self, user_id: str) -> None:
        with self._lock:
            uv = self._users.pop(user_id, None)
        if uv is not None:
            uv.retired = True
            if uv.builder is not None:
                uv.builder.cancelled.set()

    def erase(self, user_id: str) -> None:
        """Drop the user and delete its saved graph (delete_user)."""
        self.drop(user_id)
        if self.files is not None:
            self.files.remove(user_id)

    def flush(self) -> None:
        """Save every graph changed since it was saved, now (close calls it)."""
        with self._lock:
            users = list(self._users.values())
        for uv in users:
            saver = uv.saver
            if saver is not None:
                saver.join()
            uv.save()

    def clear(self) -> None:
        """Stop builds and loads, then save the graphs changed since they were saved (close)."""
        with self._lock:
            users = list(self._users.values())
        for uv in users:
            if uv.builder is not None:
                uv.builder.cancel()
        self.flush()
        with self._lock:
            self._users.clear()

    def evict(self, keep: str) -> None:
        gone: list[UserVectors] = []
        with self._lock:
            total = sum(u.n for u in self._users.values())
            for uid in list(self._users):
                if total <= self.max_rows:
                    break
                if uid == keep:
                    continue
                uv = self._users.pop(uid)
                total -= uv.n
                gone.append(uv)
        for uv in gone:
            if uv.builder is not None:
                uv.builder.cancelled.set()
            elif uv.ann is not None and uv.unsaved:
                uv.saver = in_background(uv.save, "deepcontext-ann-save")

    def refresh(
        self,
        user_id: str,
        read_state: Callable[[], tuple[str, int] | None],
        read_rows: Callable[[int], list[VectorRow]],
    ) -> UserVectors | None:
        """Bring the user's matrix up to date. ``read_state`` returns (incarnation, version) or
        None if the user does not exist; ``read_rows(since_rev)`` returns the rows changed after it."""
        uv = self.get(user_id)
        with uv.lock:
            state = read_state()
            if state is None:
                self.drop(user_id)
                return None
            incarnation, version = state
            if incarnation != uv.incarnation:
                uv.retired = True
                if uv.builder is not None:  # a graph of the old incarnation is of no use
                    uv.builder.cancelled.set()
                fresh = self._new(user_id, incarnation)
                fresh.apply(read_rows(-1))
                fresh.version = version
                fresh.look_for_file(read_rows)  # before it is published: nobody else holds it yet
                with self._lock:
                    self._users[user_id] = fresh
                uv = fresh
            else:
                if version != uv.version:
                    uv.apply(read_rows(uv.version))
                    uv.version = version
                uv.look_for_file(read_rows)
        if uv.save_due():
            uv.saver = in_background(uv.save, "deepcontext-ann-save")
        self.evict(keep=user_id)
        return uv
