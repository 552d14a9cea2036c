"""`deepcontext bench speed` as a user runs it (in process, real databases, the hash embedder to
keep it short): one database, and two side by side (SQLite and PostgreSQL) in one table, one JSON and
one plot."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # a wide console: rich wraps at the terminal's width (80 columns without one)
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "250"}
    return run_cli(["bench", "speed", "--sizes", "40", "--queries", "10", "--out", str(tmp_path / "out"), *args], env=env)


def rows(stdout: str) -> list[list[str]]:
    """The markdown table's body rows, as cells."""
    lines = []
    for ln in stdout.splitlines():  # the first table: the stages
        if ln.startswith("|"):
            lines.append(ln)
        elif lines:
            break
    body = [ln for ln in lines if not ln.startswith("|---") and not ln.startswith("| backend")]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in body]


@pytest.mark.slow  # two speed runs end to end
def test_two_databases_side_by_side(tmp_path: Path, pg_url: str) -> None:
    p = bench(tmp_path, "--db", f"sqlite:///{tmp_path / 'a.db'}", "--db", pg_url)
    assert p.returncode == 0, p.stderr
    table = rows(p.stdout)
    assert [r[0] for r in table] == ["sqlite", "postgresql"]
    for r in table:
        assert int(r[1]) >= 40  # memories reached
        assert float(r[3]) > 0 and float(r[4]) >= float(r[3])  # p95 >= p50
    out = tmp_path / "out"
    runs = json.loads((out / "speed-compare-latest.json").read_text())["runs"]
    assert list(runs) == ["sqlite", "postgresql"]
    assert runs["postgresql"]["backend"] == "postgresql" and runs["postgresql"]["stages"][0]["memories"] >= 40
    # each database's own results too, as with one --db
    assert json.loads((out / "speed-sqlite-latest.json").read_text())["stages"][0]["memories"] >= 40
    assert json.loads((out / "speed-postgresql-latest.json").read_text())["backend"] == "postgresql"
    assert (out / "speed-compare-latency.png").stat().st_size > 0


def test_bad_sizes_are_refused_with_a_clear_message(tmp_path: Path) -> None:
    p = bench(tmp_path, "--db", f"sqlite:///{tmp_path / 'a.db'}", "--sizes", "0")
    assert p.returncode != 0
    assert "--sizes must be positive integers" in p.stdout + p.stderr
