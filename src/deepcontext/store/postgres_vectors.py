"""PostgreSQL's vector index: pgvector's cosine distance (``<=>``) over an HNSW index."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from sqlalchemy import Connection, Float, bindparam, cast, select

from deepcontext.errors import ConfigurationError, ValidationError
from deepcontext.store.indexes import VectorIndex
from deepcontext.store.interface import DEFAULT_FILTERS, MemoryFilters
from deepcontext.store.repository import Lookups
from deepcontext.store.schema import VectorType

__all__ = ["MAX_EF_SEARCH", "PostgresVectorIndex"]

#: the highest hnsw.ef_search pgvector accepts
MAX_EF_SEARCH = 1000


class _Context(Lookups, Protocol):
    """What the vector index uses of its store: lookups, the vector size and index mode, the HNSW
    search width and the installed pgvector."""

    @property
    def dim(self) -> int: ...

    @property
    def vector_mode(self) -> str: ...

    @property
    def ef_search(self) -> int: ...

    def pgvector_version(self) -> tuple[int, ...]: ...

    def default_conditions(self) -> list[Any]: ...


class PostgresVectorIndex(VectorIndex):
    """pgvector cosine distance over an HNSW index, with an exact scan when the index scan stops short."""

    def __init__(self, store: _Context) -> None:
        self.s = store

    def distance(self) -> Any:
        """Cosine distance to the ``qvec`` parameter, written exactly like the HNSW index expression."""
        mt = self.s.t.memories
        param = bindparam("qvec", type_=VectorType(self.s.dim))
        if self.s.vector_mode == "halfvec":
            from pgvector.sqlalchemy import HALFVEC

            return cast(mt.c.embedding, HALFVEC(self.s.dim)).op("<=>", return_type=Float())(cast(param, HALFVEC(self.s.dim)))
        return mt.c.embedding.op("<=>", return_type=Float())(param)

    def select(self, conditions: list[Any], *, exact: bool) -> Any:
        """The nearest ``k`` memories of ``uid`` to ``qvec`` under ``conditions``."""
        mt = self.s.t.memories
        dist = self.distance()
        # exact: order by an expression the HNSW index cannot serve, so the planner scans the user's
        # rows (through the user_id index) and sorts them: a complete answer
        order = (dist + 0.0) if exact else dist
        return (
            select(mt.c.id, dist.label("distance"))
            .where(mt.c.user_id == bindparam("uid"), mt.c.embedding.is_not(None), *conditions)
            .order_by(order)
            .limit(bindparam("k"))
        )

    @functools.cached_property
    def stmts(self) -> dict[bool, Any]:
        """The vector leg's statements under the default filters (index scan, exact scan), built once:
        building and keying one cost about as much as the HNSW scan. Parameters uid, qvec, k, now."""
        default = self.s.default_conditions()
        return {exact: self.select(default, exact=exact) for exact in (False, True)}

    def stmt(self, filters: MemoryFilters, now: datetime, *, exact: bool) -> Any:
        if filters == DEFAULT_FILTERS:
            return self.stmts[exact]
        return self.select(self.s.filter_clause(filters, now), exact=exact)

    def hnsw_session(self, conn: Connection, ef_search: int) -> None:
        """The HNSW settings of this pooled connection's session, sent only when they change (reads run in
        autocommit, so a session-level SET costs one round trip per connection and change, where SET
        LOCAL would cost a transaction and a round trip per query)."""
        iterative = self.s.pgvector_version() >= (0, 8)
        info = conn.connection.info
        if info.get("dc_hnsw") == (ef_search, iterative):
            return
        conn.exec_driver_sql(f"SET hnsw.ef_search = {int(ef_search)}")
        if iterative:
            conn.exec_driver_sql("SET hnsw.iterative_scan = relaxed_order")
        info["dc_hnsw"] = (ef_search, iterative)

    def search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        """Nearest active memories by cosine, ``(id, cosine similarity)`` best first, per query row.

        One connection for all queries. The HNSW index answers first (``hnsw.ef_search`` = max(configured,
        k); with pgvector >= 0.8 an iterative scan in relaxed order keeps walking the graph until k rows
        pass the user and filter conditions, all in the same query); if it returns fewer than ``k``
        rows, an exact scan of the user's rows gives the complete answer.
        """
        if not filters.only_active:
            raise ConfigurationError("vector search covers active memories only")
        qs = np.asarray(queries, dtype=np.float32)
        if qs.ndim != 2 or qs.shape[1] != self.s.dim:
            raise ValidationError(f"query vectors must have {self.s.dim} dimensions, got shape {qs.shape}", field="query")
        if k <= 0 or len(qs) == 0:
            return [[] for _ in range(len(qs))]
        out: list[list[tuple[int, float]]] = []
        with self.s.connection() as conn:
            exact = self.s.vector_mode == "none"
            if not exact:
                self.hnsw_session(conn, min(max(self.s.ef_search, k), MAX_EF_SEARCH))
            for q in qs:
                params = {"uid": user_id, "qvec": q, "k": k, "now": now}
                rows = conn.execute(self.stmt(filters, now, exact=exact), params).all()
                if len(rows) < k and not exact:
                    # the index scan stopped short (or the user has fewer than k matching rows): exact
                    # scans from here on (the other queries share the user and the filters)
                    exact = True
                    rows = conn.execute(self.stmt(filters, now, exact=True), params).all()
                # relaxed order: the index may return rows slightly out of order
                ranked = sorted(((int(mid), float(d)) for mid, d in rows if d is not None), key=lambda r: (r[1], r[0]))
                out.append([(mid, 1.0 - d) for mid, d in ranked])
        return out
