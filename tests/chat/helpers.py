"""Helpers of the chat tests: the fake OpenAI server scripted as a chat model (:class:`Brain`), and
the chat driven through its input and output streams (:func:`chat`: ``run_chat`` over a scripted
input and a rich Console on a StringIO)."""

from __future__ import annotations

import io
import re
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from deepcontext import DeepContext
from deepcontext.chat.runner import PROMPT, run_chat
from deepcontext.llm import prompts
from tests.support.fake_openai import FakeOpenAI, Reply

KEY = "sk-chat-0123456789abcdef"
_EXTRACT = prompts.EXTRACT_SYSTEM[:60]
_CLASSIFY = prompts.CLASSIFY_SYSTEM[:60]
_SUMMARY = prompts.SUMMARY_SYSTEM[:60]
_SECTION = "Messages to extract from:"


class Brain:
    """The fake server as the chat's LLM.

    - streamed requests are the chat's answers: the next of :meth:`say` (a text or a Reply), else
      "OK.";
    - extraction requests get the facts taught with :meth:`learn` whose trigger is in the messages
      to extract from (context messages do not count), citing message [0];
    - classification requests get ADD for every candidate; summaries a short text; anything else
      (consolidation merges) a 404, which makes deepcontext fall back to its offline way.
    """

    def __init__(self, server: FakeOpenAI) -> None:
        self.server = server
        self.answers: deque[Reply] = deque()
        self.knowledge: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        server.responder = self._respond

    def say(self, *answers: str | Reply) -> Brain:
        with self._lock:
            self.answers.extend(Reply.text(a, chunk_size=6) if isinstance(a, str) else a for a in answers)
        return self

    def learn(
        self,
        trigger: str,
        text: str,
        *,
        entities: list[tuple[str, str]] = (),  # type: ignore[assignment]
        relations: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    ) -> Brain:
        item = {
            "fact": {
                "text": text,
                "type": "semantic",
                "source_indices": [0],
                "importance": 0.8,
                "confidence": 0.9,
                "entities": [n for n, _ in entities],
            },
            "entities": [{"name": n, "type": t, "source_indices": [0]} for n, t in entities],
            "relations": [{"source": s, "relation": r, "target": t, "source_indices": [0]} for s, r, t in relations],
        }
        with self._lock:
            self.knowledge.append((trigger, item))
        return self

    @property
    def streamed(self) -> list[Any]:
        """The chat's answer requests (streamed), oldest first."""
        return [r for r in self.server.chat_requests if r.stream]

    def _respond(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "system")
        if body.get("stream"):
            with self._lock:
                return self.answers.popleft() if self.answers else Reply.text("OK.")
        if system.startswith(_EXTRACT):
            user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
            section = user.split(_SECTION, 1)[1] if _SECTION in user else ""
            facts, entities, relations = [], [], []
            with self._lock:
                for trigger, item in self.knowledge:
                    if trigger in section:
                        facts.append(item["fact"])
                        entities += item["entities"]
                        relations += item["relations"]
            return Reply.json({"facts": facts, "entities": entities, "relations": relations})
        if system.startswith(_CLASSIFY):
            user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
            numbers = sorted({int(n) for n in re.findall(r"^Candidate (\d+) ", user, re.MULTILINE)})
            return Reply.json({"decisions": [{"candidate": n, "action": "ADD", "reason": "new"} for n in numbers]})
        if system.startswith(_SUMMARY):
            return Reply.text("A short summary.")
        return Reply.error(404, "not scripted in the chat tests")


def opener(db: Path, server: FakeOpenAI | None = None, **settings: Any) -> Callable[[], DeepContext]:
    """What ``deepcontext chat`` does with its options: a DeepContext on ``db`` (hash embedder), with
    the fake server as its LLM, or offline when ``server`` is None."""
    if server is not None:
        settings = {
            "llm_base_url": server.url,
            "llm_api_key": KEY,
            "llm_model": "fake-model",
            "llm_max_retries": 0,
            "llm_timeout": 20,
            **settings,
        }
    else:
        settings = {"llm_provider": "none", **settings}

    def make() -> DeepContext:
        return DeepContext(database_url=f"sqlite:///{db}", embedder="hash", **settings)

    return make


class Script(io.TextIOBase):
    """The user at the keyboard: lines typed one by one; a line may be a function of what the
    screen shows so far (the user reads a node or memory id, then types a command with it)."""

    def __init__(self, lines: list[str | Callable[[str], str]], screen: io.StringIO) -> None:
        self.lines = deque(lines)
        self.screen = screen

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        if not self.lines:
            return ""
        item = self.lines.popleft()
        return (item(self.screen.getvalue()) if callable(item) else item) + "\n"


def chat(
    open_ctx: Callable[[], DeepContext],
    lines: list[str | Callable[[str], str]],
    *,
    user: str = "ana",
    conversation: str = "c1",
    screen: io.StringIO | None = None,
    **kwargs: Any,
) -> tuple[int, str]:
    """Run a chat over ``lines``; returns (exit status, everything it printed)."""
    screen = screen if screen is not None else io.StringIO()
    console = Console(file=screen, width=200, force_terminal=False, color_system=None, highlight=False)
    code = run_chat(open_ctx, user_id=user, conversation_id=conversation, stdin=Script(lines, screen), console=console, **kwargs)
    return code, screen.getvalue()


def blocks(transcript: str) -> list[tuple[str, str]]:
    """``[(line typed, what the chat printed for it)]`` from a transcript."""
    out = []
    for part in transcript.split(PROMPT)[1:]:
        typed, _, printed = part.partition("\n")
        out.append((typed, printed.rstrip("\n")))
    return out


def block(transcript: str, typed: str) -> str:
    """What the chat printed for the last line typed as ``typed``."""
    found = [p for t, p in blocks(transcript) if t == typed]
    assert found, f"{typed!r} was not typed; typed: {[t for t, _ in blocks(transcript)]}"
    return found[-1]


def last_node(screen: str) -> int:
    """The node id of the last round the chat stored (``[12] stored``)."""
    return int(re.findall(r"^\[(\d+)\] stored", screen, re.MULTILINE)[-1])


def memory_id(screen: str, text: str) -> int:
    """The id of the memory shown as ``#12 [tier/type] text``."""
    found = re.findall(rf"#(\d+) \[[a-z_]+/[a-z]+\] {re.escape(text)}", screen)
    assert found, f"no memory {text!r} on screen"
    return int(found[-1])
