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
    console(stderr=True).print(f"[bold red]error:[/] {esc(message)}", markup=True, highlight=False)
    raise typer.Exit(code)


def run(body: Callable[[DeepContext], Awaitable[T]], *, db: str | None = None) -> T:
    """Open a DeepContext from the global options, run ``body``, close it; errors become one line
    on stderr and a non-zero exit code."""
    from deepcontext.errors import DeepContextError

    async def go() -> T:
        from deepcontext.core import DeepContext

        ctx = DeepContext(**settings_kwargs(db))
        await ctx.init()
        try:
            return await body(ctx)
        finally:
            await ctx.close()

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
