"""`deepcontext bench scale` and `bench plot` as a user runs them (in process, real databases, the
hash embedder to keep it short): stages grow one user through the import path, `--reuse` tops up
without importing again, many users on PostgreSQL, and the plot from the results JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.bench.test_speed_cli import rows
from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "250"}
    return run_cli(["bench", *args], env=env)


def scale(tmp_path: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return bench(tmp_path, "scale", "--db", db, "--pool", "120", "--queries", "10", "--adds", "3", "--batch", "25",
                 "--out", str(tmp_path / "out"), *args)  # fmt: skip


@pytest.mark.slow  # four scale runs and a plot, end to end
def test_one_user_grows_resumes_and_plots(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    p = scale(tmp_path, db, "--sizes", "40,90")
    assert p.returncode == 0, p.stderr
    table = rows(p.stdout)[1:]  # after the header row
    assert [r[0] for r in table] == ["40", "90"]
    for r in table:
        assert float(r[3]) > 0 and float(r[4]) >= float(r[3])  # search p50 <= p95
        assert float(r[6]) > 0 and float(r[7]) >= float(r[6])  # add p50 <= p95
        assert float(r[9]) > 0 and float(r[13]) > 0  # size on disk, the cold process's RSS
    result = json.loads((tmp_path / "out" / "scale-sqlite-one-latest.json").read_text())
    first, second = result["stages"]
    assert (first["imported"], second["imported"]) == (40, 90 - first["memories_total"])
    assert second["cold_start"]["first_search_s"] >= second["cold_start"]["open_s"] > 0
    # what the database holds is kept: the stage it reaches imports nothing, the next one the rest
    again = scale(tmp_path, db, "--sizes", "90,120", "--reuse")
    assert again.returncode == 0, again.stderr
    stages = json.loads((tmp_path / "out" / "scale-sqlite-one-latest.json").read_text())["stages"]
    assert [s["imported"] for s in stages] == [0, 120 - stages[0]["memories_total"]]
    assert stages[1]["memories_total"] >= 120
    # built at a low priority and measured by another run
    built = scale(tmp_path, db, "--sizes", "150", "--reuse", "--build-only")
    assert built.returncode == 0, built.stderr
    (stage,) = json.loads((tmp_path / "out" / "scale-sqlite-one-latest.json").read_text())["stages"]
    assert stage["memories_total"] == 150 and stage["imported"] > 0 and "search_ms" not in stage
    measured = scale(tmp_path, db, "--measure-only")
    assert measured.returncode == 0, measured.stderr
    (stage,) = json.loads((tmp_path / "out" / "scale-sqlite-one-latest.json").read_text())["stages"]
    assert stage["imported"] == 0 and stage["memories_total"] >= 150 and stage["search_ms"]["p95"] > 0
    png = tmp_path / "plot.png"
    p = bench(tmp_path, "plot", str(tmp_path / "out" / "scale-sqlite-one-latest.json"), "--output", str(png))
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # a scale run end to end
def test_many_users_on_postgres(tmp_path: Path, pg_url: str) -> None:
    p = scale(tmp_path, pg_url, "--users", "4", "--sizes", "15")
    assert p.returncode == 0, p.stderr
    result = json.loads((tmp_path / "out" / "scale-postgresql-many-latest.json").read_text())
    (stage,) = result["stages"]
    assert (result["shape"], stage["users"], stage["imported"]) == ("4 users", 4, 60)
    assert stage["memories_total"] >= 60 and stage["db_size_mb"] > 0
    listed = stage["users_list_ms"]
    assert 0 < listed["first_100"] and 0 < listed["middle_100"] and 0 < listed["all"]
    assert "users(): ms to list" in p.stdout


def test_bad_input_is_refused(tmp_path: Path) -> None:
    p = scale(tmp_path, f"sqlite:///{tmp_path / 's.db'}", "--sizes", "0")
    assert p.returncode != 0 and "--sizes must be positive integers" in p.stdout + p.stderr
    p = bench(tmp_path, "plot", str(tmp_path / "missing.json"))
    assert p.returncode != 0 and "missing.json" in p.stdout + p.stderr


@pytest.mark.slow  # a scale run and three cold processes
def test_a_restart_loads_the_saved_graph(tmp_path: Path) -> None:
    """With a graph (a low vector_index_min_rows), a stage times a new process's first search on the
    graph twice: loading the saved graph, and building it again without saved graphs."""
    p = scale(tmp_path, f"sqlite:///{tmp_path / 's.db'}", "--sizes", "150", "--set", "vector_index_min_rows=100")
    assert p.returncode == 0, p.stderr
    (stage,) = json.loads((tmp_path / "out" / "scale-sqlite-one-latest.json").read_text())["stages"]
    assert stage["vector_index"] == "hnsw"
    saved, rebuilt = stage["restart"]["saved"], stage["restart"]["rebuilt"]
    assert (saved["graph_source"], rebuilt["graph_source"]) == ("file", "build")
    assert saved["graph_s"] >= saved["first_search_s"] > 0 and rebuilt["graph_s"] > 0
    assert "| 150 |" in p.stdout.split("restart (SQLite)")[1]
