"""The ``deepcontext bench`` group and what its commands share: progress bars, ``--set`` and ``--peer``.

The commands live beside it (``bench_locomo``, ``bench_speed``, ``bench_cases``, ``bench_reliability``,
``bench_ui``); each prints a markdown table and saves a JSON file under benchmarks/results/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, fail, state
from deepcontext.settings import DeepContextSettings

T = TypeVar("T")

bench = typer.Typer(
    help="Benchmarks: retrieval quality on LoCoMo, knowledge updates, implicit needs, speed at scale, reliability, "
    "extraction quality.",
    no_args_is_help=True,
)
app.add_typer(bench, name="bench")


def progress_callback(progress: Any, task: Any) -> Any:
    """A benchmark's progress callback (``kind``: total, advance, or a completed count) driving a rich task."""

    def cb(kind: str, n: int) -> None:
        if kind == "total":
            progress.update(task, total=n)
        elif kind == "advance":
            progress.advance(task, n)
        else:
            progress.update(task, completed=n)

    return cb


PEER = typer.Option(
    None,
    "--peer",
    help="Also run another memory layer on the same data in the same process: mem0 (its open-source Memory, infer=False, "
    "our embedder, its local vector store; needs `pip install mem0ai`, pinned in the bench extra; network access is refused)",
)


def check_peer(peer: str | None) -> None:
    """Fail with one line unless ``--peer`` names a known, installed peer."""
    if peer is None:
        return
    if peer != "mem0":
        fail(f"--peer: unknown peer {peer!r} (known: mem0)")
    from deepcontext_bench.mem0_peer import NOT_INSTALLED, mem0_version

    if mem0_version() is None:
        fail(NOT_INSTALLED)


SETTING = typer.Option(None, "--set", help="A setting for the run, KEY=VALUE (repeatable), e.g. --set auto_consolidate=false")


def run_settings(pairs: list[str] | None = None) -> dict[str, Any]:
    """The settings of a run: the global --embedder, then each ``--set KEY=VALUE``."""
    out: dict[str, Any] = {"embedder": state.embedder} if state.embedder else {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--set takes KEY=VALUE, got {pair!r}")
        if (problem := DeepContextSettings.unknown([key.strip()])) is not None:
            fail(f"--set: {problem}")
        out[key.strip()] = value.strip()
    return out


def with_progress(label: str, run: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
    """``run(progress callback)`` under a transient progress bar on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as progress:
        return asyncio.run(run(progress_callback(progress, progress.add_task(label, total=None))))
