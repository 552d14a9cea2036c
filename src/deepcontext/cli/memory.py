"""Memory commands: add, search, list, get, history, delete, graph, users, set-user, stats, delete-user."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.bulk_input import ADD_CHUNK, committed_count, mark_positions, read_batches, source_key, turn_texts
from deepcontext.cli.common import console, esc, print_json, run, short

if TYPE_CHECKING:
    from deepcontext.types import GraphNeighbourInfo

USER = typer.Option(..., "--user", "-u", help="The user whose memories to use")
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


@app.command()
def add(
    path: str = typer.Argument("-", help="JSON or JSONL file of messages; '-' reads stdin"),
    user: str = USER,
    conversation: str = typer.Option("default", "--conversation", "-c", help="Conversation id"),
    timestamp: str = typer.Option(None, "--timestamp", help="When the messages were said (ISO 8601 or epoch seconds)"),
    agent: str = typer.Option(None, "--agent", help=AGENT_HELP),
    run_id: str = typer.Option(None, "--run", help=RUN_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the results as JSON"),
    user_name: str = typer.Option(
        None, "--user-name", help="The user's display name, used in memories instead of 'the user' (kept for later adds)"
    ),
    restart: bool = typer.Option(
        False, "--restart", help="Store a long input from its start even if an earlier run of it stored some batches already"
    ),
) -> None:
    """Store messages and the memories derived from them. An input of more than 100 messages is
    stored in batches of 100 (one transaction each) with a progress bar; run again after an
    interruption, it continues after the last stored batch."""
    batches = read_batches(path, conversation, timestamp)
    #: what an interruption report needs: the input's key and size, its conversations, turns before
    where: dict[str, Any] = {}

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
        source = source_key(path, batches) if len(chunks) > 1 else None
        convs = list(dict.fromkeys(str(b["conversation_id"]) for b, _ in chunks))
        # one transaction: stored whole or not at all, told by the turn count (read before `where`
        # says anything, so that a Ctrl-C in between finds it complete)
        before = (await ctx.stats(user))["turns"] if source is None else 0
        where.update(source=source, total=total, conversations=convs, turns=before)
        skip = 0
        if source is not None and not restart:
            skip = await committed_count(ctx, user, convs, source)
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
                nxt = turn_texts(ctx, pending[k + 1][1], display) if k + 1 < len(pending) else []
                prefetch = asyncio.ensure_future(asyncio.to_thread(ctx.embedder.embed, nxt)) if nxt else None
                marked = mark_positions(todo, source, start) if source is not None else todo
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

    try:
        results, skipped, total, seconds = run(body, create=True)
    except KeyboardInterrupt:
        _report_interrupted(user, where)
        raise
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


def _report_interrupted(user: str, where: dict[str, Any]) -> None:
    """After Ctrl-C in ``add`` (every write finished or rolled back by then): say what is stored
    and how to go on."""
    err = console(stderr=True)
    if "total" not in where:
        err.print("interrupted before anything was stored", markup=False)
        return

    async def count(ctx: Any) -> int:
        if where["source"] is not None:
            return await committed_count(ctx, user, where["conversations"], where["source"])
        return int((await ctx.stats(user))["turns"]) - int(where["turns"])

    try:
        done = run(count)
    except (KeyboardInterrupt, SystemExit, typer.Exit):
        err.print("interrupted; run the same command again to continue", markup=False)
        return
    total = where["total"]
    if where["source"] is not None:
        err.print(
            f"interrupted: {done} of {total} messages are stored (batches of {ADD_CHUNK}, one transaction each); "
            "run the same command again to store the rest (it continues after them; --restart starts over)",
            markup=False, soft_wrap=True,
        )  # fmt: skip
    elif done > 0:
        err.print(f"interrupted after the {total} message(s) were stored; nothing is left to do", markup=False, soft_wrap=True)
    else:
        err.print(
            f"interrupted: nothing was stored (the {total} message(s) are one transaction); run the same command again",
            markup=False, soft_wrap=True,
        )  # fmt: skip


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
        await load_model(ctx, query, quiet=json_out)
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
            else f"no memory scores {min_score} or more"
            if min_score
            else "no memory matches"
        )
        console().print(f"no results for {query!r}: {why}", markup=False)
        return
    print_results(res)


async def load_model(ctx: Any, text: str, *, quiet: bool = False) -> None:
    """Load a local embedding model before a search and say how long that took, so the search's
    own time is not a cold start's. ``text`` is embedded on the way (the search finds it cached)."""
    if getattr(ctx.embedder, "loaded", True):  # nothing to load (hash, an API), or loaded already
        return
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):  # a model that fails to load fails the search itself, clearly
        await asyncio.to_thread(ctx.embedder.embed, [text])
    if not quiet:
        console(stderr=True).print(f"loaded the embedding model in {time.perf_counter() - t0:.1f} s", markup=False)


def print_results(res: Any) -> None:
    from rich.table import Table

    table = Table(title=f"{res.total} result(s) for {esc(repr(res.query))} ({res.took_ms:.1f} ms)", show_lines=False)
    for col in ("#", "score", "id", "tier", "type", "memory", "from"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(res.results, start=1):
        src = r.sources[0] if r.sources else None
        origin = (
            f"turn {src.turn_id} · {src.speaker or src.role} · {src.said_at:%Y-%m-%d}"
            + (f" (+{len(r.sources) - 1})" if len(r.sources) > 1 else "")
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
            user,
            tier=tier or None,
            memory_type=memory_type or None,
            limit=limit,
            cursor=cursor,
            include_inactive=include_inactive,
            agent_id=agent or None,
            run_id=run_id or None,
            metadata=_metadata_filter(metadata),
        ),  # fmt: skip
        embeds=False,
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
    mem = run(lambda ctx: ctx.get(memory_id, user), embeds=False)
    print_json(mem.model_dump(mode="json"))


@app.command()
def history(memory_id: int = typer.Argument(..., help="Memory id"), user: str = USER) -> None:
    """Every change of a memory, oldest first."""
    entries = run(lambda ctx: ctx.history(memory_id, user), embeds=False)
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
    run(lambda ctx: ctx.delete(memory_id, user), embeds=False)
    console().print(f"deleted memory {memory_id}")


@app.command()
def graph(
    entity: str = typer.Argument(..., help="Entity name (case-insensitive, whole name)"),
    user: str = USER,
    depth: int = typer.Option(2, "--depth", "-d", min=0, max=5, help="Hops (0-5)"),
    json_out: bool = typer.Option(False, "--json", help="Print as JSON"),
) -> None:
    """The knowledge-graph neighbourhood of an entity."""
    hood = run(lambda ctx: ctx.get_entity_graph(user, entity, depth), embeds=False)
    if json_out:
        print_json(hood)
        return
    print_graph(entity, hood)


def print_graph(entity: str, hood: list[GraphNeighbourInfo]) -> None:
    from deepcontext.chat.render import graph_view

    console().print(graph_view(entity, hood))


@app.command()
def users() -> None:
    """List the users in the database."""
    names = run(lambda ctx: ctx.users(), embeds=False)
    for u in names:
        print(u)
    if not names:
        console(stderr=True).print("no users in this database", markup=False)


@app.command("set-user")
def set_user(
    user: str = USER,
    name: str = typer.Option(..., "--name", help="Display name used in memories instead of 'the user'"),
) -> None:
    """Set a user's display name (the user's entity keeps one node under the new name)."""
    run(lambda ctx: ctx.set_user(user, name=name), create=True)
    console().print(f"user {user!r} is now called {name!r} in memories")


@app.command()
def stats(user: str = USER) -> None:
    """Rows of a user per table."""
    print_json(run(lambda ctx: ctx.stats(user), embeds=False))


@app.command("delete-user")
def delete_user(
    user: str = typer.Argument(..., help="The user to erase"),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation"),
) -> None:
    """Erase everything of a user from every table (irreversible)."""
    if not yes and not typer.confirm(f"Erase everything of user {user!r}?"):
        raise typer.Exit(1)
    counts = run(lambda ctx: ctx.delete_user(user), embeds=False)
    console().print(f"deleted {sum(counts.values())} rows of {user!r}", markup=False)
