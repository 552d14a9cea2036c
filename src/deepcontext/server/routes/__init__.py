"""The routers of the REST API, one module per resource.

A module exposes ``router`` (a FastAPI ``APIRouter``) and may define ``available() -> bool`` to be
left out when the engine lacks the capability. Adding a resource is adding a module and a line to
:data:`ROUTER_MODULES`; protect its routes with ``ReadScope`` / ``WriteScope`` from
:mod:`deepcontext.server.auth` (a test fails for any route that is neither protected nor listed as
public).
"""

from __future__ import annotations

import importlib

from fastapi import FastAPI

__all__ = ["ROUTER_MODULES", "include_routers"]

#: modules holding a ``router``, in the order they appear in the OpenAPI document
ROUTER_MODULES = [
    "deepcontext.server.routes.seed",
    "deepcontext.server.routes.seed_lifecycle",
    "deepcontext.server.routes.health",
    "deepcontext.server.routes.memories",
    "deepcontext.server.routes.search",
    "deepcontext.server.routes.context",
    "deepcontext.server.routes.graph",
    "deepcontext.server.routes.conversations",
    "deepcontext.server.routes.users",
    "deepcontext.server.routes.lifecycle",
    "deepcontext.server.routes.activity",
]


def include_routers(app: FastAPI) -> list[str]:
    """Include every available router; returns the modules included."""
    included = []
    for name in ROUTER_MODULES:
        module = importlib.import_module(name)
        available = getattr(module, "available", None)
        if available is not None and not available():
            continue
        app.include_router(module.router)
        included.append(name)
    return included
