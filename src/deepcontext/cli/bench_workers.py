"""``deepcontext bench workers``: requests/s and latency of ``serve --workers N`` under a search/add mix."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from deepcontext.cli.bench import SETTING, bench, run_settings
from deepcontext.cli.common import console, database_url, fail


@bench.command()
def workers(
    counts: str = typer.Option("1,2", "--workers", help="Comma-separated worker counts, each a server started afresh"),
    db: list[str] = typer.Option(
        None, "--db", help="Database (default: a temporary SQLite file); postgresql://... for PostgreSQL; repeatable"
    ),
    users: int = typer.Option(20, "--users", min=1, help="Users seeded and asked about"),
    turns: int = typer.Option(100, "--turns", min=1, help="Synthetic turns added per user before the load"),
    seconds: float = typer.Option(30.0, "--seconds", min=1.0, help="Measured seconds per worker count"),
    concurrency: int = typer.Option(8, "--concurrency", min=1, help="Clients sending requests at once"),
    search_share: float = typer.Option(0.7, "--search-share", min=0.0, max=1.0, help="Share of searches (the rest: adds)"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
    settings: list[str] = SETTING,
) -> None:
    """Throughput of the REST server under a mix of searches and one-message adds: for each --db and
    each worker count, `deepcontext serve --workers N` is started, loaded by --concurrency clients
    for --seconds, and stopped; requests/s and p50 / p95 / p99 per kind of request."""
    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json
    from deepcontext_bench.workers import run_workers

    try:
        worker_counts = [int(c) for c in counts.split(",") if c.strip()]
    except ValueError:
        fail("--workers must be comma-separated integers")
    if not worker_counts or any(c < 1 or c > 64 for c in worker_counts):
        fail("--workers must be integers from 1 to 64")
    urls: list[str | None] = [database_url(u) for u in db] if db else [None]
    c = console()
    result = asyncio.run(
        run_workers(
            db_urls=urls, worker_counts=worker_counts, users=users, turns_per_user=turns, seconds=seconds,
            concurrency=concurrency, search_share=search_share, settings=run_settings(settings),
            progress=lambda msg: c.print(f"[dim]{msg}[/dim]"),
        )
    )  # fmt: skip
    result["machine"] = machine()
    path = save_json(result, out or default_results_dir(), "workers")
    c.print(
        f"workers: {users} users x {turns} turns, {concurrency} clients, {search_share:.0%} searches, "
        f"{seconds:.0f} s each, {result['cpus']} cpus"
    )
    c.print(
        markdown_table(
            ["backend", "workers", "requests/s", "search p50 / p95 / p99 ms", "add p50 / p95 / p99 ms", "errors", "ready s"],
            [[r["backend"], r["workers"], r["requests_per_s"],
              " / ".join(str(r["search_ms"][p]) for p in ("p50", "p95", "p99")),
              " / ".join(str(r["add_ms"][p]) for p in ("p50", "p95", "p99")),
              ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0", r["ready_seconds"]]
             for r in result["runs"]],
        )
    )  # fmt: skip
    c.print(f"results: {path}")
