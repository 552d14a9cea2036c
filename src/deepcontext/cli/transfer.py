"""Moving memories between databases: ``export``, ``import`` and ``import-0.1``."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, fail, read_input, run
from deepcontext.cli.memory import USER


@app.command()
def export(
    user: str = USER,
    output: str = typer.Option("-", "--output", "-o", help="File to write (JSONL); '-' for stdout"),
) -> None:
    """Export everything of a user as JSONL (turns, graph, memories with provenance and history)."""

    async def body(ctx: Any) -> list[dict[str, Any]]:
        return [r async for r in ctx.export(user)]

    records = run(body)
    lines = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)
    if output == "-":
        sys.stdout.write(lines)
    else:
        Path(output).write_text(lines, encoding="utf-8")
        console(stderr=True).print(f"wrote {len(records)} records to {output}")


@app.command("import")
def import_cmd(
    path: str = typer.Argument(..., help="JSONL file made by `deepcontext export` ('-' for stdin)"),
    user: str = typer.Option(None, "--user", "-u", help="Import into this user (default: the exported one)"),
) -> None:
    """Restore an export (fresh ids, same memories, provenance and history). One transaction: an
    interrupted import stores nothing, so running it again stores everything once."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    text = read_input(path)
    records = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    t0 = time.perf_counter()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "eta", TimeRemainingColumn())
    with Progress(*columns, console=console(stderr=True), transient=True, disable=len(lines) < 1000) as progress:
        task = progress.add_task("reading", total=len(lines))
        for n, line in enumerate(lines, start=1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                fail(f"line {n}: not JSON ({exc.msg})")
            if n % 1000 == 0:
                progress.update(task, completed=n)
        progress.update(task, description="writing (one transaction)", completed=len(lines))
        counts = run(lambda ctx: ctx.import_records(records, user))
    seconds = time.perf_counter() - t0
    rate = f" in {seconds:.1f} s ({counts.get('turns', 0) / seconds:.1f} turns/s)" if counts.get("turns") and seconds > 0 else ""
    console().print("imported " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + rate)


@app.command("import-0.1")
def import_v01(
    path: str = typer.Argument(..., help="The DeepContext 0.1 SQLite file (e.g. ~/.deepcontext/memory.db)"),
) -> None:
    """Import a DeepContext 0.1 database: memories, entities, relations, summaries of every user.

    When PATH is the database this command opens (--db, default ~/.deepcontext/memory.db), the 0.1
    file is first moved aside to PATH.v0.1.bak and the new database is written in its place."""
    from deepcontext.cli.common import settings_kwargs
    from deepcontext.services.legacy import is_v01_database
    from deepcontext.settings import DeepContextSettings

    source = Path(path).expanduser().resolve()
    if not is_v01_database(source):
        fail(f"{source} is not a DeepContext 0.1 database")
    target = DeepContextSettings(**{k: v for k, v in settings_kwargs().items() if k != "embedder"}).resolved_database_url
    if target.startswith("sqlite:") and Path(target.split("///", 1)[-1]).expanduser().resolve() == source:
        backup = source.with_name(source.name + ".v0.1.bak")
        if backup.exists():
            fail(f"{backup} already exists: move it away first")
        for suffix in ("", "-wal", "-shm", "-journal"):
            if Path(f"{source}{suffix}").exists():
                Path(f"{source}{suffix}").rename(f"{backup}{suffix}")
        console(stderr=True).print(f"moved the 0.1 database to {backup}", markup=False)
        source = backup
    counts = run(lambda ctx: ctx.import_v01(source))
    for user, c in counts.items():
        console().print(f"{user}: " + ", ".join(f"{v} {k}" for k, v in c.items() if v), markup=False)
    if not counts:
        console().print("the 0.1 database holds no users", markup=False)
