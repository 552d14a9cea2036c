"""Running the example programs and the repository's commands as a user would: subprocesses in the
repository, with this checkout's ``src`` first on the path and the data directory in a temp dir."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """``run(args, env={...}, input="...")``: a subprocess in the repository root; DEEPCONTEXT_DATA_DIR
    is a fresh temp dir and no DEEPCONTEXT_* / OPENAI_* variable of the caller leaks in."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()

    def _run(
        args: Sequence[str], *, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPCONTEXT_", "OPENAI_", "OPENROUTER_"))}
        base["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
        base["DEEPCONTEXT_DATA_DIR"] = str(data_dir)
        base["PYTHONIOENCODING"] = "utf-8"
        base.update(env or {})
        return subprocess.run(
            [sys.executable, *args], cwd=ROOT, env=base, input=input, capture_output=True, text=True, timeout=timeout
        )

    return _run
