"""``deepcontext chat`` as a real terminal program: a process in a tmux pane (send-keys, capture-pane),
its LLM the fake OpenAI server. The prompt, an answer streamed piece by piece, a clean exit on
Ctrl-C at the prompt and during an answer, and the next start continuing the conversation."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deepcontext import DeepContext
from tests.chat.helpers import KEY, Brain
from tests.support.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[2]


class Pane:
    """One tmux pane on a private tmux server (its own socket), killed at the end."""

    def __init__(self, tmux: str) -> None:
        self.tmux = tmux
        self.socket = f"dct-chat-test-{os.getpid()}-{secrets.token_hex(4)}"

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", *args], check=False, capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str) -> None:
        self._run("new-session", "-d", "-s", "chat", "-x", "150", "-y", "50", command)

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "chat", *keys)

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-J", "-t", "chat", "-S", "-500")

    def wait(self, condition: Callable[[str], bool], what: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if condition(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the pane shows:\n{shown}")
            time.sleep(0.03)

    def kill(self) -> None:
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], check=False, capture_output=True, timeout=30)


@pytest.fixture
def pane() -> Iterator[Pane]:
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed (apt-get install tmux): the terminal test needs it")
    p = Pane(tmux)
    yield p
    p.kill()


def command(db: Path, server: FakeOpenAI, home: Path) -> str:
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "TERM": "screen",
        "PYTHONPATH": str(ROOT / "src"),
        "DEEPCONTEXT_EMBEDDER": "hash",
        "DEEPCONTEXT_LLM_BASE_URL": server.url,
        "DEEPCONTEXT_LLM_API_KEY": KEY,
        "DEEPCONTEXT_LLM_MODEL": "fake-model",
        "DEEPCONTEXT_LLM_MAX_RETRIES": "0",
    }
    chat = [sys.executable, "-m", "deepcontext", "--db", str(db), "chat", "--user", "ana", "--conversation", "term"]
    line = " ".join(["env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, chat)])
    return f"cd {shlex.quote(str(home))} && {line}; echo EXIT=$?; sleep 600"


def prompts(screen: str) -> int:
    return len(re.findall(r"^you › ", screen, re.MULTILINE))


@pytest.mark.slow  # a real terminal (tmux) and a chat process
def test_chat_in_a_terminal(tmp_path: Path, fake_openai: FakeOpenAI, brain: Brain, pane: Pane) -> None:
    db = tmp_path / "chat.db"
    answer = "Porto is a lovely city on the Douro river."
    brain.say(Reply.text(answer, chunk_size=8, chunk_delay=0.25))
    pane.start(command(db, fake_openai, tmp_path))
    shown = pane.wait(lambda s: prompts(s) == 1, "the prompt")
    assert "deepcontext chat · user 'ana' · conversation 'term'" in shown and "answers by fake-model" in shown

    pane.keys("My sister Lena lives in Porto.", "Enter")
    partial = pane.wait(lambda s: "assistant › Porto is" in s, "the first piece of the answer")
    assert answer not in partial  # shown while the rest was still on its way: streamed
    shown = pane.wait(lambda s: prompts(s) == 2, "the next prompt")
    assert f"assistant › {answer}" in shown and re.search(r"^\[\d+\] stored", shown, re.MULTILINE)

    pane.keys("C-c")  # at the prompt: leaves cleanly
    shown = pane.wait(lambda s: "EXIT=" in s, "the end of the program")
    assert "EXIT=0" in shown and "bye; the next start continues after [" in shown and "Traceback" not in shown

    # the next start continues there; Ctrl-C in the middle of an answer leaves cleanly too
    pane.kill()
    pane.socket += "-2"
    brain.say(Reply.text("This answer is long and slow, " * 8, chunk_size=4, chunk_delay=0.3))
    pane.start(command(db, fake_openai, tmp_path))
    shown = pane.wait(lambda s: prompts(s) == 1, "the prompt after the restart")
    assert re.search(r"continuing after \[\d+\] \(1 node on this path\)", shown)
    pane.keys("Tell me a long story.", "Enter")
    pane.wait(lambda s: "assistant › This" in s, "the answer to start")
    pane.keys("C-c")
    shown = pane.wait(lambda s: "EXIT=" in s, "the end of the program")
    assert "EXIT=0" in shown and "interrupted" in shown and "bye" in shown and "Traceback" not in shown

    async def rounds() -> list[str]:
        async with DeepContext(database_url=f"sqlite:///{db}", embedder="hash", llm_provider="none") as ctx:
            path = await ctx.conversation_path("ana", "term")
        return [n.messages[0][1] for n in path.nodes]

    assert asyncio.run(rounds()) == ["My sister Lena lives in Porto."]  # the interrupted message was not stored
