"""The app factory: ``create_app(settings | ctx)`` builds a FastAPI app with no global state.

One DeepContext per process, opened in the lifespan (or given ready-made). Middleware, outermost
first: CORS (only when ``cors_origins`` is set), request id + last-resort 500, body size limit.
Errors are problem details (:mod:`deepcontext.server.problems`); routes live in
:mod:`deepcontext.server.routes`, one module per resource; the web inspector is mounted at ``/ui``
(:mod:`deepcontext.server.inspector`).

``create_app_from_env`` is the factory uvicorn workers call (``deepcontext serve`` passes the
settings to them through ``DEEPCONTEXT_*`` environment variables).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi_offline import FastAPIOffline

import deepcontext
from deepcontext.core import DeepContext
from deepcontext.errors import ConfigurationError
from deepcontext.server.auth import ServerState, is_loopback
from deepcontext.server.inspector import PREFIX, favicon, mount_inspector
from deepcontext.server.middleware import BodyLimitMiddleware, RequestContextMiddleware
from deepcontext.server.problems import install_handlers
from deepcontext.server.routes import include_routers
from deepcontext.server.tenancy import check_tenant
from deepcontext.settings import DeepContextSettings

__all__ = ["check_bind", "create_app", "create_app_from_env"]

log = logging.getLogger("deepcontext.server")

DESCRIPTION = """Memory for AI agents over HTTP.

Authenticate with an API key (`deepcontext keys create --tenant T`): `Authorization: Bearer dck_...`
or `X-API-Key: dck_...`. A key belongs to a tenant and sees only that tenant's users (optionally only
some of them, optionally read-only). Errors are RFC 9457 problem details.
"""


def check_bind(host: str, require_auth: bool) -> None:
    """Refuse to serve without authentication anywhere but a loopback address."""
    if not require_auth and not is_loopback(host):
        raise ConfigurationError(
            f"refusing to serve without authentication on {host!r}: without API keys the server only "
            "binds a loopback address (127.0.0.1, ::1, localhost); create a key with "
            "`deepcontext keys create --tenant T` and drop --no-auth / require_auth=false"
        )


def create_app(config: DeepContextSettings | DeepContext | None = None) -> FastAPI:
    """The REST API over one DeepContext.

    ``config`` is the settings to open a DeepContext with in the lifespan (default: from the
    environment), or a DeepContext (initialised in the lifespan if needed; its owner closes it).
    """
    if isinstance(config, DeepContext):
        given: DeepContext | None = config
        settings = config.settings
    else:
        given = None
        settings = config if config is not None else DeepContextSettings()
    check_bind(settings.server_host, settings.require_auth)
    local_tenant = check_tenant(settings.local_tenant) if settings.local_tenant is not None else None
    state = ServerState(ctx=None, require_auth=settings.require_auth, local_tenant=local_tenant)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ctx = given if given is not None else DeepContext(settings=settings)
        await ctx.init()
        if settings.warm_up_embedder:
            await asyncio.to_thread(ctx.embedder.warm_up)  # ready means the first search need not load a model
        state.ctx = ctx
        try:
            yield
        finally:
            state.ctx = None
            if given is None:
                await ctx.close()

    # /docs (Swagger UI) and /redoc with their scripts served from a package, never a CDN
    app = FastAPIOffline(
        static_url="/docs-assets",
        title="DeepContext API",
        description=DESCRIPTION,
        version=deepcontext.__version__,
        lifespan=lifespan,
    )
    app.state.deepcontext = state
    install_handlers(app)
    include_routers(app)
    inspector = mount_inspector(app, state)
    add_front_door(app, inspector=inspector)
    # add_middleware puts each new one outside the previous ones
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    if settings.metrics_enabled:
        from deepcontext.server.metrics import install_metrics

        install_metrics(app)
    app.add_middleware(RequestContextMiddleware)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-API-Key"],
            expose_headers=["X-Request-ID"],
            allow_credentials=False,
        )
    return app


def create_app_from_env() -> FastAPI:
    """The app with settings read from the environment now (uvicorn ``--factory`` entry point)."""
    return create_app(DeepContextSettings())


def add_front_door(app: FastAPI, *, inspector: bool) -> None:
    """``/``: a browser goes to the inspector, another client learns where the API is described;
    ``/favicon.ico`` the inspector's icon (public, like health: they say nothing about any user)."""

    @app.get("/", include_in_schema=False)
    async def front(request: Request) -> Response:
        if inspector and "text/html" in request.headers.get("accept", ""):
            return RedirectResponse(PREFIX + "/", status_code=307)
        return JSONResponse(
            {"api": "/v1", "docs": "/docs", "openapi": "/openapi.json", "inspector": PREFIX + "/" if inspector else None}
        )

    @app.get("/favicon.ico", include_in_schema=False)
    async def icon() -> Response:
        return Response(favicon(), media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})
