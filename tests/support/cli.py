"""Run the ``deepcontext`` command in the test process (typer's CliRunner) instead of a new Python
process: same arguments, stdin, environment and exit code, a second or two less per call.

Tests of process behaviour (signals, several processes on one file, the console-script entry point,
a terminal, a server) keep starting a real process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

from typer.testing import CliRunner

from deepcontext.cli.main import app

#: variables the command reads that a test's environment must not pass on unless it names them:
#: settings (DEEPCONTEXT_*, provider keys) and what changes rich's output (width, colour)
_CLEARED_PREFIXES = ("DEEPCONTEXT_",)
_CLEARED = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "COLUMNS", "LINES", "TERM", "FORCE_COLOR", "NO_COLOR",
            "TTY_COMPATIBLE", "TTY_INTERACTIVE")  # fmt: skip


def run_cli(
    args: Sequence[str],
    *,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``deepcontext *args`` in process; the result reads like ``subprocess.run``'s.

    ``env`` is added to the environment for the call only, after the variables the command reads
    are cleared (as a fresh process given only ``env`` would see them). An exception the command
    lets out becomes a traceback on stderr and exit code 1, as in a process. With ``timeout`` the
    command runs in a thread and a call still running after it fails the test (a server that
    should have refused to start would otherwise hold the test run).
    """
    overlay: dict[str, str | None] = {k: None for k in os.environ if k.startswith(_CLEARED_PREFIXES) or k in _CLEARED}
    overlay["COLUMNS"] = "80"  # rich would otherwise measure a terminal on the test run's stdin
    overlay.update(env or {})
    box: list[subprocess.CompletedProcess[str]] = []

    def invoke() -> None:
        old_cwd, old_environ = os.getcwd(), dict(os.environ)
        if cwd is not None:
            os.chdir(cwd)
        try:
            result = CliRunner().invoke(app, list(args), input=stdin, env=overlay, catch_exceptions=True)
        finally:
            os.chdir(old_cwd)
            # a command may set variables for its own workers (serve does): none outlives the call
            for name in set(os.environ) - set(old_environ):
                del os.environ[name]
            os.environ.update(old_environ)
        stderr = result.stderr
        code = result.exit_code
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            stderr += "".join(traceback.format_exception(result.exception))
            code = 1
        box.append(subprocess.CompletedProcess(["deepcontext", *args], code, result.stdout, stderr))

    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if timeout is None and not in_loop:
        invoke()
        return box[0]
    # from an async test the command's asyncio.run needs a thread without a loop
    worker = threading.Thread(target=invoke, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise AssertionError(f"deepcontext {' '.join(args)} still running after {timeout} s")
    return box[0]
