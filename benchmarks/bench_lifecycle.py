"""Benchmark the memory lifecycle: how long decay, consolidation and purge take for one user, and what
auto-consolidation costs an ``add``.

For each size N (default 1,000 and 10,000 memories) a fresh database gets N short-term memories of
one user (written through ``Store.apply_add`` in batches of 500; hash embedder, 256 dimensions; one
entity per 4 memories, so consolidation finds groups of 4), then, with a manual clock:

- ``decay (first)``: run_lifecycle 10 days later without consolidation: every importance rewritten;
- ``decay (same instant)``: the same call again: nothing to write (idempotence);
- ``consolidate``: ``consolidate()`` offline (extractive merge): groups of 4 -> N/4 long-term memories;
- ``purge``: every long-term memory deleted, then a run 31 days later purges them and their sources.

``add`` latency: the median of 50 adds of one message (one fact) with ``auto_consolidate`` off and on,
on a user past the threshold (so every add schedules a consolidation check); the add returns before
the background work, which ``close()`` awaits.

    python benchmarks/bench_lifecycle.py                      # SQLite, N = 1000 and 10000
    python benchmarks/bench_lifecycle.py --postgres postgresql://postgres@127.0.0.1:5432/test
    python benchmarks/bench_lifecycle.py --sizes 1000 --out /tmp

Writes ``bench_lifecycle.json`` and ``bench_lifecycle.md`` to ``--out`` (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.store.interface import AddPlan, EntityUpsert, NewMemory, NewTurn
from deepcontext.text import content_hash
from deepcontext.types import EntityType, MemoryTier, MemoryType

T0 = datetime(2025, 1, 1, tzinfo=UTC)
WORDS = "river lantern copper violet harbor meadow quartz ember willow falcon orchard glacier".split()


def _fill(ctx: DeepContext, user: str, n: int) -> None:
    emb = ctx.embedder
    for start in range(0, n, 500):
        plan = AddPlan(user_id=user, conversation_id="bench", now=T0)
        texts = []
        for i in range(start, min(n, start + 500)):
            w = [WORDS[(i * k + k) % len(WORDS)] for k in (1, 3, 5, 7)]
            texts.append(f"Fact {i}: the {w[0]} near the {w[1]} has a {w[2]} {w[3]} (topic {i // 4})")
        plan.turns = [NewTurn(role="user", content=t, content_hash=content_hash(t), said_at=T0) for t in texts]
        vecs = emb.embed(texts)
        for j, t in enumerate(texts):
            topic = f"topic{(start + j) // 4}"
            plan.entities.append(EntityUpsert(name=topic, norm_name=topic, entity_type=EntityType.CONCEPT))
            plan.memories.append(
                NewMemory(
                    text=t,
                    content_hash=content_hash(t),
                    memory_type=MemoryType.SEMANTIC,
                    tier=MemoryTier.SHORT_TERM,
                    importance=0.5,
                    confidence=0.8,
                    embedding=vecs[j],
                    said_at=T0,
                    source_turn_indices=[j],
                    entity_names=[topic],
                )
            )
        ctx.store.apply_add(plan)


async def _timed(coro: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = await coro
    return round((time.perf_counter() - t) * 1000, 1), out


async def bench_size(url: str, n: int) -> dict[str, Any]:
    clock = ManualClock(T0)
    async with DeepContext(database_url=url, embedder=HashEmbedder(256), clock=clock, llm_provider="none",
                           auto_consolidate=False, consolidation_similarity_threshold=0.99) as ctx:  # fmt: skip
        user = "bench"
        await asyncio.to_thread(_fill, ctx, user, n)
        row: dict[str, Any] = {"memories": n}
        clock.set(T0 + timedelta(days=10))
        row["decay_first_ms"], r = await _timed(ctx.run_lifecycle(user, consolidate=False))
        row["decayed"] = r["memories_decayed"]
        row["decay_same_instant_ms"], r = await _timed(ctx.run_lifecycle(user, consolidate=False))
        assert r["memories_decayed"] == 0
        row["consolidate_ms"], r = await _timed(ctx.consolidate(user))
        row["groups"], row["long_term"] = r["groups"], r["long_term_created"]
        page = await ctx.list(user, tier="long_term", limit=1000)
        ids = [m.id for m in page.memories]
        while page.next_cursor:
            page = await ctx.list(user, tier="long_term", limit=1000, cursor=page.next_cursor)
            ids += [m.id for m in page.memories]
        for mid in ids:
            await ctx.delete(mid, user)
        clock.set(T0 + timedelta(days=45))
        row["purge_ms"], r = await _timed(ctx.run_lifecycle(user, consolidate=False))
        row["purged"] = r["purged"]
    return row


async def bench_add(url: str, auto: bool) -> float:
    clock = ManualClock(T0)
    async with DeepContext(database_url=url, embedder=HashEmbedder(256), clock=clock, llm_provider="none",
                           auto_consolidate=auto, consolidation_threshold=20) as ctx:  # fmt: skip
        user = f"adder-{auto}"
        await asyncio.to_thread(_fill, ctx, user, 200)  # past the threshold
        times = []
        for i in range(50):
            msg = [{"role": "user", "content": f"I planted {WORDS[i % len(WORDS)]} seeds in bed {i}."}]
            t = time.perf_counter()
            await ctx.add(msg, user)
            times.append((time.perf_counter() - t) * 1000)
            clock.advance(minutes=1)
    return round(statistics.median(times), 2)


def _pg_database(admin_url: str) -> tuple[str, Any]:
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"dcbench_{secrets.token_hex(4)}"
    u = make_url(admin_url).set(drivername="postgresql")
    with psycopg.connect(u.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(u.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return u.set(database=name).render_as_string(hide_password=False), drop


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--postgres", help="admin URL of a PostgreSQL server (a scratch database is created)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("results")))
    args = ap.parse_args()
    results: dict[str, Any] = {"machine": f"{platform.processor() or platform.machine()}, Python {sys.version.split()[0]}"}
    backends = ["sqlite"] + (["postgresql"] if args.postgres else [])
    for backend in backends:
        rows, adds = [], {}
        for n in args.sizes:
            with tempfile.TemporaryDirectory() as tmp:
                drop = None
                url = f"sqlite:///{tmp}/bench.db"
                if backend == "postgresql":
                    url, drop = _pg_database(args.postgres)
                try:
                    rows.append(await bench_size(url, n))
                    if n == args.sizes[0]:
                        adds = {"auto_off_ms": await bench_add(url, False), "auto_on_ms": await bench_add(url, True)}
                finally:
                    if drop:
                        drop()
            print(backend, rows[-1], flush=True)
        results[backend] = {"sizes": rows, "add_median": adds}
        print(backend, "add median", adds, flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_lifecycle.json").write_text(json.dumps(results, indent=2))
    lines = [f"# Lifecycle benchmark\n\n{results['machine']}; hash embedder (256 d), offline merge.\n"]
    for backend in backends:
        lines.append(f"\n## {backend}\n")
        lines.append("| memories | decay, first run | decay, same instant | consolidate (groups) | purge (rows) |")
        lines.append("|---:|---:|---:|---:|---:|")
        for r in results[backend]["sizes"]:
            lines.append(
                f"| {r['memories']:,} | {r['decay_first_ms']:,} ms | {r['decay_same_instant_ms']:,} ms | "
                f"{r['consolidate_ms']:,} ms ({r['groups']:,}) | {r['purge_ms']:,} ms ({r['purged']:,}) |"
            )
        a = results[backend]["add_median"]
        lines.append(f"\n`add` median: {a['auto_off_ms']} ms with auto_consolidate off, {a['auto_on_ms']} ms on.\n")
    (out / "bench_lifecycle.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
