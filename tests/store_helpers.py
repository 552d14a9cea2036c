"""Small builders shared by the store tests (plans, vectors, stores opened like the engine opens them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import create_engine, inspect, text

from deepcontext.settings import DeepContextSettings
from deepcontext.store import AddPlan, NewMemory, NewTurn, Store, open_store
from deepcontext.text import content_hash
from deepcontext.types import MemoryTier, MemoryType

DIM = 16
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def open_test_store(url: str, dim: int = DIM, *, migrate: bool = True, **settings: Any) -> Store:
    """A store as the engine opens it: settings -> open_store (the backend chosen by the URL)."""
    st = DeepContextSettings(_env_file=None, database_url=url, **settings)  # type: ignore[call-arg]
    store = open_store(st, dim)
    if migrate:
        store.migrate()
    return store


def axis(i: int, *, tilt: int | None = None, amount: float = 0.3, dim: int = DIM) -> np.ndarray:
    """A unit vector along axis ``i`` (optionally tilted towards axis ``tilt``)."""
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    if tilt is not None:
        v[tilt % dim] += amount
    return v / np.linalg.norm(v)


def random_unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.normal(size=(n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def turn(content: str, *, role: str = "user", said_at: datetime = T0, **kw: Any) -> NewTurn:
    return NewTurn(role=role, content=content, content_hash=content_hash(content), said_at=said_at, **kw)


def memory(
    text_: str,
    *,
    vec: np.ndarray | None = None,
    tier: MemoryTier = MemoryTier.SHORT_TERM,
    mtype: MemoryType = MemoryType.SEMANTIC,
    importance: float = 0.5,
    **kw: Any,
) -> NewMemory:
    return NewMemory(
        text=text_,
        content_hash=content_hash(text_),
        memory_type=mtype,
        tier=tier,
        importance=importance,
        confidence=0.8,
        embedding=vec,
        **kw,
    )


def plan(user_id: str, *, conversation_id: str = "c1", now: datetime = T0, **kw: Any) -> AddPlan:
    return AddPlan(user_id=user_id, conversation_id=conversation_id, now=now, **kw)


def later(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def rows_per_table(url: str, user_id: str | None = None) -> dict[str, int]:
    """Rows in every table of the database (only the user's where the table has user_id), plus the
    keyword index (memory_fts; SQLite: also memory_fts_past). Read with a separate engine, straight
    from the database."""
    from deepcontext.store.postgres import normalize_url

    if url.startswith("postgres"):
        url = normalize_url(url)
    engine = create_engine(url)
    try:
        insp = inspect(engine)
        out: dict[str, int] = {}
        with engine.connect() as conn:
            for name in insp.get_table_names():
                if name.startswith("memory_fts_"):  # SQLite FTS5 shadow tables: internal structure
                    continue
                cols = {c["name"] for c in insp.get_columns(name)}
                if user_id is not None and "user_id" in cols:
                    n = conn.execute(text(f'SELECT count(*) FROM "{name}" WHERE user_id = :u'), {"u": user_id}).scalar()
                else:
                    n = conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar()
                out[name] = int(n or 0)
            if "memory_fts" not in out:  # SQLite: virtual tables (the second one for superseded memories)
                for name in ("memory_fts", "memory_fts_past"):
                    out[name] = int(conn.execute(text(f"SELECT count(*) FROM {name}")).scalar() or 0)
        return out
    finally:
        engine.dispose()
