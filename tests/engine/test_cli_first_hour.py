"""What a new user meets in the first hour of the CLI: their text printed as written, edges drawn
the way they run, a mistyped --db refused, long files added in chunks, empty answers explained.
The command and the quick start's Python example run in process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.docs.examples import blocks
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


def _run(
    tmp_path: Path, *args: str, stdin: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli(args, stdin=stdin, env={"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash"} | (env or {}), cwd=cwd)


def cli(
    tmp_path: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return _run(tmp_path, "--db", str(tmp_path / "cli.db"), *args, stdin=stdin, env=env)


def _add(tmp_path: Path, text: str, user: str = "ana") -> None:
    p = cli(tmp_path, "add", "-", "--user", user, stdin=json.dumps([{"role": "user", "content": text}]))
    assert p.returncode == 0, p.stderr


def test_text_with_brackets_prints_as_written(tmp_path: Path) -> None:
    _add(tmp_path, "The [server] config is in [/srv/app] now.")
    for args in (
        ("list", "--user", "ana"),
        ("search", "where is the server config", "--user", "ana"),
        ("history", "1", "--user", "ana"),
    ):
        p = cli(tmp_path, *args)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        flat = "".join(p.stdout.split())  # the table folds long cells over lines
        assert "[/srv/app]" in flat and "[server]" in flat, p.stdout


def test_error_messages_keep_their_brackets(tmp_path: Path) -> None:
    _add(tmp_path, "Hello.", user="u")
    p = cli(tmp_path, "graph", "[server]", "--user", "u")
    assert p.returncode != 0 and "[server]" in p.stderr, p.stderr


def test_graph_draws_each_edge_the_way_it_runs(tmp_path: Path) -> None:
    _add(tmp_path, "I live in Lisbon.")
    hood = json.loads(cli(tmp_path, "graph", "Lisbon", "--user", "ana", "--json").stdout)
    user = next(h for h in hood if h["relation"] == "lives_in")
    assert user["via"] == "Lisbon" and user["direction"] == "in"  # User --lives_in--> Lisbon
    p = cli(tmp_path, "graph", "Lisbon", "--user", "ana")
    assert f"<--lives_in-- {user['entity']}" in p.stdout, p.stdout
    p = cli(tmp_path, "graph", user["entity"], "--user", "ana")
    assert "--lives_in--> Lisbon" in p.stdout, p.stdout


def test_quickstart_python_example_prints_real_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = ROOT / "docs" / "quickstart.md"
    code = next(b.code for b in blocks(page) if b.lang == "python" and "get_entity_graph" in b.code)
    # the example as a script in this process: its default database under a fresh HOME
    for name in [k for k in os.environ if k.startswith("DEEPCONTEXT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DEEPCONTEXT_EMBEDDER", "hash")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(page), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    edges = [ln for ln in out.splitlines() if "--" in ln]
    assert edges and all("None" not in ln for ln in edges), out
    assert any(ln.startswith("Acme Corp ") for ln in edges), out
    assert (tmp_path / ".deepcontext" / "memory.db").is_file()


def test_a_db_in_a_missing_folder_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.db"
    p = _run(tmp_path, "--db", str(target), "users")
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "no folder" in p.stderr and str(target.parent) in "".join(p.stderr.split()), p.stderr
    assert not (tmp_path / "no").exists()


def test_the_default_database_folder_is_still_created(tmp_path: Path) -> None:
    p = _run(tmp_path, "add", "-", "--user", "ana", stdin=json.dumps([{"role": "user", "content": "Hello."}]))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / ".deepcontext" / "memory.db").is_file()


def test_any_database_in_the_default_folder_creates_it(tmp_path: Path) -> None:
    p = _run(
        tmp_path,
        "--db",
        str(tmp_path / ".deepcontext" / "other.db"),
        "add",
        "-",
        "--user",
        "ana",
        stdin=json.dumps([{"role": "user", "content": "Hello."}]),
    )  # as the demo's demo.db
    assert p.returncode == 0, p.stderr
    assert (tmp_path / ".deepcontext" / "other.db").is_file()


def test_a_file_longer_than_one_add_goes_in_chunks(tmp_path: Path) -> None:
    # as a file of 2,001 messages under the default 2,000, in a few seconds
    limit = {"DEEPCONTEXT_MAX_MESSAGES_PER_ADD": "4"}
    n = 9
    lines = [
        json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"Note {i}: the kettle is blue."}) for i in range(n)
    ]
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    p = cli(tmp_path, "add", str(path), "--user", "bo", "--conversation", "long", env=limit)
    assert p.returncode == 0, p.stderr
    assert f"stored {n} turn(s)" in p.stdout
    stats = json.loads(cli(tmp_path, "stats", "--user", "bo").stdout)
    assert stats["turns"] == n


def test_empty_answers_say_so(tmp_path: Path) -> None:
    _add(tmp_path, "Hello.", user="gone")  # a database with no users left
    assert cli(tmp_path, "delete-user", "gone", "--yes").returncode == 0
    p = cli(tmp_path, "users")
    assert p.returncode == 0 and p.stdout == "" and "no users" in p.stderr
    p = cli(tmp_path, "search", "anything", "--user", "nobody")
    assert p.returncode == 0 and "'nobody' has no memories" in p.stdout, p.stdout


def test_bench_locomo_without_data_says_how_to_get_it(tmp_path: Path) -> None:
    p = _run(tmp_path, "bench", "locomo", cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    flat = " ".join(p.stderr.split())
    assert "locomo10.json" in flat and "--data" in flat, p.stderr


def test_bench_refuses_a_misspelt_setting(tmp_path: Path) -> None:
    p = _run(tmp_path, "bench", "needs", "--set", "profile_wieght=2", cwd=tmp_path)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "--set: unknown setting: 'profile_wieght' (did you mean 'profile_weight'?)" in " ".join(p.stderr.split()), p.stderr
