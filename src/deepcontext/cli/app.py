"""The typer application object and the global options (kept apart from the command modules so
they can register on it whether the CLI runs as ``deepcontext`` or ``python -m deepcontext``)."""

from __future__ import annotations

import typer

from deepcontext.cli.common import state

app = typer.Typer(
    name="deepcontext",
    help="Memory for AI agents: store conversations, search what matters, walk the knowledge graph. "
    "Offline by default (a SQLite file under ~/.deepcontext and a local embedding model).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def main(
    db: str = typer.Option(
        None,
        "--db",
        envvar="DEEPCONTEXT_DATABASE_URL",
        help="Database: a SQLite file path, sqlite:///path.db or postgresql://... (default ~/.deepcontext/memory.db)",
    ),
    embedder: str = typer.Option(None, "--embedder", envvar="DEEPCONTEXT_EMBEDDER", help="local (default), openai or hash"),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and SQL on errors"),
) -> None:
    state.db = db
    state.embedder = embedder
    state.debug = debug
