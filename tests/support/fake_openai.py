"""A fake OpenAI-compatible HTTP server for tests, on 127.0.0.1 and a free port, driven by the real
``openai`` client (or anything speaking HTTP).

Start it::

    with FakeOpenAI() as server:               # or the fixtures in tests/support/fixtures.py
        client = AsyncOpenAI(base_url=server.url, api_key="sk-test")   # server.url ends with /v1

Endpoints
---------
``POST /v1/chat/completions``
    Answers are scripted per test: ``server.script(Reply.text("hi"), Reply.error(500), ...)`` queues
    replies, consumed one per request (a queue per model with ``script(..., model="m")``, tried before
    the shared one). When the queues are empty: ``server.responder(request_json) -> Reply`` if set, else
    ``server.default_reply`` if set, else HTTP 500 "no scripted reply" (counted in ``server.unscripted``).
    ``stream=true`` answers as server-sent events (chunks of ``Reply.chunk_size`` characters, a last
    chunk with the finish reason, then ``data: [DONE]``).
    Failures: ``Reply.error(status, retry_after=...)``, ``Reply.rate_limited(retry_after)`` (429 +
    Retry-After), ``Reply.slow(seconds, ...)`` (answers after a delay; gives up when the client
    disconnects), ``Reply.cut(text, after_chunks)`` (a stream cut halfway: the connection is dropped).
``POST /v1/embeddings``
    Deterministic vectors, no script needed: for each text, the L2-normalised sum of one pseudo-random
    Gaussian vector per lowercased word (``\\w+``; the whole text when it has no word), each seeded by
    the SHA-256 of the word. Identical texts give identical vectors; texts sharing words are close.
    ``dimensions`` (default :data:`DEFAULT_EMBEDDING_DIMENSIONS`) sets the size; ``encoding_format``
    ``float`` or ``base64`` (float32 little-endian, what the openai SDK asks for by default). Inputs: a
    string or a list of strings (token arrays get HTTP 400). :func:`fake_embedding` computes the same
    vector in the test. Failures can be scripted with ``server.script(Reply.error(500), endpoint="embeddings")``;
    a scripted ``Reply`` with status 200 just lets the request through (after its ``delay``).
``GET /v1/models``
    The names in ``server.models``.

Every request is logged in ``server.requests`` (:class:`RecordedRequest`: path, headers, parsed JSON
body); ``server.max_in_flight`` is the most requests handled at once since the last ``reset()``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["DEFAULT_EMBEDDING_DIMENSIONS", "FakeOpenAI", "RecordedRequest", "Reply", "fake_embedding"]

DEFAULT_EMBEDDING_DIMENSIONS = 1536
_WORD = re.compile(r"\w+", re.UNICODE)


# --- embeddings -------------------------------------------------------------------------------------


def _word_vector(word: str, dimensions: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dimensions)


def fake_embedding(text: str, dimensions: int = DEFAULT_EMBEDDING_DIMENSIONS) -> list[float]:
    """The vector the fake server returns for ``text`` (float32 values as Python floats)."""
    words = _WORD.findall(text.lower()) or [text]
    total = np.zeros(dimensions)
    for w in words:
        total += _word_vector(w, dimensions)
    norm = float(np.linalg.norm(total)) or 1.0
    return (total / norm).astype(np.float32).tolist()


# --- scripted replies -------------------------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer (or failure) of the fake server."""

    content: str = ""
    status: int = 200
    message: str | None = None  # error message for status != 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering; abandoned if the client disconnects meanwhile
    finish_reason: str = "stop"
    chunk_size: int = 8  # characters per streamed chunk
    chunk_delay: float = 0.0  # seconds between streamed chunks
    cut_after: int | None = None  # streamed chunks sent before the connection is dropped
    cut_mode: str = "abort"  # "abort": drop the connection; "eof": end the body cleanly, no finish, no [DONE]
    model: str | None = None  # model name reported (default: the one asked for)

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def json(cls, value: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(value, ensure_ascii=False), **kw)

    @classmethod
    def error(cls, status: int = 500, message: str | None = None, *, retry_after: float | None = None, **kw: Any) -> Reply:
        headers = dict(kw.pop("headers", {}))
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        return cls(status=status, message=message or f"fake server error {status}", headers=headers, **kw)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0, **kw: Any) -> Reply:
        return cls.error(429, "Rate limit reached (fake)", retry_after=retry_after, **kw)

    @classmethod
    def slow(cls, seconds: float, content: str = "too late", **kw: Any) -> Reply:
        return cls(content=content, delay=seconds, **kw)

    @classmethod
    def cut(cls, content: str, after_chunks: int = 2, *, mode: str = "abort", **kw: Any) -> Reply:
        return cls(content=content, cut_after=after_chunks, cut_mode=mode, **kw)


@dataclass
class RecordedRequest:
    """A request the fake server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float  # time.monotonic()
    disconnected: bool = False  # the client went away before the answer was complete

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream")) if isinstance(self.body, dict) else False

    @property
    def system_prompt(self) -> str:
        return "\n".join(m.get("content") or "" for m in self.messages if m.get("role") in ("system", "developer"))

    @property
    def last_user_message(self) -> str:
        users = [m.get("content") or "" for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


class _Cut(Exception):
    """Raised inside a streaming body to drop the connection."""


class FakeOpenAI:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, *, models: Iterable[str] = ("fake-model",), host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.models = list(models)
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.default_reply: Reply | None = None
        self.requests: list[RecordedRequest] = []
        self.unscripted = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._queues: dict[tuple[str, str | None], deque[Reply]] = {}
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- control from the test -------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (``http://127.0.0.1:PORT/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def script(self, *replies: Reply, model: str | None = None, endpoint: str = "chat") -> FakeOpenAI:
        """Queue replies for ``endpoint`` ("chat" or "embeddings"), optionally for one model only."""
        if endpoint not in ("chat", "embeddings"):
            raise ValueError("endpoint must be 'chat' or 'embeddings'")
        with self._lock:
            self._queues.setdefault((endpoint, model), deque()).extend(replies)
        return self

    def pending(self, endpoint: str = "chat") -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return sum(len(q) for (ep, _), q in self._queues.items() if ep == endpoint)

    def reset(self) -> None:
        """Forget the script, the log and the counters (between tests)."""
        with self._lock:
            self._queues.clear()
            self.requests.clear()
            self.responder = None
            self.default_reply = None
            self.unscripted = 0
            self.max_in_flight = self.in_flight

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in list(self.requests) if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        return [r for r in list(self.requests) if r.path.endswith("/embeddings")]

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        if self._server is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app(),
            log_level="critical",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
            ws="none",
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"fake-openai-{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the fake OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the app -----------------------------------------------------------------------------------
    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _record(self, request: Request) -> RecordedRequest:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rec = RecordedRequest(
            method=request.method,
            path=request.url.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        with self._lock:
            self.requests.append(rec)
        return rec

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _next_reply(self, endpoint: str, body: Any) -> Reply | None:
        model = body.get("model") if isinstance(body, dict) else None
        with self._lock:
            for key in ((endpoint, model), (endpoint, None)):
                queue = self._queues.get(key)
                if queue:
                    return queue.popleft()
        if endpoint != "chat":
            return None
        if self.responder is not None:
            return self.responder(body)
        if self.default_reply is not None:
            return self.default_reply
        with self._lock:
            self.unscripted += 1
        return Reply.error(500, "fake server: no scripted reply left")

    async def _wait(self, request: Request, rec: RecordedRequest, seconds: float) -> bool:
        """Sleep ``seconds`` unless the client disconnects first. True if it is still there."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            await asyncio.sleep(min(0.02, left))
            if await request.is_disconnected():
                rec.disconnected = True
                return False

    @staticmethod
    def _error(reply: Reply) -> JSONResponse:
        kind = (
            "rate_limit_exceeded" if reply.status == 429 else "server_error" if reply.status >= 500 else "invalid_request_error"
        )
        return JSONResponse(
            {"error": {"message": reply.message or "error", "type": kind, "param": None, "code": None}},
            status_code=reply.status,
            headers=reply.headers,
        )

    async def _chat(self, request: Request) -> Response:
        rec = await self._record(request)
        body = rec.body if isinstance(rec.body, dict) else {}
        self._enter()
        streaming = False
        try:
            if not isinstance(rec.body, dict) or not isinstance(body.get("messages"), list):
                return self._error(Reply.error(400, "messages is required"))
            reply = self._next_reply("chat", body)
            assert reply is not None
            if reply.delay and not await self._wait(request, rec, reply.delay):
                return Response(status_code=499)
            if reply.status != 200:
                return self._error(reply)
            model = reply.model or body.get("model") or "fake-model"
            with self._lock:
                self._counter += 1
                ident = f"chatcmpl-fake-{self._counter}"
            if body.get("stream"):
                streaming = True
                return StreamingResponse(
                    self._sse(rec, reply, model, ident),
                    media_type="text/event-stream",
                    headers=reply.headers,
                )
            prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
            completion_tokens = len(reply.content.split())
            return JSONResponse(
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.content},
                            "finish_reason": reply.finish_reason,
                            "logprobs": None,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
                headers=reply.headers,
            )
        finally:
            if not streaming:
                self._leave()

    async def _sse(self, rec: RecordedRequest, reply: Reply, model: str, ident: str) -> AsyncIterator[bytes]:
        created = int(time.time())

        def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
            chunk = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            }
            return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()

        try:
            yield event({"role": "assistant", "content": ""})
            text, size = reply.content, max(1, reply.chunk_size)
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            for n, piece in enumerate(pieces):
                if reply.cut_after is not None and n >= reply.cut_after:
                    break
                if reply.chunk_delay:
                    await asyncio.sleep(reply.chunk_delay)
                yield event({"content": piece})
            if reply.cut_after is not None:
                rec.disconnected = True
                if reply.cut_mode == "abort":
                    raise _Cut("stream cut by the script")
                return
            yield event({}, reply.finish_reason)
            yield b"data: [DONE]\n\n"
        finally:
            self._leave()

    async def _embeddings(self, request: Request) -> Response:
        rec = await self._record(request)
        self._enter()
        try:
            body = rec.body if isinstance(rec.body, dict) else {}
            reply = self._next_reply("embeddings", body)
            if reply is not None:
                if reply.delay and not await self._wait(request, rec, reply.delay):
                    return Response(status_code=499)
                if reply.status != 200:
                    return self._error(reply)
            raw = body.get("input")
            texts = [raw] if isinstance(raw, str) else raw
            if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
                return self._error(Reply.error(400, "input must be a string or a non-empty list of strings"))
            dimensions = body.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS
            if not isinstance(dimensions, int) or not 1 <= dimensions <= 8192:
                return self._error(Reply.error(400, "dimensions must be an integer within 1..8192"))
            fmt = body.get("encoding_format") or "float"
            data = []
            for i, t in enumerate(texts):
                vec = fake_embedding(t, dimensions)
                emb: Any = base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode("ascii") if fmt == "base64" else vec
                data.append({"object": "embedding", "index": i, "embedding": emb})
            tokens = sum(len(_WORD.findall(t)) or 1 for t in texts)
            return JSONResponse(
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model") or "fake-embedding",
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                }
            )
        finally:
            self._leave()

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models],
            }
        )
