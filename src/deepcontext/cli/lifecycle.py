"""``deepcontext lifecycle``: decay, consolidation and cleanup for one user or all, once or on a schedule."""

from __future__ import annotations

import re
from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, esc, fail, print_json, run

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: (header, report key): decayed = importance lowered, faded = deactivated (under 0.05), merged =
#: merged into new long-term memories, promoted = moved to long-term alone, new LT = long-term
#: memories written by merges, cleaned = faded ones soft-deleted
_COLUMNS = (
    ("decayed", "memories_decayed"),
    ("faded", "memories_deactivated"),
    ("merged", "memories_merged"),
    ("promoted", "memories_promoted"),
    ("groups", "groups"),
    ("new LT", "long_term_created"),
    ("cleaned", "memories_cleaned"),
    ("purged", "purged"),
    ("expired", "expired"),
    ("ms", "took_ms"),
)


def parse_interval(text: str) -> float:
    """Seconds from "90", "90s", "15m", "1h", "1d" or a sum like "1h30m" (ValidationError otherwise)."""
    from deepcontext.errors import ValidationError

    raw = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        seconds = float(raw)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", raw)
        if not parts or "".join(n + u for n, u in parts) != raw:
            raise ValidationError(f"not an interval: {text!r} (use e.g. 30s, 15m, 1h, 1d)", field="every")
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise ValidationError(f"the interval must be positive, got {text!r}", field="every")
    return seconds


def _table(reports: list[dict[str, Any]], title: str) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("user", overflow="fold")
    for label, _ in _COLUMNS:
        table.add_column(label, justify="right")
    totals = {key: 0.0 for _, key in _COLUMNS}
    for r in reports:
        if r.get("error"):
            table.add_row(esc(r["user_id"]), f"[yellow]{esc(r['error'])}[/]", *[""] * (len(_COLUMNS) - 1))
            continue
        # the report counts promotions among the consolidated; the table shows them apart
        r = {**r, "memories_merged": r["memories_consolidated"] - r["memories_promoted"]}
        table.add_row(esc(r["user_id"]), *[_cell(r[key]) for _, key in _COLUMNS])
        for _, key in _COLUMNS:
            totals[key] += r[key]
    if len(reports) > 1:
        table.add_section()
        table.add_row("total", *[_cell(totals[key]) for _, key in _COLUMNS])
    return table


def _cell(value: float) -> str:
    return f"{value:.1f}" if isinstance(value, float) and not float(value).is_integer() else str(int(value))


@app.command()
def lifecycle(
    user: str = typer.Option(None, "--user", "-u", help="Run the lifecycle for this user"),
    all_users: bool = typer.Option(False, "--all", help="Run it for every user in the database"),
    every: str = typer.Option(None, "--every", help="Run again after this interval (30s, 15m, 1h, 1d) until interrupted"),
    runs: int = typer.Option(0, "--runs", min=0, help="With --every: stop after this many runs (0: never)"),
    consolidate: bool = typer.Option(
        None,
        "--consolidate/--no-consolidate",
        help="Force consolidation, or skip it (default: only when due, at consolidation_threshold)",
    ),
    wait: float = typer.Option(
        None, "--wait", min=0, help="Seconds to wait for a run of the same user elsewhere (default: the setting)"
    ),
    json_out: bool = typer.Option(False, "--json", help="Print each run's results as JSON instead of a table"),
    policy: bool = typer.Option(False, "--policy", help="Print the decay half-lives per type and tier, then exit"),
) -> None:
    """Decay, consolidate and clean up memories: for one user or all, once or every interval.

    Safe to run while the database is in use and from several processes at once: runs of one user
    never overlap (a lock held in the database)."""
    if policy:
        _print_policy(json_out)
        return
    if bool(user) == all_users:
        fail("give --user USER or --all (one of them)")
    interval = None
    if every is not None:
        try:
            interval = parse_interval(every)
        except ValueError as exc:
            fail(str(exc))
    elif runs:
        fail("--runs needs --every")

    async def body(ctx: Any) -> None:
        import asyncio
        import time

        from deepcontext.errors import LockTimeoutError

        done = 0
        while True:
            started = time.perf_counter()
            users = await ctx.users() if all_users else [user]
            reports = []
            for u in users:
                try:
                    reports.append(await ctx.run_lifecycle(u, consolidate=consolidate, wait=wait))
                except LockTimeoutError as exc:
                    if not all_users:
                        raise
                    reports.append({"user_id": u, "error": f"skipped: {exc}"})
            done += 1
            stamp = ctx.clock.now().strftime("%Y-%m-%d %H:%M:%S UTC")
            if json_out:
                print_json({"at": stamp, "run": done, "users": reports})
            else:
                title = f"lifecycle run {done} at {stamp}: {len(users)} user(s)"
                console().print(_table(reports, title))
            if interval is None or (runs and done >= runs):
                return
            await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))

    run(body, embeds=consolidate is not False)  # decay and clean-up embed nothing


def _print_policy(json_out: bool) -> None:
    from deepcontext.cli.serve import server_settings
    from deepcontext.lifecycle.decay import DecayPolicy

    s = server_settings()  # invalid settings: one line, as for every command
    rows = DecayPolicy.from_settings(s).table()
    if json_out:
        print_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"half-lives in days (decay_half_life_days = {s.decay_half_life_days:g}; 0: never decays)")
    table.add_column("type")
    for tier in ("working", "short_term", "long_term"):
        table.add_column(tier, justify="right")
    for mtype in ("episodic", "semantic", "procedural"):
        cells = [f"{r['half_life_days']:g}" for r in rows if r["memory_type"] == mtype]
        table.add_row(mtype, *cells)
    console().print(table)
