"""Searches of one user's vector matrix (:class:`deepcontext.store.vectors.UserVectors`): an exact
scan with the filters as boolean masks, or the HNSW graph's candidates rescored exactly."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.store.interface import MemoryFilters
from deepcontext.types import MemoryTier, MemoryType

if TYPE_CHECKING:
    from deepcontext.store.ann import AnnIndex

__all__ = ["TIERS", "TYPES", "MatrixSearch"]

TIERS = {t.value: i for i, t in enumerate(MemoryTier)}
TYPES = {t.value: i for i, t in enumerate(MemoryType)}


class MatrixSearch:
    """The search half of :class:`deepcontext.store.vectors.UserVectors` (which holds the arrays
    and keeps them up to date)."""

    n: int
    dead: int
    ids: np.ndarray
    mat: np.ndarray
    alive: np.ndarray
    tier: np.ndarray
    mtype: np.ndarray
    when: np.ndarray
    expires: np.ndarray
    conv: np.ndarray
    pos: dict[int, int]
    conv_codes: dict[str | None, int]
    held: set[int] | None
    lock: threading.Lock

    def _graph(self) -> AnnIndex | None:
        raise NotImplementedError

    def mask(
        self, filters: MemoryFilters, now: float, allowed_ids: np.ndarray | None, at: np.ndarray | None = None
    ) -> np.ndarray:
        """Which rows pass the filters: all rows, or the rows at positions ``at``."""
        sel: Any = slice(0, self.n) if at is None else at
        m = self.alive[sel].copy()
        if not filters.include_expired:
            m &= self.expires[sel] > now
        if filters.tiers is not None:
            m &= np.isin(self.tier[sel], [TIERS[t.value] for t in filters.tiers])
        if filters.types is not None:
            m &= np.isin(self.mtype[sel], [TYPES[t.value] for t in filters.types])
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
