"""What the reliability scenarios count, and the checks they run on a database after the fact."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class Outcome:
    """One scenario on one database: ``tried`` calls; ``failed`` calls that raised or answered what they
    should not; ``lost`` acknowledged writes missing, half-done writes or index rows out of step;
    ``leaked`` another user's or tenant's data seen; ``server_errors`` (5xx); ``p99_ms`` of the calls timed."""

    scenario: str
    backend: str
    tried: int = 0
    failed: int = 0
    lost: int = 0
    leaked: int = 0
    server_errors: int = 0
    timeouts: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: figures of the scenario besides the counts (server memory, latencies compared)
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def p99_ms(self) -> float | None:
        return float(np.percentile(self.latencies_ms, 99)) if self.latencies_ms else None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["latencies_ms"]
        out["p99_ms"] = self.p99_ms
        out["timed_calls"] = len(self.latencies_ms)
        return out


#: kill-index: a user gets a vector graph from a few dozen memories
INDEX_SETTINGS: dict[str, Any] = {"vector_index_min_rows": 40}


def open_context(url: str, **settings: Any) -> Any:
    from deepcontext import DeepContext

    return DeepContext(database_url=url, embedder="hash", **settings)


def backend_name(url: str) -> str:
    return "postgresql" if url.startswith("postgres") else "sqlite"


def query_rows(ctx: Any, sql: str, **params: Any) -> list[Any]:
    from sqlalchemy import text

    with ctx.store.engine.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def check_index(ctx: Any) -> list[str]:
    """Problems of the database as a whole: keyword index rows without a memory (on SQLite: of the
    status the table holds) or memories without one; SQLite's integrity_check and FTS5's
    integrity-check. Empty when all is well."""
    problems: list[str] = []
    if ctx.store.engine.dialect.name == "sqlite":
        # active memories in memory_fts, superseded ones in memory_fts_past, no others
        unindexed = query_rows(
            ctx,
            "SELECT count(*) FROM memories m WHERE (m.status = 'active' AND NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.rowid = m.id)) "
            "OR (m.status = 'superseded' AND NOT EXISTS (SELECT 1 FROM memory_fts_past f WHERE f.rowid = m.id))",
        )
        orphans = query_rows(
            ctx,
            "SELECT (SELECT count(*) FROM memory_fts f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid AND m.status = 'active')) "
            "+ (SELECT count(*) FROM memory_fts_past f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid AND m.status = 'superseded'))",
        )
        ok = query_rows(ctx, "PRAGMA integrity_check")[0][0]
        if ok != "ok":
            problems.append(f"integrity_check: {ok}")
        from sqlalchemy import text
        from sqlalchemy.exc import SQLAlchemyError

        try:
            with ctx.store.engine.begin() as conn:
                for table in ("memory_fts", "memory_fts_past"):
                    conn.execute(text(f"INSERT INTO {table}({table}) VALUES ('integrity-check')"))
        except SQLAlchemyError as exc:
            problems.append(f"fts integrity-check: {exc}")
    else:
        unindexed = query_rows(
            ctx, "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.memory_id = m.id)"
        )
        orphans = query_rows(
            ctx, "SELECT count(*) FROM memory_fts f WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.memory_id)"
        )
    if unindexed[0][0]:
        problems.append(f"{unindexed[0][0]} memories missing from the keyword index")
    if orphans[0][0]:
        problems.append(f"{orphans[0][0]} keyword index rows without a memory")
    return problems


def turn_contents(ctx: Any, user_id: str) -> list[str]:
    return [r[0] for r in query_rows(ctx, "SELECT content FROM turns WHERE user_id = :u", u=user_id)]


def half_written(ctx: Any) -> int:
    """Turns of user messages without the turn memory an add writes in the same transaction."""
    rows = query_rows(
        ctx,
        "SELECT count(*) FROM turns t WHERE t.role = 'user' AND t.kind = 'message' AND NOT EXISTS "
        "(SELECT 1 FROM memory_sources s WHERE s.turn_id = t.id)",
    )
    return int(rows[0][0])


def check_graph(ctx: Any, user_id: str, rng: Any, queries: int = 20, k: int = 10) -> list[str]:
    """Problems of a SQLite user's vectors after a restart: the matrix must hold exactly the user's
    live vectors, the graph must become ready and hold them too, and its searches must find the top ``k`` an exact scan of the rows
    finds (the first result as good, at most one of ``k`` worse than the scan's k-th) for all of the
    ``queries`` but one. Empty when all is well."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from deepcontext.store.interface import MemoryFilters

    store = ctx.store
    mt = store.t.memories
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(mt.c.id, mt.c.embedding).where(mt.c.user_id == user_id, mt.c.status == "active", mt.c.embedding.is_not(None))
        ).all()
    if not rows:
        return []
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    mat = np.stack([np.asarray(r[1], dtype=np.float32) for r in rows])
    now = datetime.now(UTC)
    store.vector_search(user_id, mat[0], k, MemoryFilters(), now)  # loads the saved graph, or builds one
    uv = store.vectors.get(user_id)
    # a writer killed before the user had enough memories for a graph leaves none to check
    graph_due = len(ids) >= INDEX_SETTINGS["vector_index_min_rows"]
    if graph_due and not uv.wait_for_index(120):
        return [f"{user_id}: no vector graph after the restart"]
    problems = []
    if graph_due and len(uv.ann) != len(ids):
        problems.append(f"{user_id}: the graph holds {len(uv.ann)} vectors, the rows {len(ids)}")
    # the matrix (mapped from its saved file, or read from the rows) holds the rows' vectors exactly
    with uv.lock:
        live = {int(uv.ids[i]): i for i in np.flatnonzero(uv.alive[: uv.n])}
        if set(live) != set(ids.tolist()):
            problems.append(f"{user_id}: the matrix ({uv.matrix_source}) holds {len(live)} vectors, the rows {len(ids)}")
        elif not np.array_equal(uv.mat[[live[int(i)] for i in ids]], mat):
            problems.append(f"{user_id}: the matrix ({uv.matrix_source}) differs from the rows' vectors")
    misses = []
    for j in rng.sample(range(len(ids)), min(queries, len(ids))):
        q = mat[j] + np.float32(0.05) * np.asarray([rng.gauss(0, 1) for _ in range(mat.shape[1])], dtype=np.float32)
        q /= np.linalg.norm(q)
        got = store.vector_search(user_id, q, k, MemoryFilters(), now)
        # by score: memories of the same text share a vector, and ties may come in any order
        want = np.sort(mat @ q)[::-1][:k]
        scores = np.array([sc for _, sc in got])
        if len(scores) < min(k, len(ids)) or abs(scores[0] - want[0]) > 1e-4 or np.sum(scores >= want[-1] - 1e-5) < len(want) - 1:
            misses.append(
                f"{user_id}: a search's scores {np.round(scores[:3], 4)}..., an exact scan's {np.round(want[:3], 4)}..."
            )
    # the graph is approximate: one query of them missing its best match now and then is its nature,
    # two are a graph that is not the rows'
    return problems + (misses if len(misses) > 1 else [])
