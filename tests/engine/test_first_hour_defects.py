"""Defects a newcomer met in the first hour, each held by a test: error messages that name the right
setting, state or URL in one line, a mistyped --db refused, an unknown user not exported, the
search time shown without the model load, the lifecycle's promotions counted, Ctrl-C during add
explained, and SyncDeepContext's real signatures."""

from __future__ import annotations

import json
import os
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
    return subprocess.run(
        [sys.executable, "-m", "deepcontext", *args], input=stdin, capture_output=True, text=True,
        env=_env(tmp_path, **env), timeout=300, cwd=tmp_path,
    )  # fmt: skip


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
