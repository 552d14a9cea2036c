"""`deepcontext bench locomo | updates | needs | speed | reliability | extraction`: the benchmarks, with
progress bars, a markdown table on the terminal, a JSON file and PNG plots under benchmarks/results/
(locomo, speed)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, database_url, fail, print_json, state

T = TypeVar("T")

bench = typer.Typer(
    help="Benchmarks: retrieval quality on LoCoMo, knowledge updates, implicit needs, speed at scale, reliability, "
    "extraction quality.",
    no_args_is_help=True,
)
app.add_typer(bench, name="bench")

#: where a checkout beside the project's shared data finds LoCoMo without --data
DEFAULT_LOCOMO = "../shared/data/locomo-dev.json"
#: the data is not shipped (CC BY-NC 4.0): how to get it
GET_LOCOMO = (
    "download data/locomo10.json from the snap-research/LoCoMo repository on GitHub (CC BY-NC 4.0, "
    "not shipped with deepcontext) and pass it with --data FILE or DEEPCONTEXT_LOCOMO=FILE"
)


def _progress_cb(progress: Any, task: Any) -> Any:
    def cb(kind: str, n: int) -> None:
        if kind == "total":
            progress.update(task, total=n)
        elif kind == "advance":
            progress.advance(task, n)
        else:
            progress.update(task, completed=n)

    return cb


PEER = typer.Option(
    None,
    "--peer",
    help="Also run another memory layer on the same data in the same process: mem0 (its open-source Memory, infer=False, "
    "our embedder, its local vector store; needs `pip install mem0ai`, pinned in the bench extra; network access is refused)",
)


def _check_peer(peer: str | None) -> None:
    if peer is None:
        return
    if peer != "mem0":
        fail(f"--peer: unknown peer {peer!r} (known: mem0)")
    from deepcontext.bench.mem0_peer import NOT_INSTALLED, mem0_version

    if mem0_version() is None:
        fail(NOT_INSTALLED)


SETTING = typer.Option(None, "--set", help="A setting for the run, KEY=VALUE (repeatable), e.g. --set auto_consolidate=false")


def _settings(pairs: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"embedder": state.embedder} if state.embedder else {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--set takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


@bench.command()
def locomo(
    data: str = typer.Option(
        None, "--data", help=f"LoCoMo-format JSON, e.g. LoCoMo's data/locomo10.json (default: $DEEPCONTEXT_LOCOMO, else {DEFAULT_LOCOMO} if present)"
    ),
    conversations: int = typer.Option(None, "--conversations", min=1, help="Only the first N conversations"),
    questions: int = typer.Option(None, "--questions", min=1, help="Only the first N questions of each"),
    db: str = typer.Option(None, "--db", help="Database to use (default: a temporary SQLite file)"),
    no_baselines: bool = typer.Option(False, "--no-baselines", help="Skip the baselines"),
    no_user_view: bool = typer.Option(False, "--no-user-view", help="Skip the user-view figure (search with limit=k)"),
    no_context: bool = typer.Option(False, "--no-context", help="Skip context recall (context() at 1000/2000/4000 tokens)"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
    settings: list[str] = SETTING,
    calibration: bool = typer.Option(
        False,
        "--calibration",
        help="Also print how well search scores are calibrated: reliability bins (predicted vs observed share "
        "relevant), Brier score and ECE, for the returned scores and a leave-one-conversation-out refit",
    ),
    refit: bool = typer.Option(
        False, "--refit", help="With --calibration: write the constants fitted on all conversations where search reads them"
    ),
    peer: str = PEER,
) -> None:
    """Retrieval recall@5/10/25/50 on LoCoMo with the default settings (memory and user-view figures,
    context recall), overall and per category, beside BM25, cosine and a naive hybrid."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from deepcontext.bench.locomo import BUDGETS, KS, run_locomo
    from deepcontext.bench.report import default_results_dir, machine, markdown_table, save_json, save_plot

    _check_peer(peer)
    given = data or os.environ.get("DEEPCONTEXT_LOCOMO")
    path = Path(given or DEFAULT_LOCOMO).expanduser()
    if not given and not path.is_file():
        fail(f"no LoCoMo data: {GET_LOCOMO}")
    if not path.is_file():
        fail(f"LoCoMo file not found: {path}; {GET_LOCOMO}")
    chosen = _settings(settings)
    c = console()
    c.print(
        "settings changed for this run: " + ", ".join(f"{k}={v}" for k, v in chosen.items())
        if chosen
        else "settings: the defaults"
    )
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console(stderr=True), transient=True) as progress:
        task = progress.add_task("locomo", total=None)
        result = asyncio.run(
            run_locomo(
                path,
                conversations=conversations,
                questions=questions,
                db_url=database_url(db),
                settings=chosen,
                baselines=not no_baselines,
                user_ks=() if no_user_view else KS,
                budgets=() if no_context else BUDGETS,
                progress=_progress_cb(progress, task),
                calibration=calibration or refit,
                peer=peer,
            )
        )
    result["machine"] = machine()
    out_dir = out or default_results_dir()
    json_path = save_json(result, out_dir, "locomo")
    systems = result["systems"]

    def figs(s: dict[str, Any], key: str) -> list[Any]:
        return [s[key][k] if s.get(key) else None for k in KS]

    rows = [
        [name, s["questions"], *figs(s, "recall"), *figs(s, "user_recall"), s["turns_cited_at_10"], s["ingest_seconds"],
         s["ingest_turns_per_s"], s["search_ms_p50"], s["search_ms_p95"], s["search_ms_p99"]]
        for name, s in systems.items()
    ]  # fmt: skip
    c.print(f"LoCoMo: {result['turns']} turns, {result['questions']} questions, embedder {result['embedder']}, {result['backend']}")
    c.print(
        markdown_table(
            ["system", "questions", *[f"R@{k}" for k in KS], *[f"user R@{k}" for k in KS], "turns in top 10", "ingest s",
             "turns/s", "search p50 ms", "p95 ms", "p99 ms"],
            rows,
        )
    )  # fmt: skip
    if result["ours_over_peer"]:
        c.print()
        r = result["ours_over_peer"]
        c.print(markdown_table([f"deepcontext / {result['peer']}", *r], [["ratio", *r.values()]]))
    if result["ratio_ours_over"]:
        c.print()
        c.print(markdown_table(["deepcontext / baseline", *[f"R@{k}" for k in KS]], [[n, *[r[k] for k in KS]] for n, r in result["ratio_ours_over"].items()]))
    cat_rows = []
    for name, s in systems.items():
        if name not in ("deepcontext", "naive hybrid (RRF)"):
            continue
        for cat, v in s["by_category"].items():
            user = [v["user"][k] for k in KS] if "user" in v else [None] * len(KS)
            cat_rows.append([name, cat, v["n"], *[v["memory"][k] for k in KS], *user])
    c.print()
    c.print(markdown_table(["system", "category", "n", *[f"R@{k}" for k in KS], *[f"user R@{k}" for k in KS]], cat_rows))
    ours = systems["deepcontext"]
    if ours.get("context_recall"):
        budgets = list(ours["context_recall"])
        c.print()
        sizes = result["conversation_tokens"]
        c.print(
            f"context recall (share of the evidence that context(question, budget_tokens=B) includes); conversations "
            f"are {min(sizes.values())}-{max(sizes.values())} tokens (mean {sum(sizes.values()) // len(sizes)})"
        )
        ctx_rows = [["all", ours["questions"], *[ours["context_recall"][b] for b in budgets]]]
        ctx_rows += [[cat, v["n"], *[v["context"][b] for b in budgets]] for cat, v in ours["by_category"].items() if "context" in v]
        c.print(markdown_table(["category", "n", *[f"B={b}" for b in budgets]], ctx_rows))
    plot = save_plot(
        {n: (list(KS), [s["recall"][k] for k in KS]) for n, s in systems.items()},
        title="LoCoMo recall@k",
        xlabel="k",
        ylabel="recall (%)",
        path=out_dir / "locomo-recall.png",
    )
    if "calibration" in result:
        _print_calibration(result, refit)
    c.print(f"\nresults: {json_path}" + (f", plot: {plot}" if plot else ""))


def _print_calibration(result: dict[str, Any], refit: bool) -> None:
    from deepcontext.bench.calibration import write_constants
    from deepcontext.bench.report import markdown_table

    c = console()
    cal = result["calibration"]
    for key, title in (
        ("returned", "scores as search returned them"),
        ("cross_validated", "leave-one-conversation-out refit"),
        ("fitted", "refit on all conversations"),
    ):
        rel = cal.get(key)
        if not rel:
            continue
        c.print(
            f"\ncalibration, {title}: {rel['results']} results, {rel['relevant']} relevant; "
            f"Brier {rel['brier']:.4f}, ECE {rel['ece']:.4f}, log loss {rel['log_loss']:.4f}"
        )
        c.print(
            markdown_table(
                ["score", "results", "mean score", "share relevant"],
                [[b["bin"], b["count"], b["predicted"], b["observed"]] for b in rel["bins"]],
            )
        )
        for part, label in (("answerable", "asked of their own conversation"), ("off_topic", "asked of another one")):
            if part in rel:
                p = rel[part]
                c.print(f"  questions {label}: {p['results']} results, {p['relevant']} relevant; Brier {p['brier']:.4f}, ECE {p['ece']:.4f}")
        if "first_results_kept" in rel:
            c.print(
                markdown_table(
                    ["min_score", "first results kept: answerable", "off-topic"],
                    [[k["min_score"], k["answerable"], k["off_topic"]] for k in rel["first_results_kept"]],
                )
            )
    if refit and "constants" in cal:
        about = {
            "about": "Calibrated search scores (deepcontext.retrieve.calibration), fitted by "
            "`deepcontext bench locomo --calibration --refit`",
            "embedder": result["embedder"],
            "fitted_on": {"questions": result["questions"], "results": cal["fitted"]["results"]},
        }
        c.print(f"\nconstants written to {write_constants(cal['constants'], about)}")


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
    _check_peer(peer)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from deepcontext.bench.report import default_results_dir, machine, markdown_table, save_json, save_plot
    from deepcontext.bench.speed import run_speed

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
        with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console(stderr=True), transient=True) as progress:
            task = progress.add_task("memories", total=None)
            result = asyncio.run(
                run_speed(
                    sizes=size_list, db_url=url, settings=_settings(settings), queries=queries,
                    progress=_progress_cb(progress, task), reuse=reuse, peer=peer if url == urls[0] else None,
                )  # fmt: skip
            )
        result["machine"] = machine()
        result["settings"] = _settings(settings)
        result["json"] = str(save_json(result, out_dir, f"speed-{result['backend']}"))
        results.append(result)
    # a label per run: the backend, numbered when one backend was measured more than once
    backends = [r["backend"] for r in results]
    labels = [b if backends.count(b) == 1 else f"{b} #{backends[:i + 1].count(b)}" for i, b in enumerate(backends)]
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
                [[r["turns"], r["ingest_turns_per_s"], r["search_ms_p50"], r["search_ms_p95"], r["search_ms_p99"]] for r in results[0]["ours_over_peer"]],
            )
        )
    series: dict[str, tuple[list[float], list[float]]] = {}
    if theirs:
        series[f"{theirs['name']} p95"] = ([s["memories"] for s in theirs["stages"]], [s["search_ms"]["p95"] for s in theirs["stages"]])
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


def _cv_table(ranks: dict[tuple[float, ...], list[int | None]], names: list[str], top: int) -> tuple[list[list[Any]], float, list[Any]]:
    from deepcontext.bench.needs import kfold

    n = len(next(iter(ranks.values())))
    rows = [[*key, round(100 * sum(1 for r in v if r is not None and r <= top) / n, 1)] for key, v in ranks.items()]
    cv, chosen = kfold(ranks, top=top)
    return rows, round(100 * cv, 1), chosen


def _labelled(data: Path | None, default: Path, settings: list[str]) -> tuple[Path, dict[str, Any], Any]:
    """A labelled-case benchmark's cases file, settings and console (printing any setting it changes)."""
    path = data or default
    if not path.exists():
        fail(f"labelled cases not found: {path} (give --data)")
    extra = _settings(settings)
    c = console()
    if extra:
        c.print(f"settings changed for this run: {extra}")
    return path, extra, c


def _with_progress(label: str, run: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
    """``run(progress callback)`` under a transient progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as progress:
        return asyncio.run(run(_progress_cb(progress, progress.add_task(label, total=None))))


@bench.command()
def updates(
    data: Path = typer.Option(None, "--data", help="Labelled cases, JSON lines (default benchmarks/data/updates.jsonl)"),
    filler: int = typer.Option(60, "--filler", min=0, help="Everyday chat turns around each statement"),
    cv: bool = typer.Option(
        False, "--cv", help="Also cross-validate outdated_factor and slot_boost (5 folds) on the ranking check"
    ),
    db: str = typer.Option(None, "--db", help="Database to use (default: a temporary SQLite file)"),
    settings: list[str] = SETTING,
) -> None:
    """Knowledge updates: per labelled case whether the older memory was superseded, precision and
    recall of supersession, and whether the current value ranks above the old one."""
    from deepcontext.bench.report import markdown_table
    from deepcontext.bench.updates import DEFAULT_UPDATES, run_updates, sweep_updates

    path, extra, c = _labelled(data, DEFAULT_UPDATES, settings)
    report = _with_progress("cases", lambda cb: run_updates(path, filler=filler, db_url=database_url(db), settings=extra, progress=cb))
    rows = [
        [r.case.id, r.case.kind, r.case.attribute, "yes" if r.superseded else "no", "ok" if r.correct else "WRONG",
         r.current_rank if r.case.kind == "update" else "", r.old_rank if r.case.kind == "update" else ""]
        for r in report.results
    ]  # fmt: skip
    c.print(markdown_table(["case", "kind", "attribute", "superseded", "", "current rank", "old rank"], rows))
    m = report.metrics()
    c.print(
        f"\n{len(report.results)} cases: supersession precision {m['precision']:.3f}, recall {m['recall']:.3f}; "
        f"updates: current value above the old one {100 * m['current_above_old']:.1f} %, current first "
        f"{100 * m['current_at_1']:.1f} %, in the top 3 {100 * m['current_in_top_3']:.1f} %"
    )
    if cv:
        grid = [{"outdated_factor": f, "slot_boost": b} for f in (0.25, 0.5, 0.75, 1.0) for b in (0.0, 0.25, 0.5, 1.0)]
        ranks = _with_progress(
            "cross-validation", lambda cb: sweep_updates(path, grid, filler=filler, settings={**extra, "track_access": False}, progress=cb)
        )
        rows2, score, chosen = _cv_table(ranks, ["outdated_factor", "slot_boost"], 1)
        c.print(markdown_table(["outdated_factor", "slot_boost", "current value first %"], rows2))
        c.print(f"5-fold cross-validated: {score} % (choices per fold: {chosen})")


@bench.command()
def needs(
    data: Path = typer.Option(None, "--data", help="Labelled cases, JSON lines (default benchmarks/data/needs.jsonl)"),
    filler: int = typer.Option(120, "--filler", min=100, help="Everyday chat turns each statement is buried in"),
    cv: bool = typer.Option(False, "--cv", help="Also cross-validate profile_weight and profile_hard_bonus (5 folds)"),
    db: str = typer.Option(None, "--db", help="Database to use (default: a temporary SQLite file)"),
    settings: list[str] = SETTING,
) -> None:
    """Implicit needs: per labelled case the rank of the standing fact (allergy, diet, preference,
    habit, constraint, instruction) for a request that needs it; share in the top 1 / 3 / 10."""
    from deepcontext.bench.needs import DEFAULT_NEEDS, run_needs, sweep_needs
    from deepcontext.bench.report import markdown_table

    path, extra, c = _labelled(data, DEFAULT_NEEDS, settings)
    report = _with_progress("cases", lambda cb: run_needs(path, filler=filler, db_url=database_url(db), settings=extra, progress=cb))
    rows = [[r.case.id, r.case.kind, r.case.question, r.rank or "-", r.top[:60]] for r in report.results]
    c.print(markdown_table(["case", "kind", "question", "rank", "first result"], rows))
    m = report.metrics()
    c.print(f"\n{len(report.results)} cases: top 1 {100 * m['top_1']:.1f} %, top 3 {100 * m['top_3']:.1f} %, top 10 {100 * m['top_10']:.1f} %")
    if cv:
        grid = [{"profile_weight": w, "profile_hard_bonus": b} for w in (0.0, 0.3, 0.6, 0.9, 1.2) for b in (0.0, 0.1, 0.2, 0.4)]
        ranks = _with_progress(
            "cross-validation", lambda cb: sweep_needs(path, grid, filler=filler, settings={**extra, "track_access": False}, progress=cb)
        )
        rows2, score, chosen = _cv_table(ranks, ["profile_weight", "profile_hard_bonus"], 3)
        c.print(markdown_table(["profile_weight", "profile_hard_bonus", "top 3 %"], rows2))
        c.print(f"5-fold cross-validated top 3: {score} % (choices per fold: {chosen})")
@bench.command()
def reliability(
    db: list[str] = typer.Option(
        None,
        "--db",
        help="Database (default: temporary SQLite files); postgresql://... for PostgreSQL (give an empty one). "
        "Repeat it to run every scenario on each",
    ),
    scenario: list[str] = typer.Option(
        None, "--scenario", help="Run only these (repeatable): kill-add, kill-import, kill-consolidate, processes, race-delete, rest"
    ),
    kills: int = typer.Option(6, "--kills", min=1, help="SIGKILLs of the writer per kill scenario"),
    kill_delay: float = typer.Option(3.0, "--kill-delay", min=0.0, help="Most seconds between a writer's first acknowledged call and its SIGKILL"),
    writers: int = typer.Option(4, "--writers", min=1, help="Writer processes of the processes scenario"),
    per_writer: int = typer.Option(30, "--per-writer", min=1, help="Adds per writer process (and, times the writers, adds racing deletes)"),
    requests: int = typer.Option(600, "--requests", min=1, help="REST requests (valid and hostile mixed), on loopback"),
    concurrency: int = typer.Option(16, "--concurrency", min=1, help="REST requests in flight at once"),
    time_limit: float = typer.Option(120.0, "--time-limit", min=1.0, help="Seconds after which the REST run sends no more requests"),
    seed: int = typer.Option(0, "--seed", help="Random seed (kill times, request mix)"),
    out: Path = typer.Option(None, "--out", help="Results folder (default benchmarks/results)"),
) -> None:
    """Kill -9 during adds, imports and consolidation, processes sharing a database, adds racing
    deletes, valid and hostile REST requests: tried / failed / lost / leaked / 5xx / p99 per scenario."""
    from deepcontext.bench.reliability import SCENARIOS, run_reliability
    from deepcontext.bench.report import default_results_dir, machine, markdown_table, save_json

    chosen = tuple(scenario) if scenario else SCENARIOS
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        fail(f"unknown scenario {unknown[0]!r}; known: {', '.join(SCENARIOS)}")
    urls: list[str | None] = [database_url(u) for u in db] if db else [None]
    err = console(stderr=True)
    outcomes = asyncio.run(
        run_reliability(
            urls, scenarios=chosen, kills=kills, kill_delay=kill_delay, writers=writers, per_writer=per_writer, requests=requests,
            concurrency=concurrency, time_limit=time_limit, seed=seed, progress=lambda m: err.print(f"[dim]{m}[/]"),
        )
    )  # fmt: skip
    rows = [
        [o.scenario, o.backend, o.tried, o.failed, o.lost, o.leaked, o.server_errors, o.timeouts,
         round(o.p99_ms, 1) if o.p99_ms is not None else "-"]
        for o in outcomes
    ]  # fmt: skip
    c = console()
    c.print(markdown_table(["scenario", "backend", "tried", "failed", "lost", "leaked", "5xx", "timeouts", "p99 ms"], rows), soft_wrap=True)
    for o in outcomes:
        for note in o.notes[:5]:
            c.print(f"  {o.scenario} ({o.backend}): {note}", markup=False, highlight=False, soft_wrap=True)
    settings = {"kills": kills, "kill_delay": kill_delay, "writers": writers, "per_writer": per_writer, "requests": requests,
                "concurrency": concurrency, "time_limit": time_limit, "seed": seed}  # fmt: skip
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




@bench.command()
def extraction(
    data: Path = typer.Option(None, "--data", help="Labelled set, JSONL (default: the set shipped with deepcontext)"),
    show: int = typer.Option(10, "--show", min=0, help="Misses listed per kind (extra, missed, unresolved, grammar)"),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    out: Path = typer.Option(None, "--out", help="Also save the JSON report into this folder"),
) -> None:
    """Offline extraction against a labelled set: per-fact precision and recall, memories with an
    unresolved pronoun or relative date, grammar defects."""
    from deepcontext.bench.extraction import load_gold, run_extraction
    from deepcontext.bench.report import machine, markdown_table, save_json
    from deepcontext.errors import ValidationError
    from deepcontext.extract.verbs import is_base_verb
    from deepcontext.extract.rules import RuleExtractor

    if data is not None and not data.exists():
        fail(f"labelled set not found: {data}")
    try:
        gold = load_gold(data)
    except ValidationError as exc:
        fail(str(exc))
    extractor = RuleExtractor()
    extractor.prepare()
    is_base_verb("work")  # load the inflection lexicon before the clock starts
    report = run_extraction(extractor, gold).as_dict()
    if out is not None:
        report["machine"] = machine()
        save_json(report, out, "extraction")
    if json_out:
        print_json(report)
        return
    c = console()
    c.print(f"extraction: {report['conversations']} conversations, {report['turns']} turns, {report['facts']} facts, "
            f"{report['memories']} memories in {report['seconds']:.2f} s")
    c.print(markdown_table(
        ["precision", "recall", "unresolved pronouns", "unresolved dates", "grammar defects"],
        [[report["precision"], report["recall"], report["unresolved_pronouns"], report["unresolved_dates"], report["grammar_defects"]]],
    ))
    c.print()
    c.print(markdown_table(["topic", "facts", "memories", "precision", "recall"],
                           [[t, v["facts"], v["memories"], v["precision"], v["recall"]] for t, v in report["by_topic"].items()]))
    for kind, items in report["misses"].items():
        if items and show:
            c.print(f"\n{kind} ({len(items)}):")
            for line in items[:show]:
                c.print(f"  {line}", markup=False, highlight=False)
