"""The web inspector at ``/ui``: what an agent remembers, why a search found it, where it came
from, how it changed. Server-rendered pages over the REST API's engine and authentication (see
:mod:`.security`); its own small stylesheet and script; no third-party assets, works offline.

Needs Jinja2 (in the ``server`` extra); without it the REST API runs without the inspector.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response

from deepcontext.errors import DeepContextError
from deepcontext.server.auth import ServerState

__all__ = ["PREFIX", "available", "favicon", "mount_inspector"]

log = logging.getLogger("deepcontext.server")

#: where the inspector is served
PREFIX = "/ui"

#: only our own stylesheet and script run; no page may be framed (a page on another port of this
#: host is same-site, so the cookies would reach a frame of it and its buttons could be clicked)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}


def favicon() -> bytes:
    """The inspector's icon (SVG)."""
    return (Path(__file__).parent / "static" / "favicon.svg").read_bytes()


def available() -> bool:
    return importlib.util.find_spec("jinja2") is not None


def create_inspector(state: ServerState) -> FastAPI:
    """The inspector as an ASGI app sharing ``state`` (engine and auth settings) with the API."""
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from deepcontext.server.inspector.activity_pages import router as activity_router
    from deepcontext.server.inspector.dashboard_pages import router as dashboard_router
    from deepcontext.server.inspector.graph_pages import router as graph_router
    from deepcontext.server.inspector.memory_pages import router as memory_router
    from deepcontext.server.inspector.pages import error_page, http_error_page, render, router
    from deepcontext.server.inspector.security import SignInRequired

    ui = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    ui.state.deepcontext = state
    ui.include_router(router)
    ui.include_router(memory_router)
    ui.include_router(activity_router)
    ui.include_router(dashboard_router)
    ui.include_router(graph_router)

    @ui.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    @ui.exception_handler(SignInRequired)
    async def sign_in(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SignInRequired)
        if request.method == "GET" and exc.message is None:
            # back to the page that was asked for once signed in (its path and query, under /ui)
            asked = request.url.path.removeprefix(request.scope.get("root_path", "")) or "/"
            asked += f"?{request.url.query}" if request.url.query else ""
            query = "" if asked == "/" else "?" + urlencode({"next": asked})
            return RedirectResponse(request.scope.get("root_path", "") + "/login" + query, status_code=303)
        return render(request, None, "login.html", status_code=401, message=exc.message or "sign in first", next_page=None)

    @ui.exception_handler(DeepContextError)
    async def failed(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DeepContextError)
        page = error_page(request, exc)
        if page.status_code >= 500:
            log.error("inspector request %s failed: %s: %s", request.url.path, type(exc).__name__, exc, exc_info=exc)
        return page

    @ui.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return http_error_page(request, exc.status_code)

    @ui.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        where = ", ".join(".".join(str(p) for p in e.get("loc", ())[1:]) or "request" for e in exc.errors())
        from deepcontext.errors import ValidationError

        return error_page(request, ValidationError(f"invalid value for {where}"))

    return ui


def mount_inspector(app: FastAPI, state: ServerState) -> bool:
    """Serve the inspector under :data:`PREFIX` of ``app``; False when Jinja2 is missing."""
    if not available():
        log.info("the web inspector needs jinja2 (pip install 'deepcontext[server]'); /ui is off")
        return False
    # (``/ui`` itself is redirected to ``/ui/`` by the router)
    app.mount(PREFIX, create_inspector(state))
    return True
