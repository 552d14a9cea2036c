"""Errors as RFC 9457 problem details (``application/problem+json``), never a stack trace.

Every error response is ``{"type", "title", "status", "detail", "request_id"}`` (plus ``errors`` for
a request that does not fit the schema, with the offending input left out). DeepContextError
subclasses map to 4xx/5xx here; anything unexpected becomes a generic 500 whose only detail is the
request id, under which the server logs the traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Mount

from deepcontext.errors import (
    AuthError,
    ConfigurationError,
    ConversationNotFoundError,
    CyclicGraphError,
    DeepContextError,
    DiskFullError,
    EmbeddingError,
    EntityNotFoundError,
    ExtractionError,
    LLMError,
    LockTimeoutError,
    MemoryNotFoundError,
    NotFoundError,
    ReadOnlyDatabaseError,
    StorageError,
    TurnNotFoundError,
    ValidationError,
    WriteConflictError,
)
from deepcontext.server.schemas import PATTERN_HINTS

__all__ = [
    "PROBLEM_JSON",
    "PROBLEM_RESPONSES",
    "Problem",
    "classify",
    "install_handlers",
    "problem_response",
    "request_id_of",
]

log = logging.getLogger("deepcontext.server")

PROBLEM_JSON = "application/problem+json"
_TYPE = "urn:deepcontext:problem:"


class Problem(BaseModel):
    """An RFC 9457 problem details object."""

    type: str = Field(description="A URI naming the kind of problem")
    title: str = Field(description="Short summary of the kind of problem")
    status: int = Field(description="The HTTP status code")
    detail: str | None = Field(default=None, description="What went wrong this time")
    request_id: str | None = Field(default=None, description="Quote it when reporting a server error")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Schema violations (422 only)")


def _content(description: str) -> dict[str, Any]:
    return {"description": description, "model": Problem, "content": {PROBLEM_JSON: {}}}


#: the error responses every protected route may return, for the OpenAPI document
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _content("Invalid input"),
    401: _content("Missing, wrong or revoked API key"),
    403: _content("The API key may not do this"),
    404: _content("No such resource for this user"),
    409: _content("Conflict with the current state"),
    413: _content("Request body too large"),
    422: _content("The request does not fit the schema"),
    500: _content("Unexpected server error"),
    503: _content("The database or a model backend is unavailable, or the database is read-only"),
    507: _content("Disk full: the database's disk has no space left"),
}


def problem_response(
    status: int,
    detail: str | None = None,
    *,
    kind: str | None = None,
    title: str | None = None,
    request_id: str | None = None,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    """A ``application/problem+json`` response."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    body: dict[str, Any] = {
        "type": _TYPE + (kind or phrase.lower().replace(" ", "-").replace("'", "")),
        "title": title or phrase,
        "status": status,
        "detail": detail,
        "request_id": request_id,
    }
    if errors is not None:
        body["errors"] = errors
    hdrs = dict(headers or {})
    if status == 401:
        hdrs.setdefault("WWW-Authenticate", 'Bearer realm="deepcontext"')
    if request_id:
        hdrs.setdefault("X-Request-ID", request_id)
    return JSONResponse(body, status_code=status, headers=hdrs, media_type=PROBLEM_JSON)


def classify(exc: DeepContextError) -> tuple[int, str, str]:
    """``(status, kind, detail)`` for a deepcontext error; the detail is safe to show to a client
    (ids are the caller's own; nothing from the database, a model backend or the stack)."""
    if isinstance(exc, AuthError):
        return exc.status_code, "unauthorized" if exc.status_code == 401 else "forbidden", str(exc)
    if isinstance(exc, MemoryNotFoundError):
        return 404, "not-found", f"memory {exc.memory_id} {MemoryNotFoundError.state(getattr(exc, 'status', None))}"
    if isinstance(exc, EntityNotFoundError):
        return 404, "not-found", f"entity {exc.entity_name!r} not found"
    if isinstance(exc, TurnNotFoundError):
        return 404, "not-found", f"turn {exc.turn_id} not found"
    if isinstance(exc, ConversationNotFoundError):
        return 404, "not-found", f"conversation {exc.conversation_id!r} not found"
    if isinstance(exc, NotFoundError):
        return 404, "not-found", "not found"
    if isinstance(exc, CyclicGraphError):
        return 409, "conflict", "this edge would make the conversation graph cyclic"
    if isinstance(exc, ValidationError):
        return 400, "invalid-input", str(exc)
    if isinstance(exc, LockTimeoutError):
        return 409, "busy", "another maintenance run holds this user's lock; try again later"
    if isinstance(exc, WriteConflictError):
        return (
            409,
            "conflict",
            "concurrent writes changed this user's memories while this write was planned; nothing was written; retry",
        )
    if isinstance(exc, DiskFullError):
        return 507, "disk-full", "disk full: the database's disk has no space left; nothing was written"
    if isinstance(exc, ReadOnlyDatabaseError):
        return 503, "read-only-database", "the database is read-only: nothing was written; reads work"
    if isinstance(exc, StorageError):
        return 503, "storage-unavailable", "the database failed; nothing was written; try again later"
    if isinstance(exc, (EmbeddingError, LLMError, ExtractionError)):
        return 503, "backend-unavailable", "a model backend failed; nothing was written; try again later"
    if isinstance(exc, ConfigurationError):
        return 503, "unavailable", "the service is not ready"
    return 500, "internal-error", "internal server error"


def request_id_of(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def _deepcontext_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DeepContextError)
    status, kind, detail = classify(exc)
    rid = request_id_of(request)
    if isinstance(exc, (StorageError, DiskFullError)):
        from deepcontext.server.metrics import database_error

        database_error(kind)
    if status >= 500:
        # a state of the database, not a fault of the code: no traceback
        known = isinstance(exc, (DiskFullError, ReadOnlyDatabaseError))
        log.error("request %s failed: %s: %s", rid, type(exc).__name__, exc, exc_info=None if known else exc)
    return problem_response(status, detail, kind=kind, request_id=rid)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": _message(e), "type": str(e.get("type", ""))} for e in exc.errors()
    ]
    first = errors[0] if errors else None
    detail = f"{'.'.join(first['loc'])}: {first['msg']}" if first else "invalid request"
    return problem_response(422, detail, kind="invalid-request", request_id=request_id_of(request), errors=errors)


def _message(error: Any) -> str:
    """pydantic's message, except for a pattern mismatch: what the value must not contain, rather
    than the internal regex."""
    if error.get("type") == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern"))
        return PATTERN_HINTS.get(pattern, "contains characters that are not allowed")
    return str(error.get("msg", ""))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else None
    phrase = HTTPStatus(exc.status_code).phrase if exc.status_code in HTTPStatus._value2member_map_ else None
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names the methods of the first route matching the path; a path has one route
        # per method here
        allowed = allowed_methods(request.app.routes, request.url.path)
        if allowed:
            headers["Allow"] = ", ".join(sorted(allowed))
    return problem_response(
        exc.status_code,
        None if detail == phrase else detail,
        request_id=request_id_of(request),
        headers=headers,
    )


def allowed_methods(routes: Sequence[Any], path: str) -> set[str]:
    """Every method some route serves at ``path`` (mounted apps included)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # older FastAPI: routes are flat already
        entries = [(r, getattr(r, "path_regex", None), getattr(r, "methods", None)) for r in routes]
    else:
        entries = [(rc.route, rc.path_regex, rc.methods) for rc in iter_route_contexts(routes)]
    found: set[str] = set()
    for route, regex, methods in entries:
        if isinstance(route, Mount):
            if path == route.path or path.startswith(route.path + "/"):
                found |= allowed_methods(route.routes, path[len(route.path) :] or "/")
        elif methods and regex is not None and regex.match(path):
            found |= set(methods)
    return found


def install_handlers(app: FastAPI) -> None:
    """Register the problem-details handlers on ``app``."""
    app.add_exception_handler(DeepContextError, _deepcontext_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
