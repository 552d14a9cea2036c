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

from deepcontext.store.base import MemoryFilters
from deepcontext.types import MemoryStatus, MemoryTier, MemoryType

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
        """Insert, update or retire rows (called with the rows whose rev moved)."""
        for r in rows:
            i = self.pos.get(r.id)
            usable = r.active and r.embedding is not None and r.embedding.shape[0] == self.dim
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
        if self.dead > 1024 and self.dead > self.n // 4:
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        for name in ("ids", "mat", "alive", "tier", "mtype", "when", "expires", "conv"):
            arr = getattr(self, name)
            setattr(self, name, arr[keep].copy())
        self.n = len(keep)
        self.dead = 0
        self.pos = {int(mid): i for i, mid in enumerate(self.ids[: self.n])}

    # -- search ---------------------------------------------------------------------------------
    def mask(self, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None) -> np.ndarray:
        n = self.n
        m = self.alive[:n].copy()
        if not filters.include_expired:
            m &= self.expires[:n] > now
        if filters.tiers is not None:
            m &= np.isin(self.tier[:n], [_TIERS[t.value] for t in filters.tiers])
        if filters.types is not None:
            m &= np.isin(self.mtype[:n], [_TYPES[t.value] for t in filters.types])
        if filters.conversation_ids is not None:
            codes = [self.conv_codes[c] for c in filters.conversation_ids if c in self.conv_codes]
            m &= np.isin(self.conv[:n], codes)
        if filters.after is not None:
            m &= self.when[:n] >= filters.after.timestamp()
        if filters.before is not None:
            m &= self.when[:n] < filters.before.timestamp()
        if allowed_ids is not None:
            m &= np.isin(self.ids[:n], allowed_ids)
        return m

    def search(
        self, query: np.ndarray, k: int, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None
    ) -> list[tuple[int, float]]:
        return self.search_many(query.reshape(1, -1), k, filters, now, allowed_ids)[0]

    def search_many(
        self, queries: np.ndarray, k: int, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        """Top-k (id, cosine) for each row of ``queries``, with one matrix product for all."""
        n = self.n
        if n == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        all_scores = self.mat[:n] @ queries.astype(np.float32, copy=False).T  # (n, m)
        plain = (
            filters.tiers is None
            and filters.types is None
            and filters.conversation_ids is None
            and filters.after is None
            and filters.before is None
            and allowed_ids is None
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

    def __init__(self, dim: int, max_rows: int) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self._users: OrderedDict[str, UserVectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, user_id: str) -> UserVectors:
        with self._lock:
            uv = self._users.get(user_id)
            if uv is None:
                uv = UserVectors(dim=self.dim)
                self._users[user_id] = uv
            self._users.move_to_end(user_id)
            return uv

    def drop(self, user_id: str) -> None:
        with self._lock:
            self._users.pop(user_id, None)

    def clear(self) -> None:
        with self._lock:
            self._users.clear()

    def evict(self, keep: str) -> None:
        with self._lock:
            total = sum(u.n for u in self._users.values())
            for uid in list(self._users):
                if total <= self.max_rows:
                    break
                if uid == keep:
                    continue
                total -= self._users.pop(uid).n

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
                fresh = UserVectors(dim=self.dim, incarnation=incarnation)
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
