"""``deepcontext dialogue show | export | compress`` as a user runs them: in process, a real file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from deepcontext import DeepContext
from tests.support.cli import run_cli


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "200"}
    return run_cli(["--db", str(tmp_path / "cli.db"), *args], env=env, cwd=tmp_path)


async def _conversation(tmp_path: Path) -> dict[str, int]:
    async with DeepContext(database_url=f"sqlite:///{tmp_path / 'cli.db'}", embedder="hash") as ctx:
        s = await ctx.dialogue("ana", "trip")
        a = await s.record("Plan three days in Lisbon", "Day 1: Alfama. Day 2: Belém.")
        b = await s.record("What about food?", "Try pastéis de nata.")
        c = await s.record("Also: I travel with my dog Rex.", "Dog-friendly places then.", parent_ids=[a])
        d = await s.record("Merge both threads", "A dog-friendly food plan.", parent_ids=[b, c])
        tail = [await s.record(f"Question {i} about trams", f"Tram 28, answer {i}") for i in range(3)]
    return {"a": a, "b": b, "c": c, "d": d, "tip": tail[-1]}


async def test_show_export_compress(tmp_path: Path) -> None:
    ids = await _conversation(tmp_path)
    p = cli(tmp_path, "dialogue", "show", "--user", "ana", "--conversation", "trip")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Plan three days in Lisbon" in out and f"branch from [{ids['a']}]" in out
    assert f"merges [{ids['b']}], [{ids['c']}]" in out and "← tip" in out and "archived" not in out

    p = cli(tmp_path, "dialogue", "compress", "-u", "ana", "-c", "trip", "--keep-recent", "2")
    assert p.returncode == 0, p.stderr
    assert "summary node [" in p.stdout and "extractive" in p.stdout

    p = cli(tmp_path, "dialogue", "show", "-u", "ana", "-c", "trip")
    assert p.returncode == 0 and "archived, in summary" in p.stdout and "summary of" in p.stdout
    p = cli(tmp_path, "dialogue", "show", "-u", "ana", "-c", "trip", "--no-archived")
    assert p.returncode == 0 and "archived hidden" in p.stdout and "user: Plan three days" not in p.stdout
    p = cli(tmp_path, "dialogue", "show", "-u", "ana", "-c", "trip", "--node", str(ids["d"]))
    assert p.returncode == 0 and p.stdout.startswith(f"chain to [{ids['d']}]")

    p = cli(tmp_path, "dialogue", "export", "-u", "ana", "-c", "trip", "--format", "json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    by_id = {n["id"]: n for n in data["nodes"]}
    assert by_id[ids["d"]]["parents"] == [ids["b"], ids["c"]] and by_id[ids["a"]]["archived"]
    assert any(n["is_summary"] for n in data["nodes"]) and data["tip"] == ids["tip"]

    p = cli(tmp_path, "dialogue", "export", "-u", "ana", "-c", "trip", "-f", "dot")
    assert p.returncode == 0 and p.stdout.startswith('digraph "conversation" {') and f"n{ids['b']} -> n{ids['d']};" in p.stdout
    target = tmp_path / "trip.mmd"
    p = cli(tmp_path, "dialogue", "export", "-u", "ana", "-c", "trip", "-f", "mermaid", "-o", str(target))
    assert p.returncode == 0 and "wrote" in p.stderr
    assert target.read_text().startswith("flowchart TD") and f"n{ids['c']} --> n{ids['d']}" in target.read_text()


async def test_errors_are_one_line(tmp_path: Path) -> None:
    await _conversation(tmp_path)
    for args in (
        ["dialogue", "show", "-u", "ana", "-c", "nothing"],
        ["dialogue", "show", "-u", "ana", "-c", "trip", "--node", "999999"],
        ["dialogue", "export", "-u", "ana", "-c", "trip", "-f", "png"],
        ["dialogue", "export", "-u", "ana", "-c", "trip", "-o", str(tmp_path / "no" / "such" / "dir.json")],
        ["dialogue", "show", "-u", "not a valid id!", "-c", "trip"],
    ):
        p = cli(tmp_path, *args)
        assert p.returncode != 0, args
        assert p.stderr.startswith("error:") and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
    p = cli(tmp_path, "dialogue", "compress", "-u", "ana", "-c", "empty")
    assert p.returncode == 0 and "nothing to compress" in p.stderr
