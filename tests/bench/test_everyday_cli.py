"""`deepcontext bench everyday` as a user runs it: a set of one's own given with --data, each kind
and part reported, a case that cannot hold reported as failing with what failed, errors on bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        ["--embedder", "hash", "bench", "everyday", "--filler", "0", *args], env={"HOME": str(tmp_path), "COLUMNS": "250"}
    )


def _write(path: Path, *cases: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


CASES = (
    {"id": "own", "kind": 2, "part": "dev", "statements": ["I live in Cork.", "My brother bought a flat in Dublin."],
     "question": "Where do I live?", "first": "Cork", "not_first": "Dublin"},
    {"id": "split", "kind": 1, "part": "held-out",
     "statements": ["I live in Leeds and teach maths at Parkside.", "We moved to York."],
     "question": "Where do I teach?", "must_contain": ["Parkside"], "must_not_contain": ["Leeds and"]},
    {"id": "impossible", "kind": 5, "part": "held-out", "statements": ["I swim on Mondays."],
     "question": "When do I swim?", "first": "zebra", "must_contain": ["giraffe"]},
)  # fmt: skip


def test_a_set_of_ones_own(tmp_path: Path) -> None:
    data = _write(tmp_path / "mine.jsonl", *CASES)
    p = bench(tmp_path, "--data", str(data), "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["cases"] == 3 and report["passed"] == 2
    assert report["by_kind"]["2"] == {"dev": {"passed": 1, "cases": 1}}
    assert report["by_kind"]["1"] == {"held-out": {"passed": 1, "cases": 1}}
    assert report["failures"] == {"impossible": ["first result lacks 'zebra'", "no memory holds 'giraffe'"]}
    # one part only; the table names each kind
    p = bench(tmp_path, "--data", str(data), "--part", "dev")
    assert p.returncode == 0 and "| 2 | another person's change is theirs | 100 % (1/1) | - |" in p.stdout
    assert "1 of 1 cases pass" in p.stdout


def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.jsonl", {"id": "x", "kind": 9, "part": "dev", "statements": ["hi"], "question": "q"})
    p = bench(tmp_path, "--data", str(bad))
    assert p.returncode != 0 and "kind 1-7" in p.stderr
    p = bench(tmp_path, "--data", str(bad), "--part", "everything")
    assert p.returncode != 0 and "--part must be dev, held-out, blind or all" in p.stderr
    p = bench(tmp_path, "--data", str(tmp_path / "missing.jsonl"))
    assert p.returncode != 0 and "not found" in p.stderr


def test_a_blind_part_runs_on_its_own(tmp_path: Path) -> None:
    blind = {"id": "b", "kind": 2, "part": "blind", "statements": ["I live in Cork.", "My sister moved to Galway."],
             "question": "Where do I live?", "first": "Cork", "not_first": "Galway"}  # fmt: skip
    data = _write(tmp_path / "blind.jsonl", CASES[0], blind)
    p = bench(tmp_path, "--data", str(data), "--part", "blind", "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["cases"] == 1 and report["passed"] == 1
    assert report["by_kind"]["2"] == {"blind": {"passed": 1, "cases": 1}}
