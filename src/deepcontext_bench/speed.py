"""Speed at scale: ingest throughput and search latency as one user's memory grows.

Stages at 1k, 10k and 100k memories (1M on request) in one growing database: each stage adds
synthetic chat turns through ``DeepContext.add`` (offline extraction on) until the user holds that
many memories, then measures warm search latency over a fixed set of questions (the embedder's
cache is cleared before each, so every query is embedded), and the same queries done by brute force
(embedding, then exact dot products with all vectors and a full sort) on the same vectors as a
baseline. Peak RSS and the database's size on disk are recorded.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from deepcontext.embed.embedder import EmbedderStats
from deepcontext_bench.search_stages import search_stages
from deepcontext_bench.synthetic import SyntheticChat

__all__ = ["run_speed"]

USER = "bench-user"


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _db_size_mb(url: str, store: Any) -> float | None:
    size = store.size_bytes()
    return None if size is None else size / 2**20


async def run_speed(
    *,
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000),
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    queries: int = 200,
    batch: int = 50,
    progress: Callable[[str, int], None] | None = None,
    reuse: bool = False,
    peer: str | None = None,
) -> dict[str, Any]:
    """Stages at ``sizes``. ``reuse``: keep what the database already holds for the benchmark
    user (from an earlier run on the same ``db_url``) and ingest only what a stage still lacks,
    so a stage the database already reaches measures search alone (its ingest rate is None).
    ``peer="mem0"``: mem0 then ingests the same turns in the same batches, stage by stage, and
    answers the same queries (see :mod:`deepcontext_bench.mem0_peer`)."""
    from deepcontext import DeepContext

    tmp = None
    if db_url is None:
        tmp = tempfile.TemporaryDirectory(prefix="dc-speed-")
        db_url = f"sqlite:///{Path(tmp.name) / 'speed.db'}"
    gen = SyntheticChat(seed=42)
    qs = SyntheticChat(seed=7).questions(queries)
    ctx = DeepContext(database_url=db_url, track_access=False, **(settings or {}))
    await ctx.init()
    stages: list[dict[str, Any]] = []
    try:
        turns = gen.turns(10**9)
        memories = 0
        total_turns = 0
        if reuse:
            held = await ctx.stats(USER)
            memories, total_turns = held["memories"], held["turns"]
            for _ in range(total_turns):  # continue the generator where the earlier run stopped
                next(turns)
        else:
            await ctx.delete_user(USER)
        # the model's load is a process's start-up, not ingest (the peer gets the loaded model too)
        await asyncio.to_thread(ctx.embedder.warm_up)
        if progress:
            progress("total", max(sizes))
        for size in sorted(sizes):
            embedded_before = ctx.embedder.stats()
            t0 = time.perf_counter()
            stage_turns = 0
            while memories < size:
                msgs = []
                for _ in range(batch):
                    role, name, text = next(turns)
                    msgs.append({"role": role, "content": text} | ({"name": name} if name else {}))
                r = await ctx.add(msgs, USER, conversation_id=f"c{total_turns // 1000}")
                stage_turns += len(r.turn_ids)
                total_turns += len(r.turn_ids)
                memories += r.memories_added
                if progress:
                    progress("set", min(memories, max(sizes)))
            ingest_s = time.perf_counter() - t0
            embedded = ctx.embedder.stats() - embedded_before
            stats = await ctx.stats(USER)
            memories = stats["memories"]
            # warm-up, then measured searches (query embedding included)
            for q in qs[:20]:
                await ctx.search(q, USER, limit=10)
            # SQLite: a user past vector_index_min_rows gets an HNSW graph built in the background
            # after the first search; measure once it is in use (as it is in a long-running process)
            vectors = getattr(ctx.store, "vectors", None)
            ann = await asyncio.to_thread(vectors.get(USER).wait_for_index, 600) if vectors is not None else None
            # the embedder's cache is cleared before each measured search: the query is embedded
            # every time, as a new question would be
            lat = []
            for q in qs:
                ctx.embedder.clear_cache()
                t1 = time.perf_counter()
                await ctx.search(q, USER, limit=10)
                lat.append((time.perf_counter() - t1) * 1000)
            logged = await _activity_cost(ctx, qs[:100])
            stage_ms = await search_stages(ctx, USER, qs[:100])
            vec_lat = []
            for q in qs:
                ctx.embedder.clear_cache()
                t1 = time.perf_counter()
                await ctx.search(q, USER, limit=10, config="vector")
                vec_lat.append((time.perf_counter() - t1) * 1000)
            # brute force on the same vectors: exact dot products over everything, full sort
            ids = [m.id for m in ctx.store.iter_memories(USER) if m.is_active]
            vecs = ctx.store.embeddings(USER, ids)  # type: ignore[attr-defined]
            mat = np.stack([vecs[i] for i in ids]).astype(np.float32)
            brute = []
            for q in qs:
                ctx.embedder.clear_cache()
                t1 = time.perf_counter()
                qv = ctx.embedder.embed_one(q)
                scores = mat @ qv
                order = np.argsort(-scores)[:10]
                _ = [ids[i] for i in order]
                brute.append((time.perf_counter() - t1) * 1000)
            embed_lat = []
            for q in qs[:50]:
                t1 = time.perf_counter()
                ctx.embedder.embed([q + " "])  # bypass the cache: a fresh text each time
                embed_lat.append((time.perf_counter() - t1) * 1000)
            stages.append(
                {
                    "memories": memories,
                    "ingested": stage_turns > 0,
                    "vector_index": "hnsw" if ann else ("exact" if vectors is not None else "pgvector"),
                    "turns_total": total_turns,
                    "stage_turns": stage_turns,
                    "ingest_seconds": round(ingest_s, 3),
                    "ingest_turns_per_s": round(stage_turns / ingest_s, 1) if stage_turns else None,
                    # the model's share of ingest time, and the texts it embedded per turn
                    "ingest_embedding": _embedding_share(embedded, ingest_s, stage_turns),
                    "search_ms": {
                        "p50": _pct(lat, 50),
                        "p95": _pct(lat, 95),
                        "p99": _pct(lat, 99),
                        "mean": statistics.fmean(lat),
                    },
                    "activity_log_ms": logged,
                    "search_stages_ms": stage_ms,
                    "vector_only_ms": {"p50": _pct(vec_lat, 50), "p95": _pct(vec_lat, 95), "p99": _pct(vec_lat, 99)},
                    "brute_force_ms": {"p50": _pct(brute, 50), "p95": _pct(brute, 95), "p99": _pct(brute, 99)},
                    "query_embedding_ms_p50": _pct(embed_lat, 50),
                    "peak_rss_mb": round(_rss_mb(), 1),
                    "db_size_mb": _db_size_mb(db_url, ctx.store),
                    "rows": stats,
                }
            )
        backend = ctx.store.backend
        embedder = ctx.embedder.model_id
        peer_result = _run_mem0(ctx.embedder, [s["stage_turns"] for s in stages], qs, batch, progress) if peer == "mem0" else None
    finally:
        await ctx.close()
        if tmp is not None:
            tmp.cleanup()
    return {
        "benchmark": "speed",
        "backend": backend,
        "embedder": embedder,
        "queries": queries,
        "batch": batch,
        "cpus": os.cpu_count(),
        "stages": stages,
        "peer": peer_result,
        "ours_over_peer": [
            {
                "turns": theirs["turns_total"],
                "ingest_turns_per_s": round(ours["ingest_turns_per_s"] / theirs["ingest_turns_per_s"], 3)
                if ours["ingest_turns_per_s"] and theirs["ingest_turns_per_s"]
                else None,
                **{f"search_ms_{p}": round(ours["search_ms"][p] / theirs["search_ms"][p], 3) for p in ("p50", "p95", "p99")},
            }
            for ours, theirs in zip(stages, peer_result["stages"], strict=True)
        ]
        if peer_result
        else None,
    }


def _embedding_share(embedded: EmbedderStats, seconds: float, turns: int) -> dict[str, float | None]:
    """The model's share of an ingest's time and what it embedded per turn (None: nothing ingested)."""
    if not turns:
        return {"share": None, "texts_per_turn": None, "texts_asked_per_turn": None, "ms_per_text": None}
    return {
        "share": round(embedded.model_seconds / seconds, 3),
        "texts_per_turn": round(embedded.texts_embedded / turns, 2),
        "texts_asked_per_turn": round(embedded.texts_asked / turns, 2),
        "ms_per_text": round(1000 * embedded.model_seconds / embedded.texts_embedded, 3) if embedded.texts_embedded else None,
    }


async def _activity_cost(ctx: Any, qs: list[str]) -> dict[str, float]:
    """Search latency with calls recorded in the activity log (as the server's are) against the same
    searches unrecorded, in alternating blocks so drift of a noisy machine hits both alike."""
    from deepcontext.services.activity import calls_from

    lat: dict[bool, list[float]] = {False: [], True: []}
    for block in range(6):
        recorded = block % 2 == 1
        for q in qs:
            ctx.embedder.clear_cache()
            with calls_from("rest" if recorded else "inspector"):
                t1 = time.perf_counter()
                await ctx.search(q, USER, limit=10)
                lat[recorded].append((time.perf_counter() - t1) * 1000)
        await ctx.flush()
    off, on = lat[False], lat[True]
    return {
        "off_p50": _pct(off, 50), "off_p95": _pct(off, 95), "off_p99": _pct(off, 99), "on_p50": _pct(on, 50),
        "on_p95": _pct(on, 95), "on_p99": _pct(on, 99), "added_p50": round(_pct(on, 50) - _pct(off, 50), 3),
        "added_p95": round(_pct(on, 95) - _pct(off, 95), 3),
    }  # fmt: skip


def _run_mem0(
    embedder: Any, stage_turns: list[int], qs: list[str], batch: int, progress: Callable[[str, int], None] | None
) -> dict[str, Any]:
    """mem0 on the same synthetic turns as our stages (one memory per turn), the same queries."""
    from deepcontext_bench.mem0_peer import Mem0Peer, network_guard

    embedder.clear_cache()
    turns = SyntheticChat(seed=42).turns(10**9)
    stages: list[dict[str, Any]] = []
    total = 0
    with network_guard():
        peer = Mem0Peer(embedder)
        try:
            if progress:
                progress("total", sum(stage_turns))
                progress("set", 0)
            for n in stage_turns:
                embedded_before = embedder.stats()
                t0 = time.perf_counter()
                done = 0
                while done < n:
                    msgs = []
                    for _ in range(min(batch, n - done)):
                        role, name, text = next(turns)
                        msgs.append({"role": role, "content": f"{name}: {text}" if name else text})
                    peer.add(USER, msgs)
                    done += len(msgs)
                    if progress:
                        progress("advance", len(msgs))
                ingest_s = time.perf_counter() - t0
                embedded = embedder.stats() - embedded_before
                total += n
                for q in qs[:20]:
                    peer.search(USER, q, 10)
                lat = [peer.timed_search(USER, q, 10)[1] for q in qs]
                stages.append(
                    {
                        "turns_total": total,
                        "memories": total,
                        "ingest_seconds": round(ingest_s, 3),
                        "ingest_turns_per_s": round(n / ingest_s, 1) if n else None,
                        "ingest_embedding": _embedding_share(embedded, ingest_s, n),
                        "search_ms": {
                            "p50": _pct(lat, 50),
                            "p95": _pct(lat, 95),
                            "p99": _pct(lat, 99),
                            "mean": statistics.fmean(lat),
                        },
                        "peak_rss_mb": round(_rss_mb(), 1),
                    }
                )
        finally:
            peer.close()
    return {"name": f"mem0 {peer.version}", "hybrid": peer.hybrid, "stages": stages}
