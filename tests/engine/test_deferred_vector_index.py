"""A bulk import with the vector index deferred: on PostgreSQL the HNSW index is dropped for the
import and built once after it; a process killed inside the scope leaves a database that builds the
index again when it is next opened; searches answer the same either way. SQLite changes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np
import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from deepcontext.errors import StorageError, ValidationError
from deepcontext.store.postgres_index_build import PostgresVectorBuild

SAID = [
    "I live in Porto and work as a nurse at the São João hospital.",
    "My sister Lena plays the cello in a quartet.",
    "I'm allergic to peanuts.",
    "We adopted a grey cat called Miso last spring.",
    "I run 10k every Sunday along the river.",
]
QUESTIONS = ["Where does the user work?", "What instrument does Lena play?", "What pet do I have?", "allergy"]


async def _export(ctx: DeepContext) -> list[dict[str, Any]]:
    for i, text in enumerate(SAID):
        await ctx.add([{"role": "user", "content": text}], user_id="src", conversation_id=f"c{i}")
    return [r async for r in ctx.export("src")]


async def _answers(ctx: DeepContext, user: str) -> list[list[str]]:
    return [[r.text for r in (await ctx.search(q, user_id=user, limit=5)).results] for q in QUESTIONS]


def _state(ctx: DeepContext) -> str:
    build: PostgresVectorBuild = ctx.store.vector_build  # type: ignore[attr-defined]
    with ctx.store.connection() as conn:  # type: ignore[attr-defined]
        return build.state(conn)


async def test_a_deferred_import_answers_as_a_plain_one(db_url: str) -> None:
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256)) as ctx:
        records = await _export(ctx)
        plain = await ctx.import_records(records, user_id="plain")
        deferred = await ctx.import_records(records, user_id="bulk", defer_vector_index=True)
        assert deferred == plain
        assert await _answers(ctx, "bulk") == await _answers(ctx, "plain")
        if db_url.startswith("postgres"):
            assert _state(ctx) == "valid"
        with pytest.raises(ValidationError, match="defer_vector_index"):
            await ctx.import_records(records, user_id="x", defer_vector_index="yes")  # type: ignore[arg-type]


async def test_the_index_is_away_inside_the_scope_and_one_bulk_import_at_a_time(pg_url: str) -> None:
    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(256)) as ctx:
        records = await _export(ctx)
        with ctx.store.deferred_vector_index():
            assert _state(ctx) == "missing"
            other = PostgresVectorBuild(ctx.store)  # type: ignore[arg-type]
            with pytest.raises(StorageError, match="another bulk import"), other.deferred():
                pass
            await ctx.import_records(records, user_id="bulk")
            assert await _answers(ctx, "bulk") == await _answers(ctx, "src")  # exact scans meanwhile
        assert _state(ctx) == "valid"


_KILLED = textwrap.dedent(
    """
    import sys, time
    from deepcontext.store.postgres import PostgresStore
    store = PostgresStore(sys.argv[1], 256)
    store.migrate()
    with store.deferred_vector_index():
        print("inside", flush=True)
        time.sleep(600)
    """
)


async def test_a_bulk_import_killed_inside_the_scope_leaves_the_index_to_be_built_at_the_next_open(pg_url: str) -> None:
    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(256)) as ctx:
        await _export(ctx)
        before = await _answers(ctx, "src")
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, pg_url], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(256)) as ctx:
        assert await _answers(ctx, "src") == before  # right away, scanning exactly
        deadline = time.monotonic() + 60
        while _state(ctx) != "valid" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _state(ctx) == "valid"
        assert await _answers(ctx, "src") == before


async def test_an_import_refreshes_the_planners_statistics_as_adds_do(pg_url: str) -> None:
    # without statistics the planner ANDs the keyword index of every user with the user's rows
    from deepcontext_bench.scale import ScaleRecords, _template

    async with DeepContext(database_url=pg_url, embedder=HashEmbedder(256)) as ctx:
        texts = [f"note {i} about the garden, the bikes and week {i % 7}" for i in range(50)]
        vectors = np.asarray(ctx.embedder.embed(texts), dtype=np.float32)
        records = ScaleRecords(texts, vectors, await _template(ctx), ctx.embedder.model_id, ctx.embedder.dimensions)
        await ctx.import_records(records.batch("many", 0, 2500), user_id="many")
        ctx.store._stats_thread.join(timeout=60)  # type: ignore[attr-defined]
        with ctx.store.connection() as conn:  # type: ignore[attr-defined]
            seen = conn.exec_driver_sql("SELECT reltuples FROM pg_class WHERE relname = 'memory_fts'").scalar()
        assert seen >= 2000
