"""Every code example of the README and the docs site runs, offline, as written (see
:mod:`tests.docs.examples` for the markers), so the documentation cannot drift from the code."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.examples import PG_URL, SERVER_URLS, Example, all_examples, blocks, commands, markdown_files
from tests.server.helpers import cli_env, serve
from tests.support.fake_openai import FakeOpenAI, Reply

EXAMPLES = all_examples()
BIN = str(Path(sys.executable).parent)


def test_the_docs_have_examples_of_each_kind() -> None:
    langs = {ex.lang for ex in EXAMPLES}
    assert langs == {"python", "bash"}, langs
    assert any("server" in ex.flags for ex in EXAMPLES)
    assert len(EXAMPLES) >= 20


def test_every_python_or_bash_block_runs_or_says_why_not() -> None:
    # blocks() raises on an unknown marker or a skip without a reason; count what is skipped
    skipped = [b for p in markdown_files() for b in blocks(p) if "skip" in b.flags]
    assert all(b.reason for b in skipped)


@contextlib.contextmanager
def _environment(ex: Example, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """The example's environment and the text replacements its code needs."""
    env = cli_env(DEEPCONTEXT_DATA_DIR=str(tmp_path / "data"), PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    subs: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if "postgres" in ex.flags:
            url = request.getfixturevalue("pg_url")
            env["DEEPCONTEXT_DATABASE_URL"] = url
            subs[PG_URL] = url
        if "llm" in ex.flags:
            fake = stack.enter_context(FakeOpenAI())
            fake.default_reply = Reply.text('{"facts": []}')
            env.update(
                DEEPCONTEXT_LLM_BASE_URL=fake.url,
                DEEPCONTEXT_LLM_API_KEY="sk-test",
                OPENAI_BASE_URL=fake.url,
                OPENAI_API_KEY="sk-test",
            )
        if "server" in ex.flags:
            # with API keys when the example makes one (the server reads keys at each request)
            keyed = any("keys create" in b.code for b in ex.blocks)
            server = stack.enter_context(serve(["serve"] if keyed else ["serve", "--no-auth"], env=env))
            for url in SERVER_URLS:
                subs[url] = server.url
        yield env, subs


def _apply(code: str, subs: dict[str, str]) -> str:
    for old, new in subs.items():
        code = code.replace(old, new)
    return code


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXAMPLES, ids=[ex.where for ex in EXAMPLES])
def test_example_runs(ex: Example, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    (tmp_path / "data").mkdir()
    with _environment(ex, tmp_path, request) as (env, subs):
        if ex.lang == "python":
            # one script per example, its blocks in order, in a process of its own (as a reader runs it)
            script = tmp_path / "example.py"
            script.write_text("\n".join(_apply(b.code, subs) for b in ex.blocks), encoding="utf-8")
            _run([sys.executable, str(script)], env, tmp_path, ex)
        else:
            lines = [_apply(c, subs) for b in ex.blocks for c in commands(b.code, server="server" in ex.flags)]
            assert lines, f"{ex.where}: a bash block with nothing to run needs `<!-- test: skip (why) -->`"
            # an HTTP error answer fails the example, as a non-zero exit does
            script = 'curl() { command curl --fail-with-body "$@"; }\n' + "\n".join(lines)
            _run(["bash", "-euo", "pipefail", "-c", script], env, tmp_path, ex)


def _run(argv: list[str], env: dict[str, str], cwd: Path, ex: Example) -> None:
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{ex.where} failed with exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
