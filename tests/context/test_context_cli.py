"""`deepcontext context` as a user runs it: the command in process, a real database file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import run_cli


def cli(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "200"}
    return run_cli(["--db", str(tmp_path / "cli.db"), *args], stdin=stdin, env=env)


def test_context_command(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "name": "Ana", "content": "I fly to Lisbon on June 10.", "timestamp": "2025-05-01T10:00:00Z"},
        {"role": "assistant", "content": "Noted the Lisbon flight."},
    ]
    assert cli(tmp_path, "add", "-", "--user", "ana", "-c", "trip", stdin=json.dumps(msgs)).returncode == 0
    assert cli(tmp_path, "add", "-", "--user", "ana", "-c", "music",
               stdin=json.dumps([{"role": "user", "content": "I play the cello."}])).returncode == 0  # fmt: skip

    p = cli(tmp_path, "context", "When do I fly to Lisbon?", "--user", "ana", "--conversation", "trip", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["budget_tokens"] == 2000 and data["total_tokens"] <= 2000
    assert "[said 2025-05-01, event 2025-06-10] Ana flies to Lisbon on June 10." in data["text"]
    assert "## Conversation so far" in data["text"] and "cello" not in data["text"]
    assert [p["name"] for p in data["parts"]] == ["pinned", "memories", "tiers", "conversation"]
    assert any(lo["cause"] == "relevance" for lo in data["left_out"])

    p = cli(tmp_path, "context", "When do I fly to Lisbon?", "--user", "ana", "-c", "trip", "--budget", "30")
    assert p.returncode == 0, p.stderr
    assert "of 30 tokens" in p.stdout and "conversation" in p.stdout and "budget" in p.stdout

    p = cli(tmp_path, "context", "Lisbon", "--user", "ana", "--text")
    assert p.returncode == 0 and p.stdout.startswith("## Relevant memories")

    p = cli(tmp_path, "context", "   ", "--user", "ana")
    assert p.returncode != 0 and "query must not be empty" in p.stderr
    p = cli(tmp_path, "context", "Lisbon", "--user", "ana", "--budget", "0")
    assert p.returncode != 0
