"""``deepcontext activity --user U [--id N] [filters] [--json]``: what a user's agents searched for
and were given (the activity log)."""

from __future__ import annotations

from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, esc, print_json, run, short


@app.command()
def activity(
    user: str = typer.Option(..., "--user", "-u", help="Whose calls"),
    call_id: int = typer.Option(None, "--id", min=1, help="Show this call in full"),
    kind: str = typer.Option(None, "--kind", help="search or context"),
    via: str = typer.Option(None, "--via", help="python, rest, mcp or cli"),
    agent: str = typer.Option(None, "--agent", help="Only calls that named this agent"),
    run_id: str = typer.Option(None, "--run", help="Only calls that named this run"),
    conversation: str = typer.Option(None, "--conversation", "-c", help="Only calls that named this conversation"),
    after: str = typer.Option(None, "--after", help="Made at or after (ISO time)"),
    before: str = typer.Option(None, "--before", help="Made before (ISO time)"),
    limit: int = typer.Option(20, "--limit", "-n", min=1, max=200, help="Calls (1-200)"),
    json_out: bool = typer.Option(False, "--json", help="Print as JSON"),
) -> None:
    """Recorded search and context calls of a user, newest first, or one call in full (--id): the
    query, its parameters, each result with its score and the memory's text at the time. Calls
    through the REST API and MCP are recorded by default (setting activity_log)."""
    if call_id is not None:
        call = run(lambda ctx: ctx.activity_call(user, call_id), embeds=False)
        if json_out:
            print_json(call.model_dump(mode="json"))
        else:
            _print_call(call)
        return
    page = run(
        lambda ctx: ctx.activity(
            user, kind=kind, via=via, agent_id=agent, run_id=run_id, conversation_id=conversation, after=after,
            before=before, limit=limit,
        ),
        embeds=False,
    )  # fmt: skip
    if json_out:
        print_json(page.model_dump(mode="json"))
        return
    _print_page(user, page)


def _print_page(user: str, page: Any) -> None:
    from rich.table import Table

    if not page.calls:
        console().print(f"no recorded calls of {esc(user)} (see the activity_log setting)")
        return
    table = Table(title=f"calls of {esc(user)}, newest first")
    for col in ("id", "when", "kind", "via", "agent", "query", "results", "ms"):
        table.add_column(col, overflow="fold")
    for c in page.calls:
        n = len(c.results) if c.kind == "search" else len(c.included)
        table.add_row(
            str(c.id), f"{c.created_at:%Y-%m-%d %H:%M:%S}", c.kind, c.via, esc(c.agent_id or ""), esc(short(c.query, 50)),
            str(n), f"{c.took_ms:.1f}" if c.took_ms is not None else "",
        )  # fmt: skip
    console().print(table)


def _print_call(c: Any) -> None:
    out = console()
    out.print(f"call {c.id}: {c.kind} via {c.via} at {c.created_at:%Y-%m-%d %H:%M:%S}", markup=False)
    out.print(f"query: {c.query}", markup=False)
    params = {k: v for k, v in c.params.items() if v not in (None, [], {})}
    out.print(f"parameters: {params}", markup=False)
    for h in c.results:
        legs = ", ".join(f"{k} #{v}" for k, v in h.legs.items())
        out.print(f"  {h.rank:>2}. [{h.memory_id}] {h.score:.3f} ({legs}) {short(h.text, 80)}", markup=False)
    for i in c.included:
        out.print(f"  + {i.id} [{i.part}, {i.tokens} tok]: {short(i.text, 80)}", markup=False)
    for i in c.left_out:
        out.print(f"  - {i.id} [{i.part}, {i.cause}]: {i.why} | {short(i.text, 60)}", markup=False)
