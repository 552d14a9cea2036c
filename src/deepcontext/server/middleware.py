"""ASGI middleware of the REST API: request ids with a last-resort 500, and the body size limit."""

from __future__ import annotations

import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from deepcontext.server.logs import current_request_id, request_id_for
from deepcontext.server.problems import problem_response

__all__ = ["BodyLimitMiddleware", "RequestContextMiddleware"]

log = logging.getLogger("deepcontext.server")


class RequestContextMiddleware:
    """Gives every request an id (the client's ``X-Request-ID`` when it is a safe token, else a new
    one; on the response, in ``request.state.request_id`` and on every record logged meanwhile) and
    turns any exception that escaped the handlers into a generic problem-details 500: the client
    gets the request id, the log gets the traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id_for(scope.get("headers", ()))
        scope.setdefault("state", {})["request_id"] = rid
        token = current_request_id.set(rid)
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"x-request-id" for k, _ in headers):
                    headers.append((b"x-request-id", rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:  # the last resort: nothing internal reaches the client
            log.error("request %s %s %s failed", rid, scope.get("method"), scope.get("path"), exc_info=exc)
            if started:
                raise
            response = problem_response(500, "internal server error", kind="internal-error", request_id=rid)
            await response(scope, receive, send)
        finally:
            current_request_id.reset(token)


class BodyLimitMiddleware:
    """Refuses request bodies over ``max_bytes`` with 413, whether announced by Content-Length or
    streamed in chunks (the body is read up to the limit before the app sees it)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k.lower() == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    await self._refuse(scope, receive, send, 400, "invalid Content-Length")
                    return
                if declared > self.max_bytes:
                    await self._refuse(scope, receive, send, 413, None)
                    return
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            total += len(body)
            if total > self.max_bytes:
                await self._refuse(scope, receive, send, 413, None)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        buffered: dict[str, Any] | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> Message:
            nonlocal buffered
            if buffered is not None:
                out, buffered = buffered, None
                return out
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, detail: str | None) -> None:
        rid = scope.get("state", {}).get("request_id")
        if detail is None:
            detail = f"the request body is larger than {self.max_bytes} bytes (setting max_body_bytes)"
        await problem_response(status, detail, kind="body-too-large" if status == 413 else None, request_id=rid)(
            scope, receive, send
        )
