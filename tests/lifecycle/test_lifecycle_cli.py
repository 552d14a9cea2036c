"""``deepcontext lifecycle`` as a user runs it: the command in process, a real database file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from deepcontext.cli.lifecycle import parse_interval
from tests.support.cli import run_cli


def cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "120"}
    return run_cli(["--db", str(tmp_path / "cli.db"), *args], stdin=stdin, env=env)


def _json_docs(out: str) -> list[dict]:
    docs, dec, i = [], json.JSONDecoder(), 0
    while i < len(out):
        if out[i].isspace():
            i += 1
            continue
        doc, i = dec.raw_decode(out, i)
        docs.append(doc)
    return docs


def test_parse_interval() -> None:
    assert parse_interval("90") == 90 and parse_interval("30s") == 30 and parse_interval("15m") == 900
    assert parse_interval("1h") == 3600 and parse_interval("1d") == 86400 and parse_interval("1h30m") == 5400
    assert parse_interval("0.5s") == 0.5
    for bad in ("", "h", "1w", "-1h", "0", "1h 30x"):
        with pytest.raises(ValueError):
            parse_interval(bad)


def test_lifecycle_command(tmp_path: Path) -> None:
    for user, msg in (("ana", "I live in Lisbon and I work at Acme."), ("bob", "I have a cat named Miso.")):
        p = cli(tmp_path, "add", "-", "--user", user, stdin=json.dumps([{"role": "user", "content": msg}]))
        assert p.returncode == 0, p.stderr
    p = cli(tmp_path, "lifecycle", "--user", "ana")
    assert p.returncode == 0, p.stderr
    assert "lifecycle run 1" in p.stdout and "ana" in p.stdout and "decayed" in p.stdout and "purged" in p.stdout
    p = cli(tmp_path, "lifecycle", "--all", "--json", "--consolidate")
    assert p.returncode == 0, p.stderr
    [doc] = _json_docs(p.stdout)
    assert [r["user_id"] for r in doc["users"]] == ["ana", "bob"]
    for r in doc["users"]:
        assert r["consolidation_ran"] is True
        assert {"memories_decayed", "memories_consolidated", "memories_cleaned", "purged", "expired", "took_ms"} <= set(r)
    # on a schedule: two runs a short interval apart
    p = cli(tmp_path, "lifecycle", "--user", "bob", "--every", "0.2s", "--runs", "2", "--json")
    assert p.returncode == 0, p.stderr
    assert [d["run"] for d in _json_docs(p.stdout)] == [1, 2]
    p = cli(tmp_path, "lifecycle", "--policy", "--json")
    assert p.returncode == 0, p.stderr
    rows = {(r["memory_type"], r["tier"]): r["half_life_days"] for r in json.loads(p.stdout)}
    assert rows[("episodic", "short_term")] == 7.0 and rows[("semantic", "long_term")] == 280.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--user USER or --all"),
        (("--user", "ana", "--all"), "--user USER or --all"),
        (("--user", "ana", "--every", "soon"), "not an interval"),
        (("--user", "ana", "--runs", "2"), "--runs needs --every"),
    ],
)
def test_lifecycle_command_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    p = cli(tmp_path, "lifecycle", *args)
    assert p.returncode != 0 and message in p.stderr
