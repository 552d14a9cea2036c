"""ruff's lint rules (pyproject.toml) and its formatting hold for the whole repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the dev extra)")
    return found


@pytest.mark.parametrize("args", [["check", "--no-cache"], ["format", "--check", "--no-cache"]], ids=["lint", "format"])
def test_ruff(args: list[str]) -> None:
    proc = subprocess.run([_ruff(), *args, "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
