"""The CLI as a user runs it: the command in process, a real database file."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def cli(tmp_path: Path, *args: str, stdin: str | None = None, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", **extra_env}
    return run_cli(["--db", str(tmp_path / "cli.db"), *args], stdin=stdin, env=env)


def _commands() -> list[str]:
    import typer.main

    from deepcontext.cli.main import app

    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def test_every_command_has_help_and_is_in_the_docs() -> None:
    import typer.main

    from deepcontext.cli.main import app

    group = typer.main.get_command(app)
    # the hand-written pages (the generated reference lists every command by construction)
    pages = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").rglob("*.md")) if "reference" not in p.parts)]
    readme = "\n".join(p.read_text() for p in pages)
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        assert cmd.help and cmd.help.strip(), f"command {name} has no help"
        for p in cmd.params:
            if p.param_type_name == "option":
                assert getattr(p, "help", None), f"{name} {p.name} has no help"
        assert re.search(rf"deepcontext[^\n`]*\b{re.escape(name)}\b", readme), f"command {name} missing from the docs"


def test_add_search_export_import_flow(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "name": "Ana", "content": "I work at Globex Corporation in Madrid."},
        {"role": "assistant", "content": "Madrid is lovely."},
    ]
    p = cli(tmp_path, "add", "-", "--user", "ana", "--conversation", "c1", stdin=json.dumps(msgs))
    assert p.returncode == 0, p.stderr
    assert "stored 2 turn(s)" in p.stdout
    p = cli(tmp_path, "search", "Where does Ana work?", "--user", "ana", "--json")
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["results"] and any("Globex" in r["text"] for r in res["results"])
    mid = res["results"][0]["memory_id"]
    assert cli(tmp_path, "get", str(mid), "--user", "ana").returncode == 0
    p = cli(tmp_path, "graph", "Globex Corporation", "--user", "ana", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)[0]["entity"] == "Globex Corporation"
    out = tmp_path / "ana.jsonl"
    assert cli(tmp_path, "export", "--user", "ana", "-o", str(out)).returncode == 0
    p = cli(tmp_path, "import", str(out), "--user", "ana2")
    assert p.returncode == 0, p.stderr
    p = cli(tmp_path, "list", "--user", "ana2", "--json")
    assert json.loads(p.stdout)["total"] == json.loads(cli(tmp_path, "list", "--user", "ana", "--json").stdout)["total"]
    p = cli(tmp_path, "delete", str(mid), "--user", "ana")
    assert p.returncode == 0
    p = cli(tmp_path, "history", str(mid), "--user", "ana")
    assert "DELETE" in p.stdout
    for text, when in (("I live in Madrid.", "2025-01-01T10:00:00Z"), ("I moved to Lisbon.", "2025-03-01T10:00:00Z")):
        msg = [{"role": "user", "name": "Ana", "content": text}]
        assert cli(tmp_path, "add", "-", "--user", "ana", "--timestamp", when, stdin=json.dumps(msg)).returncode == 0
    p = cli(tmp_path, "search", "Where does Ana live?", "--user", "ana", "--include-superseded", "--json")
    assert p.returncode == 0, p.stderr
    old = [r for r in json.loads(p.stdout)["results"] if r["superseded_by"] is not None]
    assert old and "Madrid" in old[0]["text"]
    p = cli(tmp_path, "search", "Where does Ana live?", "--user", "ana", "--json")
    assert all(r["superseded_by"] is None for r in json.loads(p.stdout)["results"])
    p = cli(tmp_path, "delete-user", "ana", "--yes")
    assert p.returncode == 0
    assert json.loads(cli(tmp_path, "stats", "--user", "ana").stdout)["memories"] == 0


def test_search_min_score(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "name": "Ana", "content": "I work at Globex Corporation in Madrid."},
        {"role": "user", "name": "Ana", "content": "My brother Rui fixes bicycles in Porto."},
        {"role": "user", "name": "Ana", "content": "I bake sourdough bread every Sunday."},
    ]
    assert cli(tmp_path, "add", "-", "--user", "ana", stdin=json.dumps(msgs)).returncode == 0

    def search(*extra: str) -> list[dict]:
        # access tracking off: the same search twice ranks the same
        p = cli(tmp_path, "search", "Globex Corporation", "--user", "ana", "--json", *extra, DEEPCONTEXT_TRACK_ACCESS="false")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["results"]

    full = search()
    scores = [r["score"] for r in full]
    assert all(0 <= s <= 1 for s in scores) and scores == sorted(scores, reverse=True)
    bar = (scores[0] + scores[-1]) / 2
    assert scores[0] > scores[-1]
    cut = search("--min-score", str(bar))
    assert [r["memory_id"] for r in cut] == [r["memory_id"] for r in full if r["score"] >= bar]
    assert search("--min-score", "1") == []
    p = cli(tmp_path, "search", "Globex", "--user", "ana", "--min-score", "1.5")
    assert p.returncode != 0 and "min-score" in p.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        (("add", "-", "--user", "u"), "not json at all", "not JSON"),
        (("add", "-", "--user", "u"), '[{"role": "robot", "content": "x"}]', "role"),
        (("get", "999", "--user", "u"), None, "not found"),
        (("search", "x", "--user", "u", "--tier", "medium"), None, "tier"),
        (("graph", "Nobody", "--user", "u"), None, "not found"),
        (("import", "/nonexistent/file.jsonl"), None, "No such file"),
    ],
)
def test_errors_are_one_line_and_nonzero(tmp_path: Path, args, stdin, needle) -> None:
    if args[0] in ("get", "search", "graph"):  # on a database that exists: a missing one is refused first
        assert cli(tmp_path, "add", "-", "--user", "other", stdin='[{"role": "user", "content": "Hello."}]').returncode == 0
    p = cli(tmp_path, *args, stdin=stdin)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    assert needle.lower() in p.stderr.lower(), p.stderr
    assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) <= 2, p.stderr
