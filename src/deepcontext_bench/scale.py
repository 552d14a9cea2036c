"""Scale: one user with up to a million memories, or thousands of users in one database.

The data goes in through the public import path (``DeepContext.import_records`` of generated
export records, one transaction per batch; on PostgreSQL inside the store's bulk-import scope, which
builds the HNSW index once after the rows, as ``deepcontext import --defer-index`` does); embedding a million texts one by one with the local
model would take hours on a small machine, so a pool of distinct synthetic sentences is embedded
with the real embedder and each record's text joins two or three pool sentences, its vector the
normalised sum of their vectors. Queries and the measured adds are embedded by the model as usual.

At each stage: search p50/p95/p99 (query embedding included; a random user per query with many
users), one-message ``add`` p50/p95/p99 (offline extraction), the database's size on disk, the
process's peak RSS, and a cold start (a new process opens the database and runs one search). Where
a SQLite user has an HNSW graph, a restart too: seconds from opening the database in a new process
to the first search answered on the graph, with the graph saved beside the database (loaded) and
without (``vector_index_files=false``: built again), in the same run. ``reuse`` keeps what the
database holds and only tops it up.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from deepcontext.services.memories import deferred_vector_index
from deepcontext_bench.speed import _db_size_mb, _pct, _rss_mb
from deepcontext_bench.synthetic import SyntheticChat

__all__ = ["ScaleRecords", "cold_start", "run_scale"]

ONE_USER = "scale-user"
#: the users of the many-users shape are USERS_PREFIX + a number
USERS_PREFIX = "scale-u"
Progress = Callable[[str, int], None]


class ScaleRecords:
    """Deterministic export records: record ``i`` of a user is the same in every run, so an
    interrupted build resumes by skipping the records already imported."""

    def __init__(
        self, pool_texts: list[str], pool_vectors: np.ndarray, template: dict[str, Any], embedder: str, dim: int
    ) -> None:
        self.texts = pool_texts
        self.vectors = pool_vectors
        self.template = template
        self.header = {"record": "header", "format": "deepcontext-export", "version": 1, "user_id": ONE_USER,
                       "exported_at": datetime.now(UTC).isoformat(), "embedder": embedder, "dimensions": dim}  # fmt: skip
        self.start = datetime(2025, 1, 1, tzinfo=UTC)

    def memory(self, user: str, i: int) -> dict[str, Any]:
        import base64

        from deepcontext.text import content_hash

        rng = random.Random(f"{user}:{i}")
        parts = rng.sample(range(len(self.texts)), rng.choice((2, 2, 3)))
        text = " ".join(self.texts[p] for p in parts)
        vec = self.vectors[parts].sum(axis=0)
        vec = (vec / np.linalg.norm(vec)).astype(np.float32)
        at = (self.start + timedelta(seconds=60 * i)).isoformat()
        return {
            **self.template,
            "record": "memories",
            "id": i + 1,
            "text": text,
            "content_hash": content_hash(text),
            "embedding": base64.b64encode(vec.tobytes()).decode(),
            **{k: at for k in ("created_at", "updated_at", "said_at", "valid_from", "reinforced_at")},
        }

    def batch(self, user: str, start: int, stop: int) -> list[dict[str, Any]]:
        return [{**self.header, "user_id": user}, *(self.memory(user, i) for i in range(start, stop))]


def _pool_texts(n: int) -> list[str]:
    seen: dict[str, None] = {}
    turns = SyntheticChat(seed=2024).turns(10**9)
    while len(seen) < n:
        role, _, text = next(turns)
        if role == "user":
            seen.setdefault(text)
    return list(seen)


def _pool(ctx: Any, n: int, cache: Path, progress: Progress | None) -> tuple[list[str], np.ndarray]:
    """``n`` distinct sentences and their vectors from the real embedder (kept in ``cache``)."""
    texts = _pool_texts(n)
    if cache.exists():
        data = np.load(cache, allow_pickle=False)
        if str(data["model"]) == ctx.embedder.model_id and data["vectors"].shape == (n, ctx.embedder.dimensions):
            return texts, data["vectors"]
    if progress:
        progress("phase", 0)
        progress("total", n)
    out = []
    for i in range(0, n, 64):
        out.append(np.asarray(ctx.embedder.embed(texts[i : i + 64]), dtype=np.float32))
        if progress:
            progress("advance", len(texts[i : i + 64]))
    vectors = np.concatenate(out)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, model=ctx.embedder.model_id, vectors=vectors)
    return texts, vectors


async def _template(ctx: Any) -> dict[str, Any]:
    """A memory record as an export writes it (columns and defaults of this version)."""
    user = "scale-template"
    await ctx.add([{"role": "user", "content": "I live in Lisbon and work as a nurse."}], user)
    rec = [r async for r in ctx.export(user) if r["record"] == "memories"][0]
    await ctx.delete_user(user)
    keep = {k: v for k, v in rec.items() if k not in ("superseded_by", "consolidated_from", "agent_id", "run_id")}
    keep.update(metadata={}, tags=[], conversation_id="imported", access_count=0, mention_count=1)
    return keep


async def _import(
    ctx: Any, records: ScaleRecords, user: str, have: int, want: int, batch: int, progress: Progress | None
) -> None:
    for start in range(have, want, batch):
        stop = min(want, start + batch)
        recs = await asyncio.to_thread(records.batch, user, start, stop)
        await ctx.import_records(recs, user_id=user)
        if progress:
            progress("advance", stop - start)


async def _measure(ctx: Any, users: list[str], queries: list[str], adds: list[str], rng: random.Random) -> dict[str, Any]:
    for q in queries[:20]:  # warm-up
        await ctx.search(q, rng.choice(users), limit=10)
    lat = []
    for q in queries:
        ctx.embedder.clear_cache()
        user = rng.choice(users)
        t0 = time.perf_counter()
        await ctx.search(q, user, limit=10)
        lat.append((time.perf_counter() - t0) * 1000)
    add_lat = []
    added = 0
    for text in adds:
        user = rng.choice(users)
        t0 = time.perf_counter()
        r = await ctx.add([{"role": "user", "content": text}], user)
        add_lat.append((time.perf_counter() - t0) * 1000)
        added += r.memories_added
    return {
        "added_by_adds": added,
        "search_ms": {"p50": _pct(lat, 50), "p95": _pct(lat, 95), "p99": _pct(lat, 99), "mean": statistics.fmean(lat)},
        "add_ms": {"p50": _pct(add_lat, 50), "p95": _pct(add_lat, 95), "p99": _pct(add_lat, 99)},
    }


async def _users_list(ctx: Any, names: list[str]) -> dict[str, float]:
    """``users()`` as a client pages through them: the first page of 100, a page from the middle,
    and every user (all pages of 1,000), median ms of a few rounds."""

    async def timed(**kw: Any) -> float:
        t0 = time.perf_counter()
        await ctx.users(**kw)
        return (time.perf_counter() - t0) * 1000

    async def everyone() -> float:
        t0 = time.perf_counter()
        after = None
        while page := await ctx.users(after=after, limit=1000):
            after = page[-1]
        return (time.perf_counter() - t0) * 1000

    middle = sorted(names)[len(names) // 2]
    first = [await timed(limit=100) for _ in range(20)]
    mid = [await timed(after=middle, limit=100) for _ in range(20)]
    alls = [await everyone() for _ in range(3)]
    return {"first_100": round(statistics.median(first), 2), "middle_100": round(statistics.median(mid), 2),
            "all": round(statistics.median(alls), 1)}  # fmt: skip


def cold_start(db_url: str, user: str, query: str, settings: dict[str, Any], graph: bool = False) -> dict[str, Any]:
    """Open the database in a new process and run one search: seconds to open, to the first
    result, and that process's peak RSS. ``graph``: then wait for the user's HNSW graph (SQLite;
    loaded from its file or built) and search again: seconds from opening to that answer
    (``graph_s``) and where the graph came from (``graph_source``)."""
    code = (
        "import asyncio, json, sys\n"
        "from deepcontext_bench.scale import _cold\n"
        "print(json.dumps(asyncio.run(_cold(*json.loads(sys.argv[1])))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps([db_url, user, query, settings, graph])],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


async def _cold(db_url: str, user: str, query: str, settings: dict[str, Any], graph: bool = False) -> dict[str, Any]:
    from deepcontext import DeepContext

    t0 = time.perf_counter()
    ctx = DeepContext(database_url=db_url, track_access=False, **settings)
    await ctx.init()
    opened = time.perf_counter() - t0
    await ctx.search(query, user, limit=10)
    first = time.perf_counter() - t0
    out: dict[str, Any] = {"open_s": round(opened, 3), "first_search_s": round(first, 3)}
    vectors = getattr(ctx.store, "vectors", None)  # SQLite's per-user matrices and graphs
    if graph and vectors is not None:
        uv = vectors.get(user)
        if await asyncio.to_thread(uv.wait_for_index, 3600):
            await ctx.search(query, user, limit=10)
            out.update(graph_s=round(time.perf_counter() - t0, 3), graph_source=uv.source)
    await ctx.close()
    return {**out, "peak_rss_mb": _own_peak_rss_mb()}


def _own_peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM; getrusage keeps the parent's across fork and exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(_rss_mb(), 1)


def _restart(db_url: str, user: str, query: str, settings: dict[str, Any]) -> dict[str, Any]:
    """A new process's time to its first search on the user's graph: loading the graph this process
    saved when it was built (and replaying the rows the measured adds wrote since) and, beside it,
    building the graph again."""
    saved = cold_start(db_url, user, query, settings, graph=True)
    rebuilt = cold_start(db_url, user, query, {**settings, "vector_index_files": False}, graph=True)
    return {"saved": saved, "rebuilt": rebuilt}


def _wait_for_ann(ctx: Any, users: list[str]) -> str:
    vectors = getattr(ctx.store, "vectors", None)
    if vectors is None:
        return "pgvector"
    built = [vectors.get(u).wait_for_index(1800) for u in users[:1]]
    return "hnsw" if all(built) else "exact"


async def run_scale(
    *,
    db_url: str,
    sizes: tuple[int, ...] = (1_000_000,),
    users: int = 1,
    pool: int = 20_000,
    batch: int = 5_000,
    queries: int = 200,
    adds: int = 50,
    reuse: bool = False,
    build: bool = True,
    measure: bool = True,
    settings: dict[str, Any] | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Grow the database stage by stage and measure at each. ``users == 1``: one user holding
    ``sizes[i]`` memories at stage i; otherwise ``users`` users of ``sizes[i]`` memories each.
    ``build=False`` measures what the database holds (its users holding memories); ``measure=False``
    only builds (e.g. at a lower priority, measured by a later run)."""
    from deepcontext import DeepContext

    settings = settings or {}
    ctx = DeepContext(database_url=db_url, track_access=False, **settings)
    await ctx.init()
    stages: list[dict[str, Any]] = []
    rng = random.Random(11)
    names = [ONE_USER] if users == 1 else [f"{USERS_PREFIX}{i:05d}" for i in range(users)]
    qs = SyntheticChat(seed=7).questions(queries)
    add_texts = [t for r, _, t in SyntheticChat(seed=99).turns(adds * 2) if r == "user"][:adds]
    try:
        if not reuse:
            for u in await ctx.users():
                if u == ONE_USER or u.startswith(USERS_PREFIX):
                    await ctx.delete_user(u)
        cache = (cache_dir or Path(tempfile.gettempdir())) / f"scale-pool-{pool}.npz"
        texts, vectors = await asyncio.to_thread(_pool, ctx, pool, cache, progress)
        records = ScaleRecords(texts, vectors, await _template(ctx), ctx.embedder.model_id, ctx.embedder.dimensions)
        for size in sorted(sizes):
            held = {u: (await ctx.stats(u))["memories"] for u in names} if reuse or stages else dict.fromkeys(names, 0)
            if not build:  # measure what the database holds, among the users holding something
                names = [u for u in names if held[u]] or names
                held = {u: held[u] for u in names}
            missing = sum(max(0, size - n) for n in held.values()) if build else 0
            if progress:
                progress("phase", 1)
                progress("total", missing)
            t0 = time.perf_counter()
            if build and missing:
                async with deferred_vector_index(ctx.store):  # PostgreSQL: the HNSW index built once, after the rows
                    for u in names:
                        await _import(ctx, records, u, held[u], size, batch if users == 1 else size, progress)
            build_s = time.perf_counter() - t0
            total = sum(max(size, n) if build else n for n in held.values())
            stage: dict[str, Any] = {
                "memories_per_user": round(total / len(names)),
                "memories_total": total,
                "users": len(names),
                "imported": missing,
                "import_seconds": round(build_s, 1),
                "import_per_s": round(missing / build_s, 1) if missing else None,
            }
            if measure:
                # SQLite builds a user's HNSW graph in the background after its first search: measure
                # once it is in use, as in a long-running process
                await ctx.search(qs[0], names[0], limit=10)
                stage["vector_index"] = await asyncio.to_thread(_wait_for_ann, ctx, names)
                if progress:
                    progress("phase", 2)
                stage.update(await _measure(ctx, names, qs, add_texts, rng))
                if users > 1:
                    stage["users_list_ms"] = await _users_list(ctx, names)
                stage["memories_total"] += stage["added_by_adds"]
                stage["cold_start"] = await asyncio.to_thread(cold_start, db_url, rng.choice(names), qs[0], settings)
                if stage["vector_index"] == "hnsw":
                    stage["restart"] = await asyncio.to_thread(_restart, db_url, names[0], qs[0], settings)
            stage["db_size_mb"] = _db_size_mb(db_url, ctx.store)
            stage["peak_rss_mb"] = round(_rss_mb(), 1)
            stages.append(stage)
        backend, embedder = ctx.store.backend, ctx.embedder.model_id
    finally:
        await ctx.close()
    return {
        "benchmark": "scale",
        "backend": backend,
        "embedder": embedder,
        "shape": "one user" if users == 1 else f"{users} users",
        "pool": pool,
        "queries": queries,
        "adds": adds,
        "stages": stages,
    }


def iter_sizes(text: str) -> Iterator[int]:
    for s in text.split(","):
        if s.strip():
            yield int(s.replace("_", "").strip())
