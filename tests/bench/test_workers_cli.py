"""`deepcontext bench workers` as a user runs it: a real `serve --workers N` process per worker
count, loaded over HTTP by the benchmark's clients (the hash embedder to keep it short)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "250"}
    return run_cli(["bench", "workers", "--users", "3", "--turns", "10", "--out", str(tmp_path / "out"), *args], env=env)


@pytest.mark.slow  # starts servers
def test_a_server_per_worker_count_is_loaded_and_measured(tmp_path: Path) -> None:
    p = bench(tmp_path, "--workers", "1,2", "--seconds", "2", "--concurrency", "4", "--db", str(tmp_path / "w.db"))
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("| sqlite")]
    assert [r.split("|")[2].strip() for r in rows] == ["1", "2"]
    result = json.loads((tmp_path / "out" / "workers-latest.json").read_text())
    assert [r["workers"] for r in result["runs"]] == [1, 2]
    for run in result["runs"]:
        assert run["errors"] == {}
        assert run["requests_per_s"] > 0
        assert run["search_ms"]["n"] > 0 and run["add_ms"]["n"] > 0
        # about 70 % searches, drawn from a seeded generator
        share = run["search_ms"]["n"] / (run["search_ms"]["n"] + run["add_ms"]["n"])
        assert 0.5 < share < 0.9
        assert run["search_ms"]["p50"] <= run["search_ms"]["p95"] <= run["search_ms"]["p99"]
        assert run["memories_seeded"] > 0


@pytest.mark.parametrize("counts", ["0", "1,x", "100"])
def test_bad_worker_counts_are_refused(tmp_path: Path, counts: str) -> None:
    p = bench(tmp_path, "--workers", counts)
    assert p.returncode != 0
    assert "--workers must be" in p.stdout + p.stderr
