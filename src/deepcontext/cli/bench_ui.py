"""``deepcontext bench ui``: how fast the web inspector's pages answer at a given size."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.bench import SETTING, bench, progress_callback, run_settings
from deepcontext.cli.common import console, database_url


@bench.command("ui")
def ui(
    memories: int = typer.Option(100_000, "--memories", min=100, help="Memories of the benchmark user"),
    db: str = typer.Option(None, "--db", help="Database (default: a temporary SQLite file); postgresql://... for PostgreSQL"),
    rounds: int = typer.Option(20, "--rounds", min=3, help="Requests per page"),
    reuse: bool = typer.Option(False, "--reuse", help="Keep what --db holds from an earlier run and only top it up"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
    settings: list[str] = SETTING,
) -> None:
    """Server time of each inspector page (p50/p95 ms) for one user with --memories memories."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json
    from deepcontext_bench.ui import run_ui_bench

    url = database_url(db) if db else None
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True) as progress:  # fmt: skip
        task = progress.add_task("memories", total=None)
        result: dict[str, Any] = asyncio.run(
            run_ui_bench(
                memories=memories,
                db_url=url,
                settings=run_settings(settings),
                rounds=rounds,
                reuse=reuse,
                progress=progress_callback(progress, task),
            )  # fmt: skip
        )
    result["machine"] = machine()
    path = save_json(result, out or default_results_dir(), f"ui-{result['backend']}")
    c = console()
    c.print(
        f"inspector pages: {result['backend']}, {result['memories']} memories, {result['turns']} turns, {result['rounds']} requests each"
    )
    rows = [[name, p["p50_ms"], p["p95_ms"], p["bytes"] // 1024] for name, p in result["pages"].items()]
    c.print(markdown_table(["page", "p50 ms", "p95 ms", "KiB"], rows))
    c.print(f"\nresults: {path}")
