"""Memory commands: add, search, list, get, history, delete, graph, export, import, users, set-user, stats."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.common import console, esc, fail, print_json, read_input, run, short
from deepcontext.cli.app import app

USER = typer.Option(..., "--user", "-u", help="The user whose memories to use")
#: messages per add() when a file holds more (progress shows between chunks)
ADD_CHUNK = 100
AGENT_HELP = "The agent the memories belong to, inside the user"
RUN_HELP = "The run (session) the memories belong to, inside the user"
METADATA_HELP = (
    'Metadata filter as JSON: {"key": value} or {"key": {"op": value}} with op one of eq ne in nin gt gte lt lte '
    'contains icontains, {"key": "*"}, AND / OR / NOT lists'
)


def _metadata_filter(raw: str | None) -> Any:
    if raw is None:
        return None
    from deepcontext.errors import ValidationError

    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValidationError(f"--metadata is not valid JSON: {exc}", field="metadata") from None


def _read_batches(path: str, conversation: str, timestamp: str | None) -> list[dict[str, Any]]:
    """Messages from a JSON / JSONL file or stdin ('-'), as batches for add().

    Accepted: a JSON list of messages; a JSON object {"messages": [...], "conversation_id"?,
    "timestamp"?}; a list of such objects; JSONL with one message or one batch object per line.
    """
    raw = read_input(path).strip()
    if not raw:
        fail("no input: expected JSON or JSONL messages")
    try:
        data: Any = json.loads(raw)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        items = []
        for n, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    fail(f"line {n}: not JSON ({exc.msg})")
    batches: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    for it in items:
        if isinstance(it, dict) and "messages" in it:
            batches.append(
                {
                    "messages": it["messages"],
                    "conversation_id": it.get("conversation_id", conversation),
                    "timestamp": it.get("timestamp", timestamp),
                }
            )
        else:
            loose.append(it)
    if loose:
        batches.insert(0, {"messages": loose, "conversation_id": conversation, "timestamp": timestamp})
    return batches


@app.command()
def add(
    path: str = typer.Argument("-", help="JSON or JSONL file of messages; '-' reads stdin"),
    user: str = USER,
    conversation: str = typer.Option("default", "--conversation", "-c", help="Conversation id"),
    timestamp: str = typer.Option(None, "--timestamp", help="When the messages were said (ISO 8601)"),
    agent: str = typer.Option(None, "--agent", help=AGENT_HELP),
    run_id: str = typer.Option(None, "--run", help=RUN_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON"),
    user_name: str = typer.Option(
        None, "--user-name", help="The user's display name, used in memories instead of 'User' (kept for later adds)"
    ),
) -> None:
    """Store messages and the memories derived from them."""
    batches = _read_batches(path, conversation, timestamp)

    async def body(ctx: Any) -> list[Any]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        if user_name is not None:
            await ctx.set_user(user, name=user_name)
        # long inputs go in chunks (each one add, one transaction): within max_messages_per_add,
        # and small enough for the progress bar to move
        size = max(1, min(ctx.settings.max_messages_per_add, ADD_CHUNK))
        chunks: list[tuple[dict[str, Any], Any]] = []
        for b in batches:
            msgs = b["messages"]
            if isinstance(msgs, list) and len(msgs) > size:
                chunks += [(b, msgs[i : i + size]) for i in range(0, len(msgs), size)]
            else:
                chunks.append((b, msgs))  # add() validates anything else
        total = sum(len(c) if isinstance(c, list) else 1 for _, c in chunks)
        out = []
        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console(stderr=True), transient=True, disable=len(chunks) < 2 or json_out) as progress:
            task = progress.add_task("messages", total=total)
            for b, msgs in chunks:
                out.append(
                    await ctx.add(msgs, user, b["conversation_id"], timestamp=b["timestamp"], agent_id=agent, run_id=run_id)
                )
                progress.advance(task, len(msgs) if isinstance(msgs, list) else 1)
        return out

    results = run(body)
    if json_out:
        print_json([r.model_dump(mode="json") for r in results])
        return
    added = sum(r.memories_added for r in results)
    same = sum(r.memories_unchanged for r in results)
    turns = sum(len(r.turn_ids) for r in results)
    ents = sorted({e for r in results for e in r.entities_found})
    console().print(
        f"stored {turns} turn(s); {added} new memories, {same} already known; entities: {', '.join(ents) or '-'}",
        markup=False,
    )


@app.command()
def search(
    query: str = typer.Argument(..., help="What to look for"),
    user: str = USER,
    limit: int = typer.Option(10, "--limit", "-n", min=1, max=100, help="Results (1-100)"),
    tier: list[str] = typer.Option(None, "--tier", help="working, short_term or long_term (repeatable)"),
    memory_type: list[str] = typer.Option(None, "--type", help="semantic, episodic or procedural (repeatable)"),
    conversation: str = typer.Option(None, "--conversation", "-c", help="Only this conversation"),
    preset_name: str = typer.Option(None, "--preset", help="hybrid (default), relevance, vector, keyword, graph"),
    include_superseded: bool = typer.Option(
        False, "--include-superseded", help="Also older values a later statement changed, each after its replacement"
    ),
    min_score: float = typer.Option(
        None, "--min-score", min=0.0, max=1.0, help="Leave out results whose score (calibrated relevance, 0-1) is below this"
    ),
    agent: list[str] = typer.Option(None, "--agent", help="Only memories of this agent (repeatable)"),
    run_id: list[str] = typer.Option(None, "--run", help="Only memories of this run (repeatable)"),
    metadata: str = typer.Option(None, "--metadata", help=METADATA_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON"),
) -> None:
    """Hybrid search (vector + keyword + graph) over a user's memories; scores are calibrated relevance (0-1)."""

    async def body(ctx: Any) -> tuple[Any, int]:
        res = await ctx.search(
            query,
            user,
            limit,
            tier or None,
            memory_type or None,
            conversation_id=conversation,
            config=preset_name,
            include_superseded=include_superseded,
            min_score=min_score,
            agent_id=agent or None, run_id=run_id or None, metadata=_metadata_filter(metadata),
        )  # fmt: skip
        # an empty answer says why: a misspelt user id has no memories at all
        known = (await ctx.stats(user))["memories"] if not res.results else 1
        return res, known

    res, known = run(body)
    if json_out:
        print_json(res.model_dump(mode="json"))
        return
    if not res.results:
        why = (
            f"user {user!r} has no memories"
            if not known
            else f"no memory scores {min_score} or more" if min_score else "no memory matches"
        )
        console().print(f"no results for {query!r}: {why}", markup=False)
        return
    print_results(res)


def print_results(res: Any) -> None:
    from rich.table import Table

    table = Table(title=f"{res.total} result(s) for {esc(repr(res.query))} ({res.took_ms:.1f} ms)", show_lines=False)
    for col in ("#", "score", "id", "tier", "type", "memory", "from"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(res.results, start=1):
        src = r.sources[0] if r.sources else None
        origin = (
            f"turn {src.turn_id} · {src.speaker or src.role} · {src.said_at:%Y-%m-%d}" + (f" (+{len(r.sources) - 1})" if len(r.sources) > 1 else "")
            if src
            else "-"
        )
        text = short(r.text, 90) + (" (superseded)" if r.superseded_by is not None else "")
        table.add_row(str(i), f"{r.score:.2f}", str(r.memory_id), r.tier.value, r.memory_type.value, esc(text), esc(origin))
    console().print(table)


@app.command("list")
def list_cmd(
    user: str = USER,
    tier: list[str] = typer.Option(None, "--tier", help="working, short_term or long_term (repeatable)"),
    memory_type: list[str] = typer.Option(None, "--type", help="semantic, episodic or procedural (repeatable)"),
    limit: int = typer.Option(20, "--limit", "-n", min=1, max=1000, help="Page size"),
    cursor: str = typer.Option(None, "--cursor", help="next_cursor of the previous page"),
    include_inactive: bool = typer.Option(False, "--all", help="Also deleted, superseded, merged, decayed"),
    agent: list[str] = typer.Option(None, "--agent", help="Only memories of this agent (repeatable)"),
    run_id: list[str] = typer.Option(None, "--run", help="Only memories of this run (repeatable)"),
    metadata: str = typer.Option(None, "--metadata", help=METADATA_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the page as JSON"),
) -> None:
    """List a user's memories, newest first."""
    page = run(
        lambda ctx: ctx.list(
            user, tier=tier or None, memory_type=memory_type or None, limit=limit, cursor=cursor,
            include_inactive=include_inactive, agent_id=agent or None, run_id=run_id or None,
            metadata=_metadata_filter(metadata),
        )  # fmt: skip
    )
    if json_out:
        print_json(page.model_dump(mode="json"))
        return
    from rich.table import Table

    table = Table(title=f"{page.total} memories")
    for col in ("id", "tier", "type", "status", "imp.", "memory", "said"):
        table.add_column(col, overflow="fold")
    for m in page.memories:
        table.add_row(
            str(m.id), m.tier.value, m.memory_type.value, m.status.value, f"{m.importance:.2f}", esc(short(m.text, 90)),
            f"{m.said_at:%Y-%m-%d}" if m.said_at else "-",
        )  # fmt: skip
    console().print(table)
    if page.next_cursor:
        console().print(f"next page: --cursor {page.next_cursor}")


@app.command()
def get(memory_id: int = typer.Argument(..., help="Memory id"), user: str = USER) -> None:
    """Show one memory with its provenance (JSON)."""
    mem = run(lambda ctx: ctx.get(memory_id, user))
    print_json(mem.model_dump(mode="json"))


@app.command()
def history(memory_id: int = typer.Argument(..., help="Memory id"), user: str = USER) -> None:
    """Every change of a memory, oldest first."""
    entries = run(lambda ctx: ctx.history(memory_id, user))
    from rich.table import Table

    table = Table(title=f"history of memory {memory_id}")
    for col in ("when", "event", "by", "old", "new", "why"):
        table.add_column(col, overflow="fold")
    for h in entries:
        table.add_row(
            f"{h.created_at:%Y-%m-%d %H:%M:%S}", h.event.value, esc(h.actor), esc(short(h.old_text or "", 50)),
            esc(short(h.new_text or "", 50)), esc(h.reason or ""),
        )  # fmt: skip
    console().print(table)


@app.command()
def delete(memory_id: int = typer.Argument(..., help="Memory id"), user: str = USER) -> None:
    """Soft-delete a memory (kept in its history)."""
    run(lambda ctx: ctx.delete(memory_id, user))
    console().print(f"deleted memory {memory_id}")


@app.command()
def graph(
    entity: str = typer.Argument(..., help="Entity name (case-insensitive, whole name)"),
    user: str = USER,
    depth: int = typer.Option(2, "--depth", "-d", min=0, max=5, help="Hops (0-5)"),
    json_out: bool = typer.Option(False, "--json", help="Print as JSON"),
) -> None:
    """The knowledge-graph neighbourhood of an entity."""
    hood = run(lambda ctx: ctx.get_entity_graph(user, entity, depth))
    if json_out:
        print_json(hood)
        return
    print_graph(entity, hood)


def print_graph(entity: str, hood: list[dict[str, Any]]) -> None:
    from deepcontext.chat.render import graph_view

    console().print(graph_view(entity, hood))


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
    """Restore an export (fresh ids, same memories, provenance and history)."""
    text = read_input(path)
    records = []
    from rich.progress import track

    lines = [ln for ln in text.splitlines() if ln.strip()]
    for n, line in enumerate(track(lines, description="reading", transient=True, disable=len(lines) < 1000), start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            fail(f"line {n}: not JSON ({exc.msg})")
    counts = run(lambda ctx: ctx.import_records(records, user))
    console().print("imported " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))


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


@app.command()
def users() -> None:
    """List the users in the database."""
    names = run(lambda ctx: ctx.users())
    for u in names:
        print(u)
    if not names:
        console(stderr=True).print("no users in this database", markup=False)


@app.command("set-user")
def set_user(
    user: str = USER,
    name: str = typer.Option(..., "--name", help="Display name used in memories instead of 'User'"),
) -> None:
    """Set a user's display name (the user's entity keeps one node under the new name)."""
    run(lambda ctx: ctx.set_user(user, name=name))
    console().print(f"user {user!r} is now called {name!r} in memories")


@app.command()
def stats(user: str = USER) -> None:
    """Rows of a user per table."""
    print_json(run(lambda ctx: ctx.stats(user)))


@app.command("delete-user")
def delete_user(
    user: str = typer.Argument(..., help="The user to erase"),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation"),
) -> None:
    """Erase everything of a user from every table (irreversible)."""
    if not yes and not typer.confirm(f"Erase everything of user {user!r}?"):
        raise typer.Exit(1)
    counts = run(lambda ctx: ctx.delete_user(user))
    console().print(f"deleted {sum(counts.values())} rows of {user!r}", markup=False)
