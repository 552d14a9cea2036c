"""``deepcontext context "query" --user U [--conversation C] [--budget N] [--json]``: the budgeted
context for the next prompt, and what went into it."""

from __future__ import annotations

from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, print_json, run, short


@app.command()
def context(
    query: str = typer.Argument(..., help="The message to answer, or a topic"),
    user: str = typer.Option(..., "--user", "-u", help="The user whose memory to use"),
    conversation: str = typer.Option(None, "--conversation", "-c", help="Also show this conversation's path"),
    budget: int = typer.Option(2000, "--budget", "-b", min=1, help="Most tokens the context may take"),
    json_out: bool = typer.Option(False, "--json", help="Print the text and the whole breakdown as JSON"),
    text_only: bool = typer.Option(False, "--text", help="Print only the context text"),
) -> None:
    """The context for the next prompt: pinned memories, relevant memories with their dates,
    working-memory sections selected by intent and the conversation's path, within a token budget;
    then what was included, the tokens per part and what was left out."""
    res = run(lambda ctx: ctx.context(query, user, conversation, budget_tokens=budget))
    if json_out:
        print_json(res.model_dump(mode="json"))
        return
    if text_only:
        typer.echo(res.text)
        return
    _print(res)


def _print(res: Any) -> None:
    from rich.table import Table

    out = console()
    out.print(res.text or "(nothing to include)", markup=False)
    out.print()
    table = Table(title=f"{res.total_tokens} of {res.budget_tokens} tokens ({res.token_counter})", show_lines=False)
    for col in ("part", "tokens", "share", "items", "left out"):
        table.add_column(col, overflow="fold")
    for p in res.parts:
        left = ", ".join(f"{n} {cause}" for cause, n in p.left_out.items()) or "-"
        table.add_row(p.name, str(p.tokens), f"{p.share:.0%} ({p.allotted_tokens})", str(len(p.items)), left)
    out.print(table)
    for item in res.items:
        flag = " (clipped)" if item.clipped else ""
        out.print(f"  + {item.id} [{item.part}, {item.tokens} tok]{flag}: {item.why}", markup=False)
    for lo in res.left_out:
        out.print(f"  - {lo.id} [{lo.part}, {lo.cause}]: {lo.why} | {short(lo.preview, 60)}", markup=False)
