"""The ``deepcontext`` command. Commands live in small modules and register themselves on ``app``;
heavy imports happen inside the commands, so ``deepcontext --help`` stays fast."""

from __future__ import annotations

import sys

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
    embedder: str = typer.Option(
        None, "--embedder", envvar="DEEPCONTEXT_EMBEDDER", help="local (default), openai or hash"
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and SQL on errors"),
) -> None:
    state.db = db
    state.embedder = embedder
    state.debug = debug


#: modules whose import registers commands on ``app`` (one line per module)
COMMAND_MODULES = [
    "deepcontext.cli.memory",
    "deepcontext.cli.demo",
]


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(name)


_register()


def run() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    run()
