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

#: records per transaction of `import` (a larger file goes in resumable parts)
IMPORT_PART = 2000


@app.command()
def export(
    user: str = USER,
    output: str = typer.Option("-", "--output", "-o", help="File to write (JSONL); '-' for stdout"),
) -> None:
    """Export everything of a user as JSONL (turns, graph, memories with provenance and history)."""

    async def body(ctx: Any) -> list[dict[str, Any]]:
        from deepcontext.errors import NotFoundError

        # a misspelt user would export as a header alone, which imports as nothing
        if not any((await ctx.stats(user)).values()):
            raise NotFoundError(f"user {user!r} not found in this database (`deepcontext users` lists them); nothing written")
        return [r async for r in ctx.export(user)]

    records = run(body, embeds=False)
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
    batch: int = typer.Option(
        IMPORT_PART, "--batch", min=1, help="Records per transaction; a larger file is imported in parts, resumable"
    ),
    defer_index: bool = typer.Option(
        False,
        "--defer-index",
        help="PostgreSQL: drop the HNSW index for the import and build it once after (faster for large "
        "imports; other processes' searches scan exactly meanwhile)",
    ),
) -> None:
    """Restore an export (fresh ids, same memories, provenance and history). A file of more than
    --batch records goes in parts, one transaction each, with a progress bar: run again after an
    interruption, it continues after the last committed part and stores nothing twice."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    text = read_input(path)
    records = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for n, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            fail(f"line {n}: not JSON ({exc.msg})")
    t0 = time.perf_counter()
    columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "eta", TimeRemainingColumn())
    resumed = 0
    calls = 0
    with Progress(*columns, console=console(stderr=True), transient=True, disable=len(lines) <= batch) as progress:
        task = progress.add_task("records", total=max(0, len(lines) - 1))

        def moved(done: int, total: int) -> None:
            nonlocal resumed, calls
            calls += 1
            # the first report, before any part is written, counts what an earlier run committed
            if calls == 1 and 0 < done < total:
                resumed = done
                progress.reset(task, total=total - done)
                console(stderr=True).print(f"resuming: {done} of {total} records were imported by an earlier run", markup=False)
                return
            progress.update(task, completed=done - resumed)

        counts = run(
            lambda ctx: ctx.import_records(records, user, part_size=batch, progress=moved, defer_vector_index=defer_index),
            create=True,
        )
    seconds = time.perf_counter() - t0
    shown = {k: v for k, v in counts.items() if v and k not in ("resumed_parts", "already_imported")}
    # a resumed run may have only memories left to write: the rate counts this run's records too
    written, turns = sum(shown.values()), counts.get("turns", 0)
    rate = (
        f" in {seconds:.1f} s ({written / seconds:.1f} records/s, {turns / seconds:.1f} turns/s)"
        if written and seconds > 0
        else ""
    )
    if counts.get("already_imported"):
        console().print("already imported: " + ", ".join(f"{v} {k}" for k, v in shown.items()), soft_wrap=True)
        return
    earlier = f"; {counts['resumed_parts']} part(s) were imported by an earlier run" if counts.get("resumed_parts") else ""
    console().print("imported " + ", ".join(f"{v} {k}" for k, v in shown.items()) + rate + earlier, soft_wrap=True)


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
    counts = run(lambda ctx: ctx.import_v01(source), create=True)
    for user, c in counts.items():
        console().print(f"{user}: " + ", ".join(f"{v} {k}" for k, v in c.items() if v), markup=False)
    if not counts:
        console().print("the 0.1 database holds no users", markup=False)
