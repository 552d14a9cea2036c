"""Memory commands: add, search, list, get, history, delete, graph, export, import, users, set-user, stats."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.common import console, esc, fail, print_json, read_input, run, short
from deepcontext.cli.app import app

USER = typer.Option(..., "--user", "-u", help="The user whose memories to use")
#: messages per add() when a file holds more (progress shows between chunks)
ADD_CHUNK = 100
#: the turn metadata key that records a message's place in a bulk input (what resuming reads)
IMPORT_KEY = "import"
#: recent turns per conversation read to find where an interrupted input stopped
RESUME_SCAN = 1000
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


def _source_key(path: str, batches: list[dict[str, Any]]) -> str:
    """What identifies one input across runs: a digest of its messages (the same file read again,
    or a copy of it, has the same key; an edited one has another)."""
    body = json.dumps(batches, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def _mark(msgs: Any, source: str, start: int) -> Any:
    """Each message tagged with its place in the input (stored in its turn's metadata, so the
    checkpoint is written in the same transaction as the batch); anything else add() refuses."""
    if not isinstance(msgs, list):
        return msgs
    out = []
    for i, m in enumerate(msgs):
        meta = m.get("metadata", {}) if isinstance(m, dict) else None
        if not isinstance(meta, dict):
            out.append(m)
            continue
        out.append({**m, "metadata": {**meta, IMPORT_KEY: {"source": source, "position": start + i}}})
    return out


async def _committed(ctx: Any, user: str, conversations: list[str], source: str) -> int:
    """How many messages of ``source`` are stored already: one past the highest position among
    the recent turns of the conversations it writes to (batches commit in order)."""
    done = 0
    for conv in conversations:
        for turn in await ctx.turns(user, conv, limit=RESUME_SCAN):
            mark = turn.metadata.get(IMPORT_KEY)
            if isinstance(mark, dict) and mark.get("source") == source and isinstance(mark.get("position"), int):
                done = max(done, mark["position"] + 1)
    return done


def _turn_texts(ctx: Any, msgs: Any, user_name: str | None) -> list[str]:
    """The texts add() will embed for these messages' own memories (none if they do not parse:
    add() then reports the error)."""
    from datetime import datetime, timezone

    from deepcontext.errors import ValidationError
    from deepcontext.services.ingest import turn_memory_text
    from deepcontext.services.validation import parse_messages

    if not ctx.settings.store_turn_memories:
        return []
    try:
        parsed = parse_messages(
            msgs, now=datetime.now(timezone.utc), default_time=None,
            max_messages=ctx.settings.max_messages_per_add, max_chars=ctx.settings.max_message_chars,
        )  # fmt: skip
    except ValidationError:
        return []
    return [turn_memory_text(m, user_name) for m in parsed if m.role in ("user", "assistant")]


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
    restart: bool = typer.Option(
        False, "--restart", help="Store a long input from its start even if an earlier run of it stored some batches already"
    ),
) -> None:
    """Store messages and the memories derived from them. An input of more than 100 messages is
    stored in batches of 100 (one transaction each) with a progress bar; run again after an
    interruption, it continues after the last stored batch."""
    batches = _read_batches(path, conversation, timestamp)

    async def body(ctx: Any) -> tuple[list[Any], int, int, float]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

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
        # a bulk input is resumable: its turns record their place in it
        source = _source_key(path, batches) if len(chunks) > 1 else None
        skip = 0
        if source is not None and not restart:
            skip = await _committed(ctx, user, list(dict.fromkeys(str(b["conversation_id"]) for b, _ in chunks)), source)
            if skip and not json_out:
                console(stderr=True).print(f"resuming: {skip} of {total} messages were stored by an earlier run", markup=False)
        out = []
        columns = ("{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "eta", TimeRemainingColumn())
        position = 0
        t0 = time.perf_counter()
        pending: list[tuple[dict[str, Any], Any, int]] = []
        for b, msgs in chunks:
            n = len(msgs) if isinstance(msgs, list) else 1
            if position + n > skip:  # else stored by an earlier run
                todo = msgs[skip - position :] if isinstance(msgs, list) and position < skip else msgs
                pending.append((b, todo, max(position, skip)))
            position += n
        # the next batch's turns are embedded while this one is planned and written (the model
        # releases the GIL); add() then finds their vectors in the embedder's cache
        prefetch: asyncio.Future[Any] | None = None
        display = (await ctx.get_user(user))["name"] if len(pending) > 1 else None
        with Progress(*columns, console=console(stderr=True), transient=True, disable=len(chunks) < 2 or json_out) as progress:
            task = progress.add_task("messages", total=total - skip)
            for k, (b, todo, start) in enumerate(pending):
                if prefetch is not None:
                    with contextlib.suppress(Exception):  # a failing model fails the add itself, clearly
                        await prefetch
                nxt = _turn_texts(ctx, pending[k + 1][1], display) if k + 1 < len(pending) else []
                prefetch = asyncio.ensure_future(asyncio.to_thread(ctx.embedder.embed, nxt)) if nxt else None
                marked = _mark(todo, source, start) if source is not None else todo
                try:
                    out.append(
                        await ctx.add(marked, user, b["conversation_id"], timestamp=b["timestamp"], agent_id=agent, run_id=run_id)
                    )
                except BaseException:
                    if prefetch is not None:
                        with contextlib.suppress(BaseException):
                            await prefetch
                    raise
                progress.advance(task, len(todo) if isinstance(todo, list) else 1)
        return out, skip, total, time.perf_counter() - t0

    results, skipped, total, seconds = run(body)
    if json_out:
        print_json([r.model_dump(mode="json") for r in results])
        return
    added = sum(r.memories_added for r in results)
    same = sum(r.memories_unchanged for r in results)
    turns = sum(len(r.turn_ids) for r in results)
    ents = sorted({e for r in results for e in r.entities_found})
    rate = f" in {seconds:.1f} s ({turns / seconds:.1f} turns/s)" if turns and total > ADD_CHUNK and seconds > 0 else ""
    resumed = f" ({skipped} stored earlier)" if skipped else ""
    console().print(
        f"stored {turns} turn(s){resumed}{rate}; {added} new memories, {same} already known; entities: {', '.join(ents) or '-'}",
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
