"""Shared CLI plumbing: global options, opening a DeepContext, error handling, output helpers."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from deepcontext.core import DeepContext

T = TypeVar("T")


@dataclass
class State:
    db: str | None = None
    embedder: str | None = None
    debug: bool = False


state = State()


def console(stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def database_url(value: str | None) -> str | None:
    """Accept a plain file path as well as a URL."""
    if not value:
        return None
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


def settings_kwargs(db: str | None = None) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    url = database_url(db or state.db)
    if url:
        kw["database_url"] = url
    if state.embedder:
        kw["embedder"] = state.embedder
    return kw


def esc(text: object) -> str:
    """Text for a rich markup string: user text such as ``[/srv/app]`` or ``[server]`` prints as is."""
    from rich.markup import escape

    return escape(str(text))


def fail(message: str, code: int = 1) -> None:
    # one line whatever the terminal's width: an error is read, grepped and quoted whole
    console(stderr=True).print(f"[bold red]error:[/] {esc(message)}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL (None for another backend or an in-memory database)."""
    from deepcontext.store import sqlite_path

    return sqlite_path(url)


def run(body: Callable[[DeepContext], Awaitable[T]], *, db: str | None = None, create: bool = False, embeds: bool = True) -> T:
    """Open a DeepContext from the global options, run ``body``, close it; errors become one line
    on stderr and a non-zero exit code.

    A SQLite file that does not exist is created only by a command that writes (``create``), which
    says so; any other command refuses it, so a mistyped --db is not read as an empty memory.

    A command that embeds nothing (``embeds=False``) opens an existing database with a stand-in for
    the embedder it records: no model is loaded and the configured embedder is not checked, so
    listing, exporting, deleting and revoking keys work whatever the embedder settings say."""
    from deepcontext.errors import ConfigurationError, DeepContextError

    created: list[Path] = []

    async def go() -> T:
        from deepcontext.core import DeepContext

        ctx = DeepContext(**settings_kwargs(db))
        path = sqlite_file(ctx.settings.resolved_database_url)
        # a missing folder of a path given explicitly: the store says so (the default folder,
        # which the engine would create, counts as there)
        there = path is not None and (path.parent.is_dir() or path.parent == ctx.settings.data_dir.expanduser())
        if path is not None and not path.exists() and (there or not ctx.settings.database_url):
            if not create:
                raise ConfigurationError(
                    f"no database at {path}: check --db (or DEEPCONTEXT_DATABASE_URL); `deepcontext add` creates one"
                )
            created.append(path)
        if not embeds and (path is None or path.exists()):
            from deepcontext.embed.recorded import RecordedEmbedder
            from deepcontext.store import recorded_embedder

            recorded = await asyncio.to_thread(recorded_embedder, ctx.settings)
            if recorded is not None:
                ctx = DeepContext(settings=ctx.settings, embedder=RecordedEmbedder(*recorded))
        await ctx.init()
        try:
            return await body(ctx)
        finally:
            await ctx.close()
            if created and created[0].exists():
                console(stderr=True).print(f"created the database at {created[0]}", markup=False, soft_wrap=True)

    try:
        return asyncio.run(go())
    except DeepContextError as exc:
        if state.debug:
            raise
        fail(f"{exc}")
    except (OSError, json.JSONDecodeError) as exc:
        if state.debug:
            raise
        fail(f"{exc}")
    raise AssertionError("unreachable")


def read_input(path: str) -> str:
    """The text of a file, or of stdin for '-'; a missing file is a clean error."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}")
    raise AssertionError("unreachable")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def short(text: str, n: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
