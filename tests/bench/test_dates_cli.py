"""`deepcontext bench dates` as a user runs it: the shipped set, a set of one's own (a parser right
exactly where the sentence's date falls inside the period meant), errors on a bad file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_cli


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["bench", "dates", *args], env={"HOME": str(tmp_path), "COLUMNS": "250"})


def test_the_shipped_set(tmp_path: Path) -> None:
    p = bench(tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    rules, new = report["summary"]["timeparse"]["rules"], report["summary"]["timeparse"]["new"]
    assert rules["cases"] >= 50 and new["cases"] >= 30
    assert rules["right"] == rules["cases"]  # the parser's own unit-test sentences
    assert 0 < new["share"] <= 1 and new["us_per_sentence"] > 0
    p = bench(tmp_path)
    assert p.returncode == 0 and "| timeparse | new |" in p.stdout


def test_a_set_of_ones_own(tmp_path: Path) -> None:
    said = "2024-02-16T15:00:00+00:00"  # a Friday
    rows = [
        {"part": "mine", "text": "I moved to Oslo yesterday.", "said_at": said, "tense": "past", "expect": "2024-02-15", "granularity": "day"},
        {"part": "mine", "text": "Last month I started rowing.", "said_at": said, "tense": "past", "expect": "2024-01-20", "granularity": "month"},
        {"part": "mine", "text": "Last week I saw Ana.", "said_at": said, "tense": "past", "expect": "2024-02-07", "granularity": "week"},
        {"part": "mine", "text": "I moved to Oslo yesterday.", "said_at": said, "tense": "past", "expect": "2024-02-10", "granularity": "day"},
        {"part": "mine", "text": "I like rowing.", "said_at": said, "tense": "present", "expect": "2024-02-16", "granularity": "day"},
    ]  # fmt: skip
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = json.loads(bench(tmp_path, "--data", str(data), "--json").stdout)
    mine = [r for r in report["cases"] if r["parser"] == "timeparse"]
    assert [r["ok"] for r in mine] == [True, True, True, False, False]
    assert [r["got"] for r in mine][-1] is None
    s = report["summary"]["timeparse"]["mine"]
    assert (s["right"], s["wrong_date"], s["cases"]) == (3, 1, 5)


def test_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no said_at"}\n', encoding="utf-8")
    p = bench(tmp_path, "--data", str(bad))
    assert p.returncode != 0 and "cannot read" in (p.stdout + p.stderr)
    p = bench(tmp_path, "--data", str(tmp_path / "missing.jsonl"))
    assert p.returncode != 0 and "not found" in (p.stdout + p.stderr)
