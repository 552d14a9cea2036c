"""The ``deepcontext`` command. Commands live in small modules and register themselves on ``app``;
heavy imports happen inside the commands, so ``deepcontext --help`` stays fast."""

from __future__ import annotations

import sys

from deepcontext.cli.app import app

#: modules whose import registers commands on ``app`` (one line per module)
COMMAND_MODULES = [
    "deepcontext.cli.memory",
    "deepcontext.cli.transfer",
    "deepcontext.cli.backup",
    "deepcontext.cli.demo",
    "deepcontext.cli.lifecycle",
    "deepcontext.cli.bench_locomo",
    "deepcontext.cli.bench_speed",
    "deepcontext.cli.bench_cases",
    "deepcontext.cli.bench_reliability",
    "deepcontext.cli.bench_ui",
    "deepcontext.cli.bench_scale",
    "deepcontext.cli.bench_workers",
    "deepcontext.cli.serve",
    "deepcontext.cli.ui",
    "deepcontext.cli.keys",
    "deepcontext.cli.mcp",
    "deepcontext.cli.dialogue",
    "deepcontext.cli.context",
    "deepcontext.cli.activity",
    "deepcontext.cli.chat",
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
