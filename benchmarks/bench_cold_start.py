"""Benchmark a new process's first search: from process start to the first result, for the CLI
(`deepcontext search`) and for the library (import, open, search), on a database of N memories of one
user made with the default (local) embedder.

Each measurement is a fresh Python process, timed from outside (so interpreter start, imports, the
database's open and the model's load all count); the median of ``--runs`` is reported, beside the
same search timed inside a process that has already searched (the warm latency).

    python benchmarks/bench_cold_start.py                    # 1,000 memories, 5 runs each
    python benchmarks/bench_cold_start.py --memories 200 --runs 3 --out /tmp

Writes ``bench_cold_start.json`` and ``bench_cold_start.md`` to ``--out`` (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "Where does the user go climbing?"

LIBRARY = """
import asyncio, sys
from deepcontext import DeepContext
async def main():
    async with DeepContext(database_url=sys.argv[1]) as ctx:
        r = await ctx.search(sys.argv[2], user_id="u")
        assert r.results
asyncio.run(main())
"""


async def _fill(url: str, memories: int) -> float:
    """The database, and the warm latency of the query (ms, median of 20) in the process that made it."""
    from deepcontext import DeepContext
    from deepcontext_bench.filler import filler_turns

    async with DeepContext(database_url=url, auto_consolidate=False) as ctx:
        turns = filler_turns(memories, seed=5)
        for i in range(0, len(turns), 50):
            await ctx.add(turns[i : i + 50], user_id="u", conversation_id=f"c{i // 500}")
        await ctx.add([{"role": "user", "content": "I go climbing at the Castle on Thursdays."}], user_id="u")
        await ctx.search(QUERY, user_id="u")
        took = []
        for _ in range(20):
            t0 = time.perf_counter()
            await ctx.search(QUERY, user_id="u", track_access=False)
            took.append(1000 * (time.perf_counter() - t0))
    return statistics.median(took)


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return 1000 * (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=1000, help="filler turns stored for the user (default 1000)")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes per way (default 5)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    if args.memories < 1 or args.runs < 1:
        ap.error("--memories and --runs must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/cold.db"
        warm = asyncio.run(_fill(url, args.memories))
        env = {**os.environ, "DEEPCONTEXT_DATABASE_URL": url}
        ways = {
            "CLI: deepcontext search": [sys.executable, "-m", "deepcontext", "search", QUERY, "--user", "u"],
            "library: import, open, search": [sys.executable, "-c", LIBRARY, url, QUERY],
            "interpreter alone (python -c pass)": [sys.executable, "-c", "pass"],
        }
        rows = {name: statistics.median(_timed(cmd, env) for _ in range(args.runs)) for name, cmd in ways.items()}
    result = {"memories": args.memories, "runs": args.runs, "query": QUERY, "warm_search_ms": round(warm, 1),
              "process_start_to_first_result_ms": {k: round(v, 1) for k, v in rows.items()}}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_cold_start.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    lines = ["| way | process start -> first result (ms, median) |", "|---|---|"]
    lines += [f"| {k} | {v:.0f} |" for k, v in rows.items()]
    lines.append(f"| the same search in a process that already searched | {warm:.1f} |")
    table = "\n".join(lines)
    (args.out / "bench_cold_start.md").write_text(table + "\n", encoding="utf-8")
    print(f"{args.memories} memories, {args.runs} runs each\n\n{table}")


if __name__ == "__main__":
    main()
