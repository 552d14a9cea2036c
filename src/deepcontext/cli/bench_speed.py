"""``deepcontext bench speed``: ingest throughput and search latency at growing sizes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.bench import PEER, SETTING, bench, check_peer, progress_callback, run_settings
from deepcontext.cli.common import console, database_url, fail


@bench.command()
def speed(
    sizes: str = typer.Option("1000,10000,100000", "--sizes", help="Comma-separated memory counts"),
    million: bool = typer.Option(False, "--million", help="Add a 1,000,000-memory stage"),
    db: list[str] = typer.Option(
        None,
        "--db",
        help="Database (default: a temporary SQLite file); postgresql://... for PostgreSQL. Repeat it to measure "
        "several databases one after another, reported side by side",
    ),
    queries: int = typer.Option(200, "--queries", min=10, help="Measured searches per stage"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
    reuse: bool = typer.Option(
        False, "--reuse", help="Keep what --db already holds from an earlier run; stages it reaches measure search only"
    ),
    settings: list[str] = SETTING,
    peer: str = PEER,
) -> None:
    """Ingest throughput and search latency p50/p95/p99 at growing sizes, beside brute force; with
    several --db, one after another and side by side in one table and one plot."""
    check_peer(peer)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json, save_plot
    from deepcontext_bench.search_stages import STAGES
    from deepcontext_bench.speed import run_speed

    try:
        size_list = tuple(int(s) for s in sizes.split(",") if s.strip())
    except ValueError:
        fail("--sizes must be comma-separated integers")
    if not size_list or any(n <= 0 for n in size_list):
        fail("--sizes must be positive integers")
    if million:
        size_list = (*size_list, 1_000_000)
    urls = [database_url(u) for u in db] if db else [None]
    out_dir = out or default_results_dir()
    c = console()
    results: list[dict[str, Any]] = []
    for url in urls:
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task("memories", total=None)
            result = asyncio.run(
                run_speed(
                    sizes=size_list,
                    db_url=url,
                    settings=run_settings(settings),
                    queries=queries,
                    progress=progress_callback(progress, task),
                    reuse=reuse,
                    peer=peer if url == urls[0] else None,
                )  # fmt: skip
            )
        result["machine"] = machine()
        result["settings"] = run_settings(settings)
        result["json"] = str(save_json(result, out_dir, f"speed-{result['backend']}"))
        results.append(result)
    # a label per run: the backend, numbered when one backend was measured more than once
    backends = [r["backend"] for r in results]
    labels = [b if backends.count(b) == 1 else f"{b} #{backends[: i + 1].count(b)}" for i, b in enumerate(backends)]
    rows = [
        [
            label, s["memories"], s["ingest_turns_per_s"], s["search_ms"]["p50"], s["search_ms"]["p95"], s["search_ms"]["p99"],
            s["vector_only_ms"]["p95"], s["brute_force_ms"]["p50"], s["brute_force_ms"]["p95"],
            s["brute_force_ms"]["p95"] / s["search_ms"]["p95"], s["query_embedding_ms_p50"], s["peak_rss_mb"], s["db_size_mb"],
        ]
        for label, result in zip(labels, results, strict=True)
        for s in result["stages"]
    ]  # fmt: skip
    c.print(f"speed: {', '.join(labels)}; embedder {results[0]['embedder']}, {results[0]['cpus']} cpus")
    c.print(
        markdown_table(
            ["backend", "memories", "ingest turns/s", "search p50 ms", "p95", "p99", "vector-only p95", "brute p50",
             "brute p95", "brute/ours p95", "embed ms", "peak RSS MB", "db MB"],
            rows,
        )
    )  # fmt: skip
    c.print()
    c.print("search with calls recorded in the activity log (as the server records them) against the same searches unrecorded:")
    c.print(
        markdown_table(
            ["backend", "memories", "unrecorded p50 / p95 / p99 ms", "recorded p50 / p95 / p99 ms", "added p50 / p95 ms"],
            [[label, s["memories"], f"{a['off_p50']:.1f} / {a['off_p95']:.1f} / {a['off_p99']:.1f}",
              f"{a['on_p50']:.1f} / {a['on_p95']:.1f} / {a['on_p99']:.1f}", f"{a['added_p50']:+.2f} / {a['added_p95']:+.2f}"]
             for label, result in zip(labels, results, strict=True) for s in result["stages"]
             for a in [s["activity_log_ms"]]],
        )
    )  # fmt: skip
    c.print()
    c.print(
        "ingest: the embedding model's share of the time, and the texts it embedded per turn (asked for: cached or repeated ones too):"
    )
    peer_stages = results[0]["peer"]["stages"] if results[0]["peer"] else []
    c.print(
        markdown_table(
            ["system", "memories", "turns/s", "model's share", "texts embedded / turn", "asked / turn", "ms / text"],
            [[name, s["memories"], s["ingest_turns_per_s"], e["share"], e["texts_per_turn"], e["texts_asked_per_turn"], e["ms_per_text"]]
             for name, stages in [*((label, result["stages"]) for label, result in zip(labels, results, strict=True)),
                                  *([(results[0]["peer"]["name"], peer_stages)] if peer_stages else [])]
             for s in stages if s["ingest_turns_per_s"] for e in [s["ingest_embedding"]]],
        )
    )  # fmt: skip
    c.print()
    c.print("where a search's time goes (its stages timed one by one on the same queries; the legs are part of the next row):")
    c.print(
        markdown_table(
            ["stage, p50 / p95 ms", *(f"{label}, {s['memories']:,}" for label, result in zip(labels, results, strict=True)
                                      for s in result["stages"])],
            [[name, *(f"{t['p50']:.2f} / {t['p95']:.2f}" for result in results for s in result["stages"]
                      for t in [s["search_stages_ms"]["stages"][name]])] for name in STAGES],
        )
    )  # fmt: skip
    same = min(s["search_stages_ms"]["same_results"] for result in results for s in result["stages"])
    c.print(f"the stages ranked what the search returned for {same:.0%} of the queries")
    theirs = results[0]["peer"]
    if theirs:
        c.print()
        c.print(
            markdown_table(
                ["system", "turns", "ingest turns/s", "search p50 ms", "p95", "p99", "peak RSS MB"],
                [[theirs["name"], s["turns_total"], s["ingest_turns_per_s"], s["search_ms"]["p50"], s["search_ms"]["p95"], s["search_ms"]["p99"], s["peak_rss_mb"]]
                 for s in theirs["stages"]],
            )
        )  # fmt: skip
        c.print()
        c.print(
            markdown_table(
                [f"deepcontext / {theirs['name']}", "ingest turns/s", "search p50", "p95", "p99"],
                [
                    [r["turns"], r["ingest_turns_per_s"], r["search_ms_p50"], r["search_ms_p95"], r["search_ms_p99"]]
                    for r in results[0]["ours_over_peer"]
                ],
            )
        )
    series: dict[str, tuple[list[float], list[float]]] = {}
    if theirs:
        series[f"{theirs['name']} p95"] = (
            [s["memories"] for s in theirs["stages"]],
            [s["search_ms"]["p95"] for s in theirs["stages"]],
        )
    for label, result in zip(labels, results, strict=True):
        xs = [s["memories"] for s in result["stages"]]
        prefix = f"{label} " if len(results) > 1 else ""
        series[f"{prefix}hybrid p95"] = (xs, [s["search_ms"]["p95"] for s in result["stages"]])
        series[f"{prefix}hybrid p50"] = (xs, [s["search_ms"]["p50"] for s in result["stages"]])
        series[f"{prefix}brute force p95"] = (xs, [s["brute_force_ms"]["p95"] for s in result["stages"]])
    name = f"speed-{results[0]['backend']}" if len(results) == 1 else "speed-compare"
    json_path = Path(results[0]["json"])
    if len(results) > 1:
        json_path = save_json({"runs": dict(zip(labels, results, strict=True))}, out_dir, name)
    plot = save_plot(
        series,
        title=f"search latency vs memories ({', '.join(labels)})",
        xlabel="memories (one user)",
        ylabel="ms (query embedding included)",
        path=out_dir / f"{name}-latency.png",
        logx=True,
    )
    c.print(f"\nresults: {json_path}" + (f", plot: {plot}" if plot else ""))
