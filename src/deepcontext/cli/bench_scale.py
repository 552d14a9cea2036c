"""``deepcontext bench scale``: a million memories of one user, or thousands of users, on SQLite or
PostgreSQL: search and add latency, database size, RSS and cold start at each size."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.bench import SETTING, bench, run_settings
from deepcontext.cli.common import console, database_url, fail

PHASES = ("embedding the sentence pool", "importing memories", "measuring")


@bench.command("scale")
def scale(
    db: str = typer.Option(
        None, "--db", help="Database to build and measure (default: benchmarks/results/scale.db); postgresql://... for PostgreSQL"
    ),
    sizes: str = typer.Option(
        "100000,300000,1000000", "--sizes", help="Comma-separated memories per user, one measured stage each (growing)"
    ),
    users: int = typer.Option(
        1, "--users", min=1, help="Users in the database; each holds the stage's size (e.g. --users 10000 --sizes 100)"
    ),
    pool: int = typer.Option(
        20_000, "--pool", min=100, help="Distinct sentences embedded with the real model; records combine 2-3 of them"
    ),
    batch: int = typer.Option(5_000, "--batch", min=1, help="Records per import transaction (one user)"),
    queries: int = typer.Option(200, "--queries", min=10, help="Measured searches per stage (a random user each)"),
    adds: int = typer.Option(50, "--adds", min=1, help="Measured one-message adds per stage (a random user each)"),
    reuse: bool = typer.Option(
        False, "--reuse", help="Keep what --db holds from an earlier (possibly interrupted) run and top it up"
    ),
    build_only: bool = typer.Option(False, "--build-only", help="Import up to the sizes, measure nothing (e.g. under nice)"),
    measure_only: bool = typer.Option(
        False, "--measure-only", help="Import nothing: measure what --db holds (implies --reuse; --sizes is ignored)"
    ),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
    settings: list[str] = SETTING,
) -> None:
    """Build a large database through the import path (see the module's docstring for how the
    records are made) and measure search and add p50/p95/p99, size on disk, peak RSS and a cold
    start in a new process at each stage."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json
    from deepcontext_bench.scale import iter_sizes, run_scale

    try:
        size_list = tuple(iter_sizes(sizes))
    except ValueError:
        fail("--sizes must be comma-separated integers")
    if not size_list or any(n <= 0 for n in size_list):
        fail("--sizes must be positive integers")
    if build_only and measure_only:
        fail("--build-only and --measure-only exclude each other")
    if measure_only:
        reuse, size_list = True, (1,)
    out_dir = out or default_results_dir()
    url = str(database_url(db)) if db else f"sqlite:///{out_dir / 'scale.db'}"
    if not db:
        out_dir.mkdir(parents=True, exist_ok=True)
    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console(stderr=True), transient=True) as progress:
        task = progress.add_task(PHASES[0], total=None)

        def cb(kind: str, n: int) -> None:
            if kind == "phase":
                progress.reset(task, description=PHASES[n], total=None)
            elif kind == "total":
                progress.update(task, total=n)
            else:
                progress.advance(task, n)

        result: dict[str, Any] = asyncio.run(
            run_scale(
                db_url=url,
                sizes=size_list,
                users=users,
                pool=pool,
                batch=batch,
                queries=queries,
                adds=adds,
                reuse=reuse,
                build=not measure_only,
                measure=not build_only,
                settings=run_settings(settings),
                cache_dir=out_dir,
                progress=cb,
            )  # fmt: skip
        )
    result["machine"] = machine()
    result["settings"] = run_settings(settings)
    path = save_json(result, out_dir, f"scale-{result['backend']}-{'one' if users == 1 else 'many'}")
    c = console()
    c.print(f"scale: {result['backend']}, {result['shape']}, embedder {result['embedder']}")
    if build_only:
        c.print(
            markdown_table(
                ["memories/user", "total", "imported", "seconds", "imported/s", "db MB"],
                [[s["memories_per_user"], s["memories_total"], s["imported"], s["import_seconds"], s["import_per_s"], s["db_size_mb"]]
                 for s in result["stages"]],
            )
        )  # fmt: skip
        c.print(f"\nresults: {path}")
        return
    c.print(
        markdown_table(
            ["memories/user", "total", "imported/s", "search p50 ms", "p95", "p99", "add p50 ms", "p95", "p99", "db MB",
             "peak RSS MB", "cold open s", "cold first search s", "cold RSS MB"],
            [[s["memories_per_user"], s["memories_total"], s["import_per_s"], s["search_ms"]["p50"], s["search_ms"]["p95"],
              s["search_ms"]["p99"], s["add_ms"]["p50"], s["add_ms"]["p95"], s["add_ms"]["p99"], s["db_size_mb"],
              s["peak_rss_mb"], s["cold_start"]["open_s"], s["cold_start"]["first_search_s"], s["cold_start"]["peak_rss_mb"]]
             for s in result["stages"]],
        )
    )  # fmt: skip
    listed = [s for s in result["stages"] if "users_list_ms" in s]
    if listed:
        c.print("\nusers(): ms to list the first 100 users, 100 from the middle, and all of them (pages of 1,000)")
        c.print(
            markdown_table(
                ["users", "first 100", "middle 100", "all"],
                [[s["users"], s["users_list_ms"]["first_100"], s["users_list_ms"]["middle_100"], s["users_list_ms"]["all"]]
                 for s in listed],
            )
        )  # fmt: skip
    restarts = [s for s in result["stages"] if "restart" in s]
    if restarts:
        c.print("\nrestart (SQLite): seconds from opening the database in a new process to the first search on the graph")
        c.print(
            markdown_table(
                ["memories/user", "graph loaded s", "graph built s", "built / loaded"],
                [[s["memories_per_user"], s["restart"]["saved"].get("graph_s"), s["restart"]["rebuilt"].get("graph_s"),
                  _ratio(s["restart"]["rebuilt"].get("graph_s"), s["restart"]["saved"].get("graph_s"))]
                 for s in restarts],
            )
        )  # fmt: skip
    c.print(f"\nresults: {path}")


def _ratio(a: float | None, b: float | None) -> float | str:
    return round(a / b, 1) if a and b else "-"


@bench.command("plot")
def plot(
    results: list[Path] = typer.Argument(
        ..., help="Results JSON files of `bench scale` (one user) and `bench speed` (with --peer mem0)"
    ),
    output: Path = typer.Option(Path("docs/images/latency-vs-size.png"), "--output", "-o", help="PNG to write"),
    percentile: str = typer.Option("p95", "--percentile", help="p50, p95 or p99"),
) -> None:
    """One plot of search latency against memories of one user: a line per run (per backend, and per
    peer of a `bench speed` run), so a line joins only stages measured in the same run. The plotted
    points are printed as a table."""
    import json

    from deepcontext_bench.report import markdown_table, save_plot

    if percentile not in ("p50", "p95", "p99"):
        fail("--percentile must be p50, p95 or p99")
    series: dict[str, tuple[list[float], list[float]]] = {}

    def put(label: str, xs: list[float], ys: list[float]) -> None:
        # runs are never joined into one line: two runs met different loads (and builds), so a
        # line through both would show the machine's load, not growth
        n, base = 2, label
        while label in series:
            label, n = f"{base} #{n}", n + 1
        pts = sorted(zip(xs, ys, strict=True))
        series[label] = ([p[0] for p in pts], [p[1] for p in pts])

    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    for path in results:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            fail(f"{path}: {exc}")
        backend = names.get(data.get("backend"), str(data.get("backend")))
        when = str((data.get("machine") or {}).get("when", ""))[:16].replace("T", " ") or path.stem
        if data.get("benchmark") == "scale" and data.get("shape") == "one user":
            st = data["stages"]
            st = [s for s in st if "search_ms" in s]  # --build-only stages measured nothing
            put(
                f"deepcontext, {backend} (bench scale, {when})",
                [s["memories_total"] for s in st],
                [s["search_ms"][percentile] for s in st],
            )
        elif data.get("benchmark") == "speed":
            st = data["stages"]
            put(
                f"deepcontext, {backend} (bench speed, {when})",
                [s["memories"] for s in st],
                [s["search_ms"][percentile] for s in st],
            )
            if data.get("peer"):
                ps = data["peer"]["stages"]
                put(
                    f"{data['peer']['name']} (bench speed, {when})",
                    [s["memories"] for s in ps],
                    [s["search_ms"][percentile] for s in ps],
                )
        else:
            fail(f"{path}: not a `bench scale` (one user) or `bench speed` result")
    out = save_plot(
        series, title=f"search {percentile}, query embedding included", xlabel="memories (one user)", ylabel="ms",
        path=output, logx=True, logy=True,
    )  # fmt: skip
    if out is None:
        fail("matplotlib is not installed (pip install -e '.[bench]')")
    console().print(
        markdown_table(
            ["line", "memories", f"search {percentile} ms"],
            [[label, x, y] for label, (xs, ys) in series.items() for x, y in zip(xs, ys, strict=True)],
        )
    )
    console().print(f"plot: {out}")
