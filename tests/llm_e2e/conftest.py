"""End-to-end tests of DeepContext with an LLM: the real ``openai`` client against the fake
OpenAI-compatible server on 127.0.0.1, on SQLite and PostgreSQL (``db_url``).

:class:`Brain` scripts the server per task: extraction, classification and summary requests are
told apart by their system prompt (the prompts of :mod:`deepcontext.llm.prompts`) and answered from
their own queue, so a background summary call can never steal an extraction answer.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from deepcontext import DeepContext, ManualClock
from deepcontext.embed import HashEmbedder
from deepcontext.llm import OpenAICompatibleLLM, Router, prompts
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.fixtures import fake_openai, fake_openai_factory, fake_openai_server  # noqa: F401

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
KEY = "sk-e2e-0123456789abcdef"

_MARKERS = {
    "extract": prompts.EXTRACT_SYSTEM[:60],
    "classify": prompts.CLASSIFY_SYSTEM[:60],
    "summary": prompts.SUMMARY_SYSTEM[:60],
}


class Brain:
    """Scripted answers per task (extract / classify / summary) for one fake server."""

    def __init__(self, server: FakeOpenAI) -> None:
        self.server = server
        self.queues: dict[str, deque[Reply | Callable[[dict[str, Any]], Reply]]] = {t: deque() for t in _MARKERS}
        self.seen: dict[str, list[dict[str, Any]]] = {t: [] for t in _MARKERS}
        self.unexpected: list[str] = []
        self.defaults: dict[str, Reply] = {}
        self._lock = threading.Lock()
        server.responder = self._respond

    def extract(self, *replies: Reply | dict[str, Any] | Callable[[dict[str, Any]], Reply]) -> Brain:
        """Queue extraction answers: a Reply, a JSON value, or a function of the request body."""
        return self._queue("extract", replies)

    def classify(self, *replies: Reply | dict[str, Any] | Callable[[dict[str, Any]], Reply]) -> Brain:
        return self._queue("classify", replies)

    def summary(self, *replies: Reply | str) -> Brain:
        return self._queue("summary", replies)

    def _queue(self, task: str, replies: tuple[Any, ...]) -> Brain:
        with self._lock:
            for r in replies:
                if isinstance(r, dict):
                    r = Reply.json(r)
                elif isinstance(r, str):
                    r = Reply.text(r)
                self.queues[task].append(r)
        return self

    def _respond(self, body: dict[str, Any]) -> Reply:
        system = "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system")
        task = next((t for t, marker in _MARKERS.items() if system.startswith(marker)), "other")
        with self._lock:
            if task in self.seen:
                self.seen[task].append(body)
            queue = self.queues.get(task)
            item = queue.popleft() if queue else None
        if item is not None:
            return item(body) if callable(item) else item
        with self._lock:
            if task in self.defaults:
                return self.defaults[task]
            self.unexpected.append(task)
        return Reply.error(404, f"no scripted {task} answer")  # not retried

    # --- what was asked ---------------------------------------------------------------------------
    def user_prompt(self, task: str, n: int = -1) -> str:
        msgs = self.seen[task][n]["messages"]
        return next(m["content"] for m in msgs if m["role"] == "user")

    def system_prompt(self, task: str, n: int = -1) -> str:
        msgs = self.seen[task][n]["messages"]
        return "\n".join(m["content"] for m in msgs if m["role"] == "system")

    def shown_ids(self, n: int = -1) -> dict[int, list[int]]:
        """Per candidate number, the memory ids the classification prompt showed."""
        out: dict[int, list[int]] = {}
        current = None
        for line in self.user_prompt("classify", n).splitlines():
            m = re.match(r"Candidate (\d+) ", line)
            if m:
                current = int(m.group(1))
                out[current] = []
            m = re.match(r"\s+- id (\d+) ", line)
            if m and current is not None:
                out[current].append(int(m.group(1)))
        return out


def extraction(*facts: dict[str, Any], entities: list[Any] | None = None, relations: list[Any] | None = None) -> dict[str, Any]:
    """An extraction answer."""
    return {"facts": list(facts), "entities": entities or [], "relations": relations or []}


def fact(text: str, *sources: int, type: str = "semantic", **kw: Any) -> dict[str, Any]:
    return {"text": text, "type": type, "source_indices": list(sources) or [0], "importance": 0.7, "confidence": 0.9, **kw}


def decisions(*items: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": list(items)}


def user(*texts: str, name: str = "Ana") -> list[dict[str, Any]]:
    return [{"role": "user", "content": t, "name": name} for t in texts]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def brain(fake_openai: FakeOpenAI) -> Brain:  # noqa: F811
    return Brain(fake_openai)


@pytest.fixture
async def router(fake_openai: FakeOpenAI) -> AsyncIterator[Router]:  # noqa: F811
    """A router over the fake server with short backoffs (owned by the test, not by DeepContext)."""
    r = Router(
        [OpenAICompatibleLLM("fake-model", name="main", base_url=fake_openai.url, api_key=KEY, timeout=5.0)],
        backoff_base=0.01,
        max_retries=2,
        seed=1,
    )
    yield r
    await r.aclose()


MakeCtx = Callable[..., Awaitable[DeepContext]]


@pytest.fixture
async def make_ctx(db_url: str, clock: ManualClock) -> AsyncIterator[MakeCtx]:
    """Open DeepContexts on the test's database (hash embedder, manual clock); closed afterwards."""
    made: list[DeepContext] = []

    async def make(**kw: Any) -> DeepContext:
        kw.setdefault("embedder", HashEmbedder(256))
        c = DeepContext(database_url=db_url, clock=clock, **kw)
        await c.init()
        made.append(c)
        return c

    yield make
    for c in made:
        await c.close()


@pytest.fixture
async def ctx(make_ctx: MakeCtx, router: Router) -> DeepContext:
    """A DeepContext whose LLM is the test's router (extraction and classification by the LLM)."""
    return await make_ctx(llm=router)
