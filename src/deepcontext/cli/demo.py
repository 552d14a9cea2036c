"""`deepcontext demo`: ingest a small sample conversation and show what memory makes of it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, esc, run, state


def load_sample() -> dict[str, Any]:
    return json.loads(resources.files("deepcontext.demo").joinpath("sample_conversation.json").read_text("utf-8"))


@app.command()
def demo(
    db: str = typer.Option(None, "--db", help="Database for the demo (default ~/.deepcontext/demo.db)"),
    limit: int = typer.Option(3, "--limit", "-n", min=1, max=20, help="Results per query"),
) -> None:
    """Run the demo: ingest a sample conversation (3 sessions), then search it and walk the graph.

    Fully offline: a SQLite file and the local embedding model; no key, no server. The demo user is
    reset at each run."""
    from deepcontext.cli.memory import print_graph, print_results

    sample = load_sample()
    user = sample["user_id"]
    out = console()
    target = db or state.db
    if target is None:
        from deepcontext.settings import DeepContextSettings

        target = str(DeepContextSettings().data_dir / "demo.db")

    async def body(ctx: Any) -> None:
        from rich.rule import Rule

        await ctx.delete_user(user)
        out.print(Rule(f"deepcontext demo · database {ctx.settings.resolved_database_url}"))
        out.print(f"embedder: {ctx.embedder.model_id} ({ctx.embedder.dimensions} dims), store: {ctx.store.backend}")
        for session in sample["sessions"]:
            r = await ctx.add(session["messages"], user, session["conversation_id"], timestamp=session["timestamp"])
            out.print(
                f"[bold]{esc(session['conversation_id'])}[/] ({session['timestamp'][:10]}): {len(r.turn_ids)} turns -> "
                f"{r.memories_added} memories, entities: {esc(', '.join(r.entities_found) or '-')}"
            )
            for f in r.semantic_facts + r.episodic_facts + r.procedural_facts:
                out.print(f"    fact: {f}", markup=False)
        for q in sample["queries"]:
            print_results(await ctx.search(q, user, limit=limit))
        entity = sample["graph_entity"]
        out.print(Rule(f"knowledge graph around {entity}"))
        print_graph(entity, await ctx.get_entity_graph(user, entity, depth=2))
        stats = await ctx.stats(user)
        out.print(
            f"stored: {stats['turns']} turns, {stats['memories']} memories, {stats['entities']} entities, {stats['relations']} relations"
        )

    run(body, db=target, create=True)
