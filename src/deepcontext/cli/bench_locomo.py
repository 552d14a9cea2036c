"""``deepcontext bench locomo``: retrieval quality on LoCoMo, with calibration of search scores."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.bench import PEER, SETTING, bench, check_peer, progress_callback, run_settings
from deepcontext.cli.common import console, database_url, fail

#: where a checkout beside the project's shared data finds LoCoMo without --data
DEFAULT_LOCOMO = "../shared/data/locomo-dev.json"


#: the data is not shipped (CC BY-NC 4.0): how to get it
GET_LOCOMO = (
    "download data/locomo10.json from the snap-research/LoCoMo repository on GitHub (CC BY-NC 4.0, "
    "not shipped with deepcontext) and pass it with --data FILE or DEEPCONTEXT_LOCOMO=FILE"
)


@bench.command()
def locomo(
    data: str = typer.Option(
        None,
        "--data",
        help=f"LoCoMo-format JSON, e.g. LoCoMo's data/locomo10.json (default: $DEEPCONTEXT_LOCOMO, else {DEFAULT_LOCOMO} if present)",
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

    from deepcontext_bench.locomo import BUDGETS, KS, run_locomo
    from deepcontext_bench.report import default_results_dir, machine, markdown_table, save_json, save_plot

    check_peer(peer)
    given = data or os.environ.get("DEEPCONTEXT_LOCOMO")
    path = Path(given or DEFAULT_LOCOMO).expanduser()
    if not given and not path.is_file():
        fail(f"no LoCoMo data: {GET_LOCOMO}")
    if not path.is_file():
        fail(f"LoCoMo file not found: {path}; {GET_LOCOMO}")
    chosen = run_settings(settings)
    c = console()
    c.print(
        "settings changed for this run: " + ", ".join(f"{k}={v}" for k, v in chosen.items())
        if chosen
        else "settings: the defaults"
    )
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console(stderr=True),
        transient=True,
    ) as progress:
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
                progress=progress_callback(progress, task),
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
    c.print(
        f"LoCoMo: {result['turns']} turns, {result['questions']} questions, embedder {result['embedder']}, {result['backend']}"
    )
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
        c.print(
            markdown_table(
                ["deepcontext / baseline", *[f"R@{k}" for k in KS]],
                [[n, *[r[k] for k in KS]] for n, r in result["ratio_ours_over"].items()],
            )
        )
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
        ctx_rows += [
            [cat, v["n"], *[v["context"][b] for b in budgets]] for cat, v in ours["by_category"].items() if "context" in v
        ]
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
    from deepcontext_bench.calibration import write_constants
    from deepcontext_bench.report import markdown_table

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
                c.print(
                    f"  questions {label}: {p['results']} results, {p['relevant']} relevant; Brier {p['brier']:.4f}, ECE {p['ece']:.4f}"
                )
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
