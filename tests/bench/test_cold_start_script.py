"""benchmarks/bench_cold_start.py as a contributor runs it: fresh processes timed from outside, the
report written as JSON and markdown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_cold_start.py"


@pytest.mark.slow
def test_the_script_times_new_processes(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "--memories", "20", "--runs", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "bench_cold_start.json").read_text())
    timed = report["process_start_to_first_result_ms"]
    assert set(timed) == {"CLI: deepcontext search", "library: import, open, search", "interpreter alone (python -c pass)"}
    # a search from a new process costs more than the interpreter's start and than a warm search
    assert timed["library: import, open, search"] > timed["interpreter alone (python -c pass)"]
    assert timed["CLI: deepcontext search"] > report["warm_search_ms"] > 0
    assert "| CLI: deepcontext search |" in (tmp_path / "bench_cold_start.md").read_text()
    bad = subprocess.run([sys.executable, str(SCRIPT), "--runs", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "at least 1" in bad.stderr
