"""A short slice of `deepcontext bench reliability`, as a user runs it: every scenario on SQLite
(one SIGKILL each, a few processes, a few dozen REST requests) and the kill and race scenarios on
PostgreSQL; nothing acknowledged is lost, nothing leaks, no 5xx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # processes killed with SIGKILL, a REST server, a minute or more


def bench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:  # type: ignore[type-arg]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "250"}
    if "PYTHONPATH" in os.environ:  # the package under test, as the test process imports it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    out = tmp_path / "out"
    p = subprocess.run(
        [sys.executable, "-m", "deepcontext", "bench", "reliability", "--kills", "1", "--kill-delay", "0.5", "--writers", "2",
         "--per-writer", "4", "--requests", "40", "--time-limit", "30", "--out", str(out), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    files = sorted(out.glob("reliability-*-latest.json"))
    results = json.loads(files[0].read_text())["results"] if files else []
    return p, results


def test_every_scenario_on_sqlite(tmp_path: Path) -> None:
    p, results = bench(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r["scenario"] for r in results] == [
        "kill-add", "kill-import", "kill-consolidate", "kill-index", "processes", "race-delete", "rest", "times",
        "read-only", "read-only-key", "disk-full", "cli-embedder",
    ]  # fmt: skip
    for r in results:
        assert r["tried"] > 0
        assert (r["failed"], r["lost"], r["leaked"], r["server_errors"], r["timeouts"]) == (0, 0, 0, 0, 0), r
    assert "| kill-add | sqlite |" in p.stdout


def test_kills_and_races_on_postgres(tmp_path: Path, pg_url: str) -> None:
    args = ("--scenario", "kill-add", "--scenario", "race-delete", "--scenario", "read-only-key", "--scenario", "cli-embedder")
    p, results = bench(tmp_path, "--db", pg_url, *args)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [(r["scenario"], r["backend"]) for r in results] == [
        ("kill-add", "postgresql"), ("race-delete", "postgresql"), ("read-only-key", "postgresql"), ("cli-embedder", "postgresql"),
    ]  # fmt: skip
    assert all(r["lost"] == r["failed"] == 0 and r["tried"] > 0 for r in results), results
