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


def open_context(url: str) -> Any:
    from deepcontext import DeepContext

    return DeepContext(database_url=url, embedder="hash")


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
