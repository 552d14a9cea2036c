"""``deepcontext bench updates | everyday | needs | extraction``: the labelled-case benchmarks."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.bench import SETTING, bench, run_settings, with_progress
from deepcontext.cli.common import console, database_url, fail, print_json


def _cross_validate(c: Any, sweep: Callable[[Any], Coroutine[Any, Any, Any]], names: list[str], top: int, column: str) -> None:
    """Print the sweep's grid (share of cases at rank ``top`` or better per setting) and its 5-fold score."""
    from deepcontext_bench.needs import kfold
    from deepcontext_bench.report import markdown_table

    ranks: dict[tuple[float, ...], list[int | None]] = with_progress("cross-validation", sweep)
    n = len(next(iter(ranks.values())))
    rows = [[*key, round(100 * sum(1 for r in v if r is not None and r <= top) / n, 1)] for key, v in ranks.items()]
    cv, chosen = kfold(ranks, top=top)
    c.print(markdown_table([*names, column], rows))
    c.print(f"5-fold cross-validated{'' if top == 1 else f' top {top}'}: {round(100 * cv, 1)} % (choices per fold: {chosen})")


def _labelled(
    data: Path | None, default: Path, settings: list[str], *, json_out: bool = False
) -> tuple[Path, dict[str, Any], Any]:
    """A labelled-case benchmark's cases file, settings and console (printing any setting it changes,
    on stderr when stdout is JSON)."""
    path = data or default
    if not path.exists():
        fail(f"labelled cases not found: {path} (give --data)")
    extra = run_settings(settings)
    c = console()
    if extra:
        (console(stderr=True) if json_out else c).print(f"settings changed for this run: {extra}")
    return path, extra, c


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
    from deepcontext_bench.report import markdown_table
    from deepcontext_bench.updates import DEFAULT_UPDATES, run_updates, sweep_updates

    path, extra, c = _labelled(data, DEFAULT_UPDATES, settings)
    report = with_progress(
        "cases", lambda cb: run_updates(path, filler=filler, db_url=database_url(db), settings=extra, progress=cb)
    )
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
        sweep = partial(sweep_updates, path, grid, filler=filler, settings={**extra, "track_access": False})
        _cross_validate(c, lambda cb: sweep(progress=cb), ["outdated_factor", "slot_boost"], 1, "current value first %")


@bench.command()
def everyday(
    data: Path = typer.Option(None, "--data", help="Labelled cases, JSON lines (default benchmarks/data/everyday.jsonl)"),
    part: str = typer.Option("all", "--part", help="Which part to run: dev, held-out, blind or all"),
    filler: int = typer.Option(20, "--filler", min=0, help="Everyday chat turns around each statement"),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    db: str = typer.Option(None, "--db", help="Database to use (default: a temporary SQLite file)"),
    settings: list[str] = SETTING,
) -> None:
    """Memories that stay true: labelled everyday cases of seven kinds (an update keeps what it did not
    change, another person's change, changes said as events, self-introductions, recurring times,
    careful text, slots of the right kind); the share passing per kind, on the dev, held-out and blind parts."""
    from deepcontext.errors import ValidationError
    from deepcontext_bench.everyday import DEFAULT_EVERYDAY, KINDS, PARTS, EverydayReport, run_everyday
    from deepcontext_bench.report import markdown_table

    if part not in ("all", *PARTS):
        fail(f"--part must be dev, held-out, blind or all, not {part!r}")
    path, extra, c = _labelled(data, DEFAULT_EVERYDAY, settings, json_out=json_out)
    run = partial(run_everyday, path, part=None if part == "all" else part, filler=filler, db_url=database_url(db))
    try:
        report: EverydayReport = with_progress("cases", lambda cb: run(settings=extra, progress=cb))
    except ValidationError as exc:
        fail(str(exc))
    if json_out:
        print_json(report.as_dict())
        return
    shares = report.shares()

    def cell(k: int, p: str) -> str:
        ok, n = shares.get((k, p), (0, 0))
        return f"{100 * ok / n:.0f} % ({ok}/{n})" if n else "-"

    c.print(markdown_table(["kind", "", *PARTS], [[k, name, *(cell(k, p) for p in PARTS)] for k, name in KINDS.items()]))
    passed = sum(not r.failed for r in report.results)
    c.print(f"\n{passed} of {len(report.results)} cases pass")
    for r in report.results:
        if r.failed:
            c.print(f"- {r.case.id} (kind {r.case.kind}, {r.case.part}): {'; '.join(r.failed)}; first: {r.top[:80]!r}")


@bench.command()
def needs(
    data: Path = typer.Option(None, "--data", help="Labelled cases, JSON lines (default benchmarks/data/needs.jsonl)"),
    filler: int = typer.Option(120, "--filler", min=100, help="Everyday chat turns each statement is buried in"),
    cv: bool = typer.Option(
        False,
        "--cv",
        help="Also cross-validate profile_weight, profile_hard_bonus, profile_time_bonus and profile_margin (5 folds, "
        "over the cases and, with the default set, the direct requests)",
    ),
    holdout: bool = typer.Option(
        False,
        "--holdout",
        help="Also run the held-out sets (benchmarks/data/needs-holdout*.jsonl, written apart from the rules) and "
        "print their shares",
    ),
    db: str = typer.Option(None, "--db", help="Database to use (default: a temporary SQLite file)"),
    settings: list[str] = SETTING,
) -> None:
    """Implicit needs: per labelled case the rank of the standing fact (allergy, diet, preference,
    habit, constraint, instruction) for a request that needs it; share in the top 1 / 3 / 10. With
    the default set, also requests that an earlier message answers directly (the rank of that message:
    standing facts must not push it down)."""
    from deepcontext_bench.needs import DEFAULT_NEEDS, DIRECT_REQUESTS, NeedsReport, holdout_sets, run_needs, sweep_needs
    from deepcontext_bench.report import markdown_table

    def share(name: str, report: NeedsReport) -> str:
        m = report.metrics()
        return f"{name}{len(report.results)} cases: top 1 {100 * m['top_1']:.1f} %, top 3 {100 * m['top_3']:.1f} %, top 10 {100 * m['top_10']:.1f} %"

    path, extra, c = _labelled(data, DEFAULT_NEEDS, settings)
    report = with_progress(
        "cases", lambda cb: run_needs(path, filler=filler, db_url=database_url(db), settings=extra, progress=cb)
    )
    rows = [[r.case.id, r.case.kind, r.case.question, r.rank or "-", r.top[:60]] for r in report.results]
    c.print(markdown_table(["case", "kind", "question", "rank", "first result"], rows))
    c.print("\n" + share("", report))
    # with the default set, the requests answered directly: what the profile leg must not push down
    direct: list[Path] = [DIRECT_REQUESTS] if data is None and DIRECT_REQUESTS.exists() else []
    if direct:
        run_direct = partial(run_needs, DIRECT_REQUESTS, filler=filler, db_url=database_url(db), settings=extra)
        rd: NeedsReport = with_progress(DIRECT_REQUESTS.name, lambda cb: run_direct(progress=cb))
        misses = ", ".join(x.case.id for x in rd.results if not x.rank or x.rank > 3) or "none"
        c.print(share(f"{DIRECT_REQUESTS.name} (answered directly): ", rd) + "; misses: " + misses)
    if holdout:
        for held in holdout_sets():
            run = partial(run_needs, held, filler=filler, db_url=database_url(db), settings=extra)
            r: NeedsReport = with_progress(held.name, lambda cb: run(progress=cb))
            c.print(
                share(f"{held.name}: ", r)
                + "; misses: "
                + (", ".join(x.case.id for x in r.results if not x.rank or x.rank > 3) or "none")
            )
    if cv:
        grid = [
            {"profile_weight": w, "profile_hard_bonus": b, "profile_time_bonus": t, "profile_margin": m}
            for w in (0.5, 0.75, 1.0, 1.5, 2.0) for b in (0.2, 0.4) for t in (0.0, 0.4) for m in (0.1, 0.2, 0.3, 2.0)
        ]  # fmt: skip
        sweep = partial(sweep_needs, [path, *direct], grid, filler=filler, settings={**extra, "track_access": False})
        names = ["profile_weight", "profile_hard_bonus", "profile_time_bonus", "profile_margin"]
        _cross_validate(c, lambda cb: sweep(progress=cb), names, 3, "top 3 %")


@bench.command()
def extraction(
    data: Path = typer.Option(None, "--data", help="Labelled set, JSONL (default: the set shipped with deepcontext)"),
    show: int = typer.Option(
        10, "--show", min=0, help="Misses listed per kind (extra, missed, unresolved, grammar, wrong subject)"
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    out: Path = typer.Option(None, "--out", help="Also save the JSON report into this folder"),
) -> None:
    """Offline extraction against a labelled set: per-fact precision and recall, memories with an
    unresolved pronoun or relative date, grammar defects (possessive chains and glued episodes also
    on their own), memories that say a fact of the wrong person."""
    from deepcontext.errors import ValidationError
    from deepcontext.extract.rules import RuleExtractor
    from deepcontext.extract.verbs import is_base_verb
    from deepcontext_bench.extraction import load_gold, run_extraction
    from deepcontext_bench.report import machine, markdown_table, save_json

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
    c.print(
        f"extraction: {report['conversations']} conversations, {report['turns']} turns, {report['facts']} facts, "
        f"{report['memories']} memories in {report['seconds']:.2f} s"
    )
    c.print(
        markdown_table(
            [
                "precision",
                "recall",
                "unresolved pronouns",
                "unresolved dates",
                "grammar defects",
                "possessive chains",
                "glued",
                "wrong subject",
            ],
            [
                [
                    report["precision"],
                    report["recall"],
                    report["unresolved_pronouns"],
                    report["unresolved_dates"],
                    report["grammar_defects"],
                    report["possessive_chains"],
                    report["glued"],
                    report["wrong_subject"],
                ]
            ],
        )
    )
    c.print()
    c.print(
        markdown_table(
            ["topic", "facts", "memories", "precision", "recall"],
            [[t, v["facts"], v["memories"], v["precision"], v["recall"]] for t, v in report["by_topic"].items()],
        )
    )
    for kind, items in report["misses"].items():
        if items and show:
            c.print(f"\n{kind} ({len(items)}):")
            for line in items[:show]:
                c.print(f"  {line}", markup=False, highlight=False)


@bench.command()
def dates(
    data: Path = typer.Option(None, "--data", help="Labelled sentences, JSON lines (default: the bundled dates set)"),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    failures: bool = typer.Option(False, "--failures", help="Also list each sentence a parser got wrong"),
) -> None:
    """Time expressions: the extractor's own parser beside dateparser (when installed: the bench extra)
    on labelled sentences said at known moments; the share each resolves inside the period meant,
    per part (rules: the parser's unit-test sentences; new: written for this comparison), and its speed."""
    from deepcontext_bench.dates import DEFAULT_DATES, run_dates
    from deepcontext_bench.report import markdown_table

    path, _, c = _labelled(data, DEFAULT_DATES, [], json_out=json_out)
    try:
        report = run_dates(path)
    except (ValueError, KeyError) as exc:
        fail(f"cannot read {path}: {exc}")
    if json_out:
        print_json(report)
        return
    summary: dict[str, dict[str, dict[str, float]]] = report["summary"]  # type: ignore[assignment]
    rows = [
        [
            name,
            part,
            f"{100 * s['share']:.1f} % ({s['right']:.0f}/{s['cases']:.0f})",
            f"{s['wrong_date']:.0f}",
            s["us_per_sentence"],
        ]
        for name, parts in summary.items()
        for part, s in parts.items()
    ]
    c.print(markdown_table(["parser", "part", "right", "a wrong date", "µs per sentence"], rows))
    if "dateparser" not in summary:
        c.print("dateparser is not installed (pip install -e '.[bench]'): only the extractor's parser was measured", markup=False)
    if failures:
        for r in report["cases"]:  # type: ignore[attr-defined]
            if not r["ok"]:
                c.print(f"- {r['parser']} ({r['part']}): {r['text']!r} means the {r['expect']}, got {r['got']}", markup=False)
