"""Vector search latency on PostgreSQL + pgvector (HNSW) at N memories of one user.

    python scripts/bench_pg_vector.py [--n 100000] [--dim 384] [--queries 300] [--admin-url URL] [--keep]

Creates a scratch database (dc_bench_vec_<random>), migrates it with PostgresStore, loads N random
unit vectors for one user with COPY (the HNSW index is dropped for the load and rebuilt after with
the migration's own parameters, which is how a bulk import should do it), ANALYZEs, then times
PostgresStore.vector_search (the real code path: SET LOCAL ef_search, iterative scan, filters) for
random queries: plain, and with a tier filter matching half of the rows. Prints p50 / p95 / p99 in ms
and recall@10 against an exact numpy scan. The database is dropped afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import time
from datetime import UTC, datetime

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--ef-search", type=int, default=100)
    ap.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--data",
        choices=("random", "clustered"),
        default="random",
        help="random: i.i.d. Gaussian directions (the hardest case for HNSW); clustered: 1000 topics with "
        "noise around them, closer to how text embeddings spread",
    )
    args = ap.parse_args()

    import psycopg
    from sqlalchemy.engine import make_url

    from deepcontext.store import MemoryFilters
    from deepcontext.store.migrations import PG_HNSW_EF_CONSTRUCTION, PG_HNSW_M
    from deepcontext.store.postgres import PostgresStore
    from deepcontext.types import MemoryTier

    name = f"dc_bench_vec_{secrets.token_hex(4)}"
    admin = make_url(args.admin_url).set(drivername="postgresql")
    url = admin.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        store = PostgresStore(url, args.dim, ef_search=args.ef_search)
        store.migrate()
        rng = np.random.default_rng(0)
        vecs = rng.normal(size=(args.n, args.dim)).astype(np.float32)
        if args.data == "clustered":
            centres = rng.normal(size=(1000, args.dim)).astype(np.float32)
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
            vecs = centres[rng.integers(0, 1000, args.n)] + 0.7 * vecs / np.sqrt(args.dim)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        t0 = time.perf_counter()
        with psycopg.connect(url) as conn:
            conn.execute("DROP INDEX ix_memories_embedding_hnsw")
            conn.execute(
                "INSERT INTO users (user_id, version, incarnation, created_at, updated_at, consolidation_due) "
                "VALUES ('bench', 1, 'x', now(), now(), false)"
            )
            cols = (
                "user_id, text, content_hash, memory_type, tier, status, importance, base_importance, confidence, "
                "access_count, reinforced_at, created_at, updated_at, valid_from, source, consolidated_from, "
                "metadata, pinned, tags, rev, embedding"
            )
            with conn.cursor().copy(f"COPY memories ({cols}) FROM STDIN") as copy:
                for i, v in enumerate(vecs):
                    tier = "short_term" if i % 2 else "long_term"
                    copy.write_row(
                        ("bench", f"memory {i}", f"h{i}", "semantic", tier, "active", 0.5, 0.5, 0.8, 0, "2025-01-01Z",
                         "2025-01-01Z", "2025-01-01Z", "2025-01-01Z", "bench", "[]", "{}", False, "[]", 1,
                         "[" + ",".join(f"{x:.7g}" for x in v) + "]")
                    )  # fmt: skip
            conn.commit()
            t1 = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute(
                "CREATE INDEX ix_memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {PG_HNSW_M}, ef_construction = {PG_HNSW_EF_CONSTRUCTION})"
            )
            conn.execute("ANALYZE memories")
            conn.commit()
            t2 = time.perf_counter()
        print(f"loaded {args.n} x {args.dim} in {t1 - t0:.1f} s; HNSW build {t2 - t1:.1f} s")
        with psycopg.connect(url) as conn:
            ids = np.array([r[0] for r in conn.execute("SELECT id FROM memories ORDER BY id")], dtype=np.int64)

        now = datetime(2025, 6, 1, tzinfo=UTC)
        qs = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
        if args.data == "clustered":  # queries near stored memories, as real queries are
            qs = vecs[rng.integers(0, args.n, args.queries)] + 0.7 * qs / np.sqrt(args.dim)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        for label, filters, mask in (
            ("no filter", MemoryFilters(), np.ones(args.n, dtype=bool)),
            ("tier filter (50%)", MemoryFilters(tiers=(MemoryTier.SHORT_TERM,)), (np.arange(args.n) % 2 == 1)),
        ):
            for q in qs[:20]:  # warm up: pool, caches
                store.vector_search("bench", q, args.k, filters, now)
            times, recalls = [], []
            for q in qs:
                s = time.perf_counter()
                got = store.vector_search("bench", q, args.k, filters, now)
                times.append((time.perf_counter() - s) * 1000)
                scores = np.where(mask, vecs @ q, -np.inf)
                exact = set(ids[np.argsort(-scores)[: args.k]].tolist())
                recalls.append(len(exact & {i for i, _ in got}) / args.k)
            qt = statistics.quantiles(times, n=100)
            print(
                f"{label:>18}: p50 {qt[49]:.2f} ms  p95 {qt[94]:.2f} ms  p99 {qt[98]:.2f} ms  "
                f"recall@{args.k} {np.mean(recalls):.3f}  ({args.queries} queries, ef_search {args.ef_search}, {args.data} data)"
            )
        store.close()
    finally:
        if not args.keep:
            with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
