"""`deepcontext bench extraction` as a user runs it (in process): the shipped labelled set, and a
set of one's own given with --data (scores that follow from its facts), errors on a bad file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["bench", "extraction", *args], env={"HOME": str(tmp_path), "COLUMNS": "250"})


def test_the_shipped_set(tmp_path: Path) -> None:
    p = bench(tmp_path, "--json", "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["turns"] >= 150 and report["facts"] >= 150
    assert 0 < report["precision"] <= 1 and 0 < report["recall"] <= 1
    assert set(report["by_topic"]) >= {"everyday", "work", "health", "travel", "family", "plans", "opinions", "procedures"}
    assert list((tmp_path / "out").glob("extraction-*.json"))
    p = bench(tmp_path, "--show", "2")
    assert p.returncode == 0 and "| precision | recall |" in p.stdout


def test_a_set_of_ones_own(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    conv = {
        "id": "x",
        "topic": "work",
        "said_at": "2025-03-10T09:00:00+00:00",
        "user_name": "Sam",
        "turns": [{"role": "user", "content": "Yesterday I moved to Berlin. Our office is in Mitte."}],
        "facts": [{"turn": 0, "keys": ["Sam", "Berlin", "2025-03-09"]}, {"turn": 0, "keys": ["Sam", "Paris"]}],
    }
    data.write_text(json.dumps(conv) + "\n", encoding="utf-8")
    report = json.loads(bench(tmp_path, "--data", str(data), "--json").stdout)
    assert report["facts"] == 2 and report["recall"] == 0.5  # Berlin with its date found, Paris never said
    assert report["unresolved_dates"] == 0 and report["grammar_defects"] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    p = bench(tmp_path, "--data", str(bad))
    assert p.returncode != 0 and "line 1" in p.stderr
    p = bench(tmp_path, "--data", str(tmp_path / "missing.jsonl"))
    assert p.returncode != 0 and "not found" in p.stderr
