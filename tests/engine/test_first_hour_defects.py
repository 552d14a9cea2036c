"""Defects a newcomer met in the first hour, each held by a test: error messages that name the right
setting, state or URL in one line, a mistyped --db refused, an unknown user not exported, the
search time shown without the model load, the lifecycle's promotions counted, Ctrl-C during add
explained, and SyncDeepContext's real signatures."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.errors import ConfigurationError, LLMError, MemoryNotFoundError, ValidationError
from deepcontext.settings import DeepContextSettings
from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai, fake_openai_server  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # the source under test, also when another copy of deepcontext is installed
    return {
        "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "DEEPCONTEXT_EMBEDDER": "hash",
        "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", **extra,
    }  # fmt: skip


def cli(tmp_path: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    # in process; the Ctrl-C tests below start a real process
    cli_env = {k: v for k, v in _env(tmp_path, **env).items() if k not in ("PATH", "PYTHONPATH")}
    return run_cli(args, stdin=stdin, env=cli_env, cwd=tmp_path)


def _one_line(p: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


# --- 1. a too-long query names max_query_chars -------------------------------------------------


async def test_a_too_long_query_names_max_query_chars(sqlite_ctx: DeepContext) -> None:
    limit = sqlite_ctx.settings.max_query_chars
    for call in (
        lambda q: sqlite_ctx.search(q, "ana"),
        lambda q: sqlite_ctx.context(q, "ana"),
    ):
        with pytest.raises(ValidationError) as err:
            await call("x" * (limit + 1))
        assert err.value.field == "query"
        assert "max_query_chars" in str(err.value) and "max_message_chars" not in str(err.value)
    with pytest.raises(ValidationError, match="max_message_chars"):
        await sqlite_ctx.add([{"role": "user", "content": "x" * (sqlite_ctx.settings.max_message_chars + 1)}], "ana")


# --- 4. deleting a deleted memory says so ----------------------------------------------------


async def test_deleting_a_deleted_memory_says_it_is_already_deleted(sqlite_ctx: DeepContext) -> None:
    res = await sqlite_ctx.add([{"role": "user", "content": "I live in Lisbon."}], "ana")
    mid = res.memory_ids[0]
    await sqlite_ctx.delete(mid, "ana")
    with pytest.raises(MemoryNotFoundError) as err:
        await sqlite_ctx.delete(mid, "ana")
    assert "already deleted" in str(err.value) and err.value.status == "deleted"
    assert (await sqlite_ctx.get(mid, "ana")).status.value == "deleted"
    with pytest.raises(MemoryNotFoundError) as missing:  # another user's, or none: still "not found"
        await sqlite_ctx.delete(mid, "bo")
    assert "not found" in str(missing.value) and missing.value.status is None


def test_cli_delete_twice_says_already_deleted(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    p = cli(tmp_path, "--db", db, "add", "-", "-u", "ana", stdin=json.dumps([{"role": "user", "content": "I live in Lisbon."}]))
    assert p.returncode == 0, p.stderr
    mid = json.loads(cli(tmp_path, "--db", db, "list", "-u", "ana", "--json").stdout)["memories"][0]["id"]
    assert cli(tmp_path, "--db", db, "delete", str(mid), "-u", "ana").returncode == 0
    p = cli(tmp_path, "--db", db, "delete", str(mid), "-u", "ana")
    assert p.returncode == 1 and "already deleted" in p.stderr and "not found" not in p.stderr, p.stderr


# --- 5. settings errors in one line ------------------------------------------------------------


def test_a_bad_embedder_option_is_one_clear_line(tmp_path: Path) -> None:
    p = cli(tmp_path, "--db", str(tmp_path / "m.db"), "--embedder", "bogus", "add", "-", "-u", "ana", stdin="[]")
    line = _one_line(p)
    assert p.returncode == 1 and "embedder" in line and "'bogus'" in line and "'local'" in line, line
    assert "pydantic.dev" not in p.stderr and "validation error" not in p.stderr


def test_bad_environment_values_are_one_clear_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    p = cli(tmp_path, "--db", db, "users", DEEPCONTEXT_LLM_TIMEOUT="soon")
    line = _one_line(p)
    assert "DEEPCONTEXT_LLM_TIMEOUT" in line and "'soon'" in line and "http" not in line, line
    p = cli(tmp_path, "--db", db, "users", DEEPCONTEXT_LLM_BACKENDS="not json")  # pydantic-settings' own error
    line = _one_line(p)
    assert "DEEPCONTEXT_LLM_BACKENDS" in line and "JSON" in line and "Traceback" not in p.stderr, line


def test_settings_errors_in_python_are_one_line_and_keep_secrets_out() -> None:
    with pytest.raises(ConfigurationError) as err:
        DeepContext(embedder="bogus", database_url="sqlite:///unused.db")
    assert "\n" not in str(err.value) and "pydantic.dev" not in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        DeepContext(settings=DeepContextSettings(), llm_model=["sk-not-a-model-name"])
    assert "sk-not-a-model-name" not in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        DeepContext(settings=DeepContextSettings(), openai_api_key=["sk-secret-value-123"])
    assert "sk-secret-value-123" not in str(err.value) and "openai_api_key" in str(err.value)


# --- 6. the LLM error names the URL the user configured ----------------------------------------


async def test_the_llm_error_names_the_configured_url(fake_openai: FakeOpenAI) -> None:  # noqa: F811
    from deepcontext.llm import build_llm

    router = build_llm(DeepContextSettings(llm_base_url=fake_openai.url, llm_max_retries=0, llm_model="qwen3"))
    assert router is not None
    fake_openai.script(Reply.error(500))
    with pytest.raises(LLMError) as err:
        await router.chat([{"role": "user", "content": "hi"}])
    assert fake_openai.url.rstrip("/") in str(err.value), str(err.value)


# --- 2. a database that does not exist --------------------------------------------------------


def test_a_read_command_on_a_missing_database_names_it_and_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "memroy.db"
    for args in (("search", "where", "-u", "ana"), ("users",), ("list", "-u", "ana"), ("export", "-u", "ana")):
        p = cli(tmp_path, "--db", str(typo), *args)
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert f"no database at {typo}" in p.stderr and "no memories" not in p.stdout, p.stderr
        assert not typo.exists()


def test_the_default_database_is_not_created_by_a_read_command(tmp_path: Path) -> None:
    p = cli(tmp_path, "search", "where", "-u", "ana")
    default = tmp_path / ".deepcontext" / "memory.db"
    assert p.returncode == 1 and f"no database at {default}" in p.stderr, p.stderr
    assert not default.exists()


def test_the_first_add_says_it_created_the_database(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    msg = json.dumps([{"role": "user", "content": "I live in Lisbon."}])
    p = cli(tmp_path, "--db", str(db), "add", "-", "-u", "ana", stdin=msg)
    assert p.returncode == 0 and f"created the database at {db}" in p.stderr, p.stderr
    p = cli(tmp_path, "--db", str(db), "add", "-", "-u", "ana", stdin=msg)  # only the first time
    assert p.returncode == 0 and "created" not in p.stderr, p.stderr
    p = cli(tmp_path, "--db", str(db), "search", "where does ana live", "-u", "ana")
    assert p.returncode == 0 and "Lisbon" in p.stdout, p.stderr


# --- 3. exporting an unknown user ------------------------------------------------------------


def test_exporting_an_unknown_user_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert (
        cli(
            tmp_path, "--db", db, "add", "-", "-u", "ana", stdin=json.dumps([{"role": "user", "content": "Hi, I'm Ana."}])
        ).returncode
        == 0
    )
    out = tmp_path / "anna.jsonl"
    p = cli(tmp_path, "--db", db, "export", "-u", "anna", "-o", str(out))
    assert p.returncode == 1 and "'anna' not found" in p.stderr, p.stderr
    assert not out.exists()
    p = cli(tmp_path, "--db", db, "export", "-u", "anna")
    assert p.returncode == 1 and p.stdout == "", p.stdout
    p = cli(tmp_path, "--db", db, "export", "-u", "ana", "-o", str(out))
    assert p.returncode == 0 and len(out.read_text().splitlines()) > 1, p.stderr


# --- 7. the search time is the search's own ---------------------------------------------------


def test_search_shows_its_own_time_and_the_model_load_apart(tmp_path: Path) -> None:
    db = str(tmp_path / "local.db")
    local = {"DEEPCONTEXT_EMBEDDER": "local"}
    p = cli(
        tmp_path,
        "--db",
        db,
        "add",
        "-",
        "-u",
        "ana",
        stdin=json.dumps([{"role": "user", "content": "I live in Lisbon."}]),
        **local,
    )
    assert p.returncode == 0, p.stderr
    p = cli(tmp_path, "--db", db, "search", "where do I live", "-u", "ana", **local)
    assert p.returncode == 0, p.stderr
    loads = re.findall(r"loaded the embedding model in ([\d.]+) s", p.stderr)
    assert len(loads) == 1, p.stderr
    took = float(re.search(r"\(([\d.]+) ms\)", p.stdout).group(1))  # type: ignore[union-attr]
    assert took < float(loads[0]) * 1000, (took, loads)  # the load is not counted in the search
    p = cli(tmp_path, "--db", db, "search", "where do I live", "-u", "ana", "--json", **local)
    assert p.returncode == 0 and "loaded" not in p.stderr and json.loads(p.stdout)["results"], p.stderr


# --- 9. Ctrl-C during add -------------------------------------------------------------------


def _stored_turns(db: Path) -> int:
    import sqlite3

    if not db.exists():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM turns").fetchone()[0])
        except sqlite3.OperationalError:  # the schema is still being created
            return 0


@pytest.mark.slow  # a real process, interrupted
def test_ctrl_c_during_a_bulk_add_says_what_is_stored_and_how_to_resume(tmp_path: Path) -> None:
    n = 3000
    path = tmp_path / "history.jsonl"
    path.write_text(
        "".join(
            json.dumps({"role": "user", "content": f"Entry {i}: parcel {i * 7} left depot {i % 13}."}) + "\n" for i in range(n)
        )
    )
    db = tmp_path / "bulk.db"
    args = [sys.executable, "-m", "deepcontext", "--db", str(db), "add", str(path), "-u", "ana"]
    proc = subprocess.Popen(args, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and _stored_turns(db) < 200:
        time.sleep(0.05)
    assert proc.poll() is None, "the add finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    stored = _stored_turns(db)
    assert 0 < stored < n
    assert f"{stored} of {n} messages are stored" in err and "run the same command again" in err, err
    assert "Traceback" not in err
    p = subprocess.run(args, env=_env(tmp_path), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0 and f"resuming: {stored} of {n}" in p.stderr, p.stderr
    assert _stored_turns(db) == n


@pytest.mark.slow  # a real process, interrupted
def test_ctrl_c_during_a_single_add_says_whether_it_was_stored(tmp_path: Path) -> None:
    # one transaction: the message says it was stored whole or not at all, as the database holds it
    msgs = [{"role": "user", "content": f"Note {i}: the kettle in room {i} is blue."} for i in range(90)]
    db = tmp_path / "one.db"
    path = tmp_path / "notes.json"
    path.write_text(json.dumps(msgs))
    args = [sys.executable, "-m", "deepcontext", "--db", str(db), "add", str(path), "-u", "ana"]
    proc = subprocess.Popen(args, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not db.exists():
        time.sleep(0.02)
    time.sleep(0.3)
    if proc.poll() is not None:
        pytest.skip("the add finished before it could be interrupted")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    if _stored_turns(db):
        assert "were stored" in err, err
    else:
        assert "nothing was stored" in err or "before anything was stored" in err, err
