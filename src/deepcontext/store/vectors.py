"""In-RAM vector matrices per user, for the SQLite backend.

Each user's active vectors live in one float32 matrix with a few attribute arrays beside it (tier,
type, status, time, expiry, conversation), so a vector search with filters is one matrix-vector
product and a few boolean masks. The cache stays correct across processes: every write bumps the
user's ``version`` and stamps the rows it changed with it (``rev``); before a search the cache reads
the version (one indexed lookup) and, if it moved, loads only the rows with a newer ``rev``. A user
row re-created after a delete has a new ``incarnation``, which forces a full reload.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deepcontext.store.ann import AnnBuilder, AnnIndex, ann_available
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import MemoryTier, MemoryType

__all__ = ["UserVectors", "VectorCache", "VectorRow"]

_TIERS = {t.value: i for i, t in enumerate(MemoryTier)}
_TYPES = {t.value: i for i, t in enumerate(MemoryType)}


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

    # -- maintenance ----------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = self.mat.shape[0]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 1024)

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
        elif self.ann is not None:
            self._sync_ann(changed)
        if self.dead > 1024 and self.dead > self.n // 4:
            self._compact()

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

    def _ann_for_search(self) -> AnnIndex | None:
        """The graph if it is ready; starts building it when the user has grown big enough."""
        if self.ann is not None or self.ann_min_rows <= 0:
            return self.ann
        if self.builder is None:
            if self.n - self.dead < self.ann_min_rows or not ann_available():
                return None
            keep = np.flatnonzero(self.alive[: self.n])
            self.builder = AnnBuilder()
            self.builder.start(self.dim, self.ids[keep].copy(), self.mat[keep].copy())
            return None
        if not self.builder.ready.is_set():
            return None
        builder, self.builder = self.builder, None
        if builder.failed or builder.result is None:
            self.ann_min_rows = 0  # scan exactly from now on (the failure was logged)
            return None
        self.ann = builder.result
        self._sync_ann(builder.pending)
        return self.ann

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until a graph being built is ready (True if the user has a graph afterwards)."""
        builder = self.builder
        if builder is not None:
            builder.ready.wait(timeout)
        with self.lock:
            return self._ann_for_search() is not None

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
        ann = self._ann_for_search()
        if ann is not None:
            want = self._candidates(k, filters, allowed_ids)
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
    """Per-user :class:`UserVectors`, least recently used users evicted past ``max_rows``."""

    def __init__(self, dim: int, max_rows: int, ann_min_rows: int = 0) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self.ann_min_rows = ann_min_rows
        self._users: OrderedDict[str, UserVectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str) -> UserVectors:
        with self._lock:
            uv = self._users.get(user_id)
            if uv is None:
                uv = UserVectors(dim=self.dim, ann_min_rows=self.ann_min_rows)
                self._users[user_id] = uv
            self._users.move_to_end(user_id)
            return uv

    def drop(self, user_id: str) -> None:
        with self._lock:
            uv = self._users.pop(user_id, None)
        if uv is not None and uv.builder is not None:
            uv.builder.cancelled.set()

    def clear(self) -> None:
        with self._lock:
            users = list(self._users.values())
            self._users.clear()
        for uv in users:
            if uv.builder is not None:
                uv.builder.cancel()

    def evict(self, keep: str) -> None:
        with self._lock:
            total = sum(u.n for u in self._users.values())
            for uid in list(self._users):
                if total <= self.max_rows:
                    break
                if uid == keep:
                    continue
                gone = self._users.pop(uid)
                total -= gone.n
                if gone.builder is not None:
                    gone.builder.cancelled.set()

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
                if uv.builder is not None:  # a graph of the old incarnation is of no use
                    uv.builder.cancelled.set()
                fresh = UserVectors(dim=self.dim, incarnation=incarnation, ann_min_rows=self.ann_min_rows)
                fresh.apply(read_rows(-1))
                fresh.version = version
                with self._lock:
                    self._users[user_id] = fresh
                uv = fresh
            elif version != uv.version:
                uv.apply(read_rows(uv.version))
                uv.version = version
        self.evict(keep=user_id)
        return uv
