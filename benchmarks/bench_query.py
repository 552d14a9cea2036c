"""Benchmark deepcontext.query against deepcq 0.3.0: section selection quality and speed.

Quality: the labelled cases in ``benchmarks/data/deepcq_cases.jsonl`` (memory sections, a query, the
sections a correct filter includes). For each system the sections are stored in the state tier
under their ``[name]`` headers, the query is run with default settings (threshold 0.3, fallback
on), and micro-averaged precision / recall / F1 of the included sections are reported together
with the mean prompt reduction. Systems: ``lexical`` (deepcontext.query, default), ``blended``
(lexical + all-MiniLM-L6-v2 similarity, ``SemanticScoring`` defaults), ``deepcq 0.3.0``.

Speed: ``locate()`` and ``query()`` of both libraries on the same synthetic text of 1, 4 and 16 MB
(paragraphs split on blank lines; for ``query()`` the text is spread over 64 state sections;
``cold`` is the first query on a fresh object, ``warm`` the next one). Each measurement runs in a
forked child after a tiny warm-up call; deepcontext.query reports the best of 3 runs, deepcq one
run (its runs take seconds to minutes) under a timeout; ``--skip-slow`` skips deepcq above 4 MB.

Writes ``bench_query.json``, ``bench_query.md`` and ``bench_query.png`` (time vs size) to
``--out`` (default ``benchmarks/results``) and prints the tables. deepcq and matplotlib are
imported only when used: without them their parts are skipped with a note.

    python benchmarks/bench_query.py                 # everything
    python benchmarks/bench_query.py --skip-slow     # no deepcq above 4 MB
    python benchmarks/bench_query.py --no-speed      # quality only
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import multiprocessing as mp
import platform
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_CASES = HERE / "data" / "deepcq_cases.jsonl"
DEFAULT_OUT = HERE / "results"
LOCATE_QUERY = "how does rate limiting work?"
STATE_QUERY = "why is the database refusing new connections?"
N_SECTIONS = 64


# --------------------------------------------------------------------------------------------
# quality
# --------------------------------------------------------------------------------------------
def load_cases(path: Path) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for c in cases:
        missing = set(c["relevant"]) - set(c["sections"])
        if missing:
            raise SystemExit(f"case {c['id']}: relevant sections {sorted(missing)} not in its sections")
    return cases


def _run_case(mod: Any, case: dict[str, Any], **schema_kwargs: Any) -> tuple[set[str], float]:
    schema = mod.MemorySchema(sections=list(case["sections"]), **schema_kwargs)
    cq = mod.DeepCQ(schema=schema)
    for name, text in case["sections"].items():
        cq.state.set(name, f"[{name}]\n{text}\n")
    result = cq.query(case["query"])
    return set(result.sections_included), float(result.metrics.reduction_pct)


def score_system(run: Callable[[dict[str, Any]], tuple[set[str], float]], cases: list[dict[str, Any]]) -> dict[str, Any]:
    tp = fp = fn = 0
    reductions: list[float] = []
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    misses: list[str] = []
    t0 = time.perf_counter()
    for case in cases:
        included, reduction = run(case)
        relevant = set(case["relevant"])
        a, b, d = len(included & relevant), len(included - relevant), len(relevant - included)
        tp, fp, fn = tp + a, fp + b, fn + d
        k = kinds[case["kind"]]
        k[0], k[1], k[2] = k[0] + a, k[1] + b, k[2] + d
        reductions.append(reduction)
        if d:
            misses.append(case["id"])
    elapsed = time.perf_counter() - t0

    def prf(a: int, b: int, d: int) -> dict[str, float]:
        p = a / (a + b) if a + b else 0.0
        r = a / (a + d) if a + d else 0.0
        return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0}

    return {
        **prf(tp, fp, fn),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "reduction_pct": round(sum(reductions) / len(reductions), 1),
        "by_kind": {k: prf(*v) for k, v in sorted(kinds.items())},
        "cases_with_misses": misses,
        "seconds": round(elapsed, 3),
    }


def calibrated(mod: Any, cases: list[dict[str, Any]], **schema_kwargs: Any) -> dict[str, Any]:
    """The library's own ``calibrate()`` over the cases: the best-F1 threshold (no fallback)."""

    def builder(case: dict[str, Any]) -> Callable[[], Any]:
        def build() -> Any:
            cq = mod.DeepCQ(schema=mod.MemorySchema(sections=list(case["sections"]), **schema_kwargs))
            for name, text in case["sections"].items():
                cq.state.set(name, f"[{name}]\n{text}\n")
            return cq

        return build

    examples = [mod.LabeledExample(builder(c), c["query"], set(c["relevant"])) for c in cases]
    best = mod.calibrate(examples).best
    return {"threshold": best.threshold, "precision": best.precision, "recall": best.recall, "f1": best.f1}


def quality(cases: list[dict[str, Any]], notes: list[str], semantic: bool) -> dict[str, Any]:
    import deepcontext.query as dq

    systems: dict[str, Any] = {}
    systems["lexical"] = score_system(lambda c: _run_case(dq, c), cases)
    systems["lexical"]["calibrated"] = calibrated(dq, cases)
    if semantic:
        try:
            from deepcontext.embed.minilm import MiniLMEmbedder

            embedder = MiniLMEmbedder()
            embedder.embed_one("warm up")
            sem = dq.SemanticScoring(embedder)
            systems["blended"] = score_system(lambda c: _run_case(dq, c, semantic=sem), cases)
            systems["blended"]["settings"] = {"weight": sem.weight, "floor": sem.floor, "model": embedder.model_id}
            systems["blended"]["calibrated"] = calibrated(dq, cases, semantic=sem)
        except Exception as exc:  # noqa: BLE001 - the model package may be missing
            notes.append(f"blended skipped: {type(exc).__name__}: {exc}")
    else:
        notes.append("blended skipped (--no-semantic)")
    if importlib.util.find_spec("deepcq") is not None:
        import deepcq

        name = f"deepcq {getattr(deepcq, '__version__', '?')}"
        systems[name] = score_system(lambda c: _run_case(deepcq, c), cases)
        systems[name]["calibrated"] = calibrated(deepcq, cases)
    else:
        notes.append("deepcq column skipped: deepcq is not installed (pip install deepcq==0.3.0)")
    return systems


# --------------------------------------------------------------------------------------------
# speed
# --------------------------------------------------------------------------------------------
_SYLLABLES = "ka lo mi ne ru sa te vi do pe ga ri zu mo la ne to fi be an en or ul ix".split()
_WORDS = (
    "service request user cache memory database connection timeout error latency deploy release config "
    "team meeting project deadline status running failed restart queue worker token window key migration "
    "schema index query backup disk network payment invoice customer order shipping report metric alert "
    "incident budget review design feature branch commit build test pipeline cluster node region storage"
).split()


def make_text(size: int, seed: int = 7) -> str:
    """Deterministic paragraphs (~600 chars); one in 40 is about rate limiting."""
    rng = random.Random(seed)
    vocab = _WORDS + ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)]
    vocab += [w + suffix for w in _WORDS for suffix in ("s", "ing", "ed")]
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        if i % 40 == 17:
            p = (
                f"Rate limiting for tenant {i} is enforced per API key with a sliding window counter; "
                "requests over the limit get HTTP 429 and a Retry-After header."
            )
        else:
            words = [rng.choice(vocab) for _ in range(rng.randint(60, 110))]
            p = " ".join(words).capitalize() + "."
        parts.append(p)
        total += len(p) + 2
        i += 1
    return "\n\n".join(parts)[:size]


def state_sections(text: str, n: int = N_SECTIONS) -> dict[str, str]:
    step = len(text) // n + 1
    return {f"s{i:02d}": text[i * step : (i + 1) * step] for i in range(n)}


def _warm_up(mod: Any) -> None:
    """One-time costs (lazy imports, regex compilation) are not what is being compared; the
    garbage collector is switched off as ``timeit`` does (the forked child inherits the parent's
    objects, and a full collection over them would be timed otherwise)."""
    mod.locate("warm up the stemmer\n\nand the tokenizer", "warming tokenizer")
    gc.collect()
    gc.disable()


def _time_locate(mod_name: str, text: str, repeat: int) -> dict[str, Any]:
    mod = __import__(mod_name, fromlist=["locate"])
    _warm_up(mod)
    best, found = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        found = mod.locate(text, LOCATE_QUERY)
        best = min(best, time.perf_counter() - t0)
    return {"seconds": best, "runs": repeat, "indexes": [c.index for c in found]}


def _time_query(mod_name: str, text: str, repeat: int) -> dict[str, Any]:
    mod = __import__(mod_name, fromlist=["DeepCQ"])
    _warm_up(mod)
    sections = state_sections(text)
    cold = warm = float("inf")
    included = 0
    for _ in range(repeat):  # a fresh object each time: "cold" is its first query
        cq = mod.DeepCQ(schema=mod.MemorySchema(sections=list(sections)))
        for name, body in sections.items():
            cq.state.set(name, f"[{name}]\n{body}\n")
        t0 = time.perf_counter()
        included = len(cq.query(STATE_QUERY).sections_included)
        cold = min(cold, time.perf_counter() - t0)
        t0 = time.perf_counter()
        cq.query(STATE_QUERY)
        warm = min(warm, time.perf_counter() - t0)
    return {"seconds": cold, "warm_seconds": warm, "runs": repeat, "included": included}


def _child(fn_name: str, mod_name: str, text: str, repeat: int, conn: Any) -> None:
    try:
        conn.send(globals()[fn_name](mod_name, text, repeat))
    except Exception as exc:  # noqa: BLE001 - report, do not hang the parent
        conn.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def run_isolated(fn_name: str, mod_name: str, text: str, timeout: float, repeat: int = 1) -> dict[str, Any]:
    """Run one measurement in a forked child; a child over ``timeout`` seconds is terminated."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(fn_name, mod_name, text, repeat, child), daemon=True)
    proc.start()
    child.close()
    if parent.poll(timeout):
        result = parent.recv()
        proc.join(10)
    else:
        proc.terminate()
        proc.join(10)
        result = {"timeout": timeout}
    parent.close()
    return result


def speed(sizes_mb: list[float], *, skip_slow: bool, timeout: float, notes: list[str]) -> list[dict[str, Any]]:
    have_deepcq = importlib.util.find_spec("deepcq") is not None
    if not have_deepcq:
        notes.append("deepcq speed skipped: deepcq is not installed")
    rows: list[dict[str, Any]] = []
    for mb in sizes_mb:
        text = make_text(int(mb * 1_000_000))
        row: dict[str, Any] = {"size_mb": mb, "chars": len(text)}
        for op, fn in (("locate", "_time_locate"), ("query", "_time_query")):
            ours = run_isolated(fn, "deepcontext.query", text, timeout, repeat=3)
            row[f"{op}_ours"] = ours
            if not have_deepcq:
                continue
            if skip_slow and mb > 4:
                row[f"{op}_deepcq"] = {"skipped": "--skip-slow"}
                continue
            row[f"{op}_deepcq"] = run_isolated(fn, "deepcq", text, timeout)
        lo, ld = row["locate_ours"], row.get("locate_deepcq", {})
        if "indexes" in lo and "indexes" in ld:
            a, b = set(lo["indexes"]), set(ld["indexes"])
            row["locate_agreement"] = round(len(a & b) / len(a | b), 3) if a | b else 1.0
            row["locate_found"] = {"ours": len(a), "deepcq": len(b)}
            lo.pop("indexes"), ld.pop("indexes")
        else:
            lo.pop("indexes", None)
            if isinstance(ld, dict):
                ld.pop("indexes", None)
        rows.append(row)
        print(f"  {mb:g} MB done", file=sys.stderr, flush=True)
    return rows


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def _fmt_time(m: dict[str, Any] | None, key: str = "seconds") -> str:
    if not m:
        return "n/a"
    if "timeout" in m:
        return f"> {m['timeout']:g} s (timeout)"
    if "skipped" in m:
        return "skipped"
    if "error" in m:
        return "error"
    s = m[key]
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def _speedup(ours: dict[str, Any] | None, theirs: dict[str, Any] | None, key: str = "seconds") -> str:
    if not ours or not theirs or key not in ours:
        return "n/a"
    if "timeout" in theirs:
        return f"> {theirs['timeout'] / ours[key]:.0f}x"
    if key not in theirs:
        return "n/a"
    return f"{theirs[key] / ours[key]:.0f}x"


def markdown(report: dict[str, Any]) -> str:
    lines = ["# deepcontext.query vs deepcq 0.3.0", ""]
    q = report.get("quality")
    if q:
        lines += [
            f"## Section selection ({report['cases']} labelled cases, threshold 0.3, fallback on)",
            "",
            "| system | precision | recall | F1 | prompt reduction | TP | FP | FN |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, s in q.items():
            lines.append(
                f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {s['f1']:.3f} | {s['reduction_pct']:.1f}% "
                f"| {s['tp']} | {s['fp']} | {s['fn']} |"
            )
        lines += [
            "",
            "With each library's own `calibrate()` (best-F1 threshold over the same cases, fallback ignored):",
            "",
            "| system | threshold | precision | recall | F1 |",
            "|---|---|---|---|---|",
        ]
        for name, s in q.items():
            c = s.get("calibrated")
            if c:
                lines.append(f"| {name} | {c['threshold']:.2f} | {c['precision']:.3f} | {c['recall']:.3f} | {c['f1']:.3f} |")
        kinds = sorted({k for s in q.values() for k in s["by_kind"]})
        lines += ["", "F1 by kind of case:", "", "| kind | " + " | ".join(q) + " |", "|---" * (len(q) + 1) + "|"]
        for k in kinds:
            cells = [f"{q[n]['by_kind'].get(k, {}).get('f1', 0):.2f}" for n in q]
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
    sp = report.get("speed")
    if sp:
        lines += [
            "",
            "## Speed (same synthetic text; query(): 64 state sections; ours best of 3, deepcq 1 run)",
            "",
            "| size | locate ours | locate deepcq | speed-up | query ours (cold / warm) | query deepcq (cold / warm) | speed-up (cold) |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in sp:
            lo, ld = r.get("locate_ours"), r.get("locate_deepcq")
            qo, qd = r.get("query_ours"), r.get("query_deepcq")
            lines.append(
                f"| {r['size_mb']:g} MB | {_fmt_time(lo)} | {_fmt_time(ld)} | {_speedup(lo, ld)} "
                f"| {_fmt_time(qo)} / {_fmt_time(qo, 'warm_seconds')} "
                f"| {_fmt_time(qd)} / {_fmt_time(qd, 'warm_seconds') if qd and 'warm_seconds' in qd else 'n/a'} "
                f"| {_speedup(qo, qd)} |"
            )
        agreements = [f"{r['size_mb']:g} MB: {r['locate_agreement']}" for r in sp if "locate_agreement" in r]
        if agreements:
            lines += [
                "",
                "locate() agreement with deepcq (Jaccard of returned chunk indexes): " + ", ".join(agreements),
            ]
    if report.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {n}" for n in report["notes"]]
    lines += ["", f"Machine: {report['machine']}"]
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path, notes: list[str]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        notes.append("plot skipped: matplotlib is not installed")
        return
    rows = report["speed"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label, style in (
        ("locate_ours", "locate() deepcontext", "o-"),
        ("locate_deepcq", "locate() deepcq 0.3.0", "o--"),
        ("query_ours", "query() deepcontext (cold)", "s-"),
        ("query_deepcq", "query() deepcq 0.3.0 (cold)", "s--"),
    ):
        pts = [(r["size_mb"], r[key]["seconds"]) for r in rows if isinstance(r.get(key), dict) and "seconds" in r[key]]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xscale("log", base=2)
    sizes = [r["size_mb"] for r in rows]
    ax.set_xticks(sizes, [f"{s:g}" for s in sizes])
    ax.set_yscale("log")
    ax.set_xlabel("text size (MB)")
    ax.set_ylabel("seconds")
    ax.set_title("deepcontext.query vs deepcq 0.3.0")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="labelled cases (JSONL)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder for JSON, markdown and PNG")
    ap.add_argument("--sizes", default="1,4,16", help="text sizes in MB for the speed part (default 1,4,16)")
    ap.add_argument("--skip-slow", action="store_true", help="do not run deepcq on texts above 4 MB")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per deepcq measurement")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed part")
    ap.add_argument("--no-quality", action="store_true", help="skip the labelled-cases part")
    ap.add_argument("--no-semantic", action="store_true", help="skip the blended (MiniLM) system")
    args = ap.parse_args(argv)

    notes: list[str] = []
    report: dict[str, Any] = {
        "machine": f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
        f"{mp.cpu_count()} cores",
    }
    if not args.no_quality:
        cases = load_cases(args.cases)
        report["cases"] = len(cases)
        print(f"quality: {len(cases)} cases", file=sys.stderr)
        report["quality"] = quality(cases, notes, semantic=not args.no_semantic)
    if not args.no_speed:
        sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
        print(f"speed: sizes {sizes} MB", file=sys.stderr)
        report["speed"] = speed(sizes, skip_slow=args.skip_slow, timeout=args.timeout, notes=notes)
    report["notes"] = notes
    args.out.mkdir(parents=True, exist_ok=True)
    if report.get("speed"):
        plot(report, args.out / "bench_query.png", notes)
    (args.out / "bench_query.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md = markdown(report)
    (args.out / "bench_query.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
