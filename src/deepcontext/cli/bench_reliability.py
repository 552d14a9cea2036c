"""``deepcontext bench reliability``: kill -9, concurrent processes and hostile REST clients."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from deepcontext.cli.bench import bench
from deepcontext.cli.common import console, database_url, fail


@bench.command()
def reliability(
    db: list[str] = typer.Option(
        None,
        "--db",
        help="Database (default: temporary SQLite files); postgresql://... for PostgreSQL (give an empty one). "
        "Repeat it to run every scenario on each",
    ),
    scenario: list[str] = typer.Option(
        None,
        "--scenario",
        help="Run only these (repeatable): kill-add, kill-import, kill-consolidate, kill-index (SQLite), processes, race-delete, rest, times, "
        "read-only, read-only-key, disk-full, cli-embedder; and, only when named: large-reads (server memory under "
        "repeated large reads), tenant-users (listing a tenant's users beside a large tenant), soak (16 clients "
        "adding and searching: server memory over time)",
    ),
    kills: int = typer.Option(6, "--kills", min=1, help="SIGKILLs of the writer per kill scenario"),
    kill_delay: float = typer.Option(
        3.0, "--kill-delay", min=0.0, help="Most seconds between a writer's first acknowledged call and its SIGKILL"
    ),
    writers: int = typer.Option(4, "--writers", min=1, help="Writer processes of the processes scenario"),
    per_writer: int = typer.Option(
        30, "--per-writer", min=1, help="Adds per writer process (and, times the writers, adds racing deletes)"
    ),
    requests: int = typer.Option(600, "--requests", min=1, help="REST requests (valid and hostile mixed), on loopback"),
    concurrency: int = typer.Option(16, "--concurrency", min=1, help="REST requests in flight at once"),
    time_limit: float = typer.Option(
        120.0, "--time-limit", min=1.0, help="Seconds after which the REST run sends no more requests"
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed (kill times, request mix)"),
    read_seconds: float = typer.Option(120.0, "--read-seconds", min=1.0, help="Seconds of large reads (large-reads)"),
    other_users: int = typer.Option(200_000, "--other-users", min=1, help="Users of the other tenant (tenant-users)"),
    soak_minutes: float = typer.Option(1.0, "--soak-minutes", min=0.05, help="Minutes of the soak scenario"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
) -> None:
    """Kill -9 during adds, imports and consolidation, processes sharing a database, adds racing
    deletes, valid and hostile REST requests, a read-only database, a read-only key, a full disk, the
    CLI under another embedder: tried / failed / lost / leaked / 5xx / p99 per scenario."""
    from deepcontext_bench.reliability import ALL_SCENARIOS, SCENARIOS, run_reliability
    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json

    chosen = tuple(scenario) if scenario else SCENARIOS
    unknown = [s for s in chosen if s not in ALL_SCENARIOS]
    if unknown:
        fail(f"unknown scenario {unknown[0]!r}; known: {', '.join(ALL_SCENARIOS)}")
    urls: list[str | None] = [database_url(u) for u in db] if db else [None]
    err = console(stderr=True)
    outcomes = asyncio.run(
        run_reliability(
            urls, scenarios=chosen, kills=kills, kill_delay=kill_delay, writers=writers, per_writer=per_writer, requests=requests,
            concurrency=concurrency, time_limit=time_limit, seed=seed, progress=lambda m: err.print(f"[dim]{m}[/]"),
            read_seconds=read_seconds, other_users=other_users, soak_minutes=soak_minutes,
        )
    )  # fmt: skip
    rows = [
        [o.scenario, o.backend, o.tried, o.failed, o.lost, o.leaked, o.server_errors, o.timeouts,
         round(o.p99_ms, 1) if o.p99_ms is not None else "-"]
        for o in outcomes
    ]  # fmt: skip
    c = console()
    c.print(
        markdown_table(["scenario", "backend", "tried", "failed", "lost", "leaked", "5xx", "timeouts", "p99 ms"], rows),
        soft_wrap=True,
    )
    for o in outcomes:
        for note in o.notes[:5]:
            c.print(f"  {o.scenario} ({o.backend}): {note}", markup=False, highlight=False, soft_wrap=True)
    settings = {"kills": kills, "kill_delay": kill_delay, "writers": writers, "per_writer": per_writer, "requests": requests,
                "concurrency": concurrency, "time_limit": time_limit, "seed": seed, "read_seconds": read_seconds,
                "other_users": other_users, "soak_minutes": soak_minutes}  # fmt: skip
    backends = sorted({o.backend for o in outcomes})
    path = save_json(
        {"machine": machine(), "settings": settings, "results": [o.as_dict() for o in outcomes]},
        out or default_results_dir(),
        "reliability-" + "-".join(backends),
    )
    c.print(f"\nresults: {path}")
    bad = sum(o.failed + o.lost + o.leaked + o.server_errors + o.timeouts for o in outcomes)
    if bad:
        raise typer.Exit(1)
