"""Authentication: the API key of a request becomes the :class:`Scope` it runs in.

A key is sent as ``Authorization: Bearer dck_...`` or ``X-API-Key: dck_...``. With authentication
off (``require_auth=False``, loopback addresses only), requests from loopback clients that name a
loopback ``Host`` run in the local scope and any other request is refused.

Routes depend on :data:`ReadScope` or :data:`WriteScope` (the latter also refuses read-only keys);
a route with neither is public (health only).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from deepcontext.core import DeepContext
from deepcontext.errors import AuthError, ConfigurationError
from deepcontext.server.net import host_name, is_loopback
from deepcontext.server.tenancy import Scope

__all__ = [
    "Ctx",
    "ReadScope",
    "ServerState",
    "WriteScope",
    "authenticate",
    "is_loopback",
    "local_scope",
    "scope_from_key",
]

_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer dck_...`")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key: `X-API-Key: dck_...`")


@dataclass
class ServerState:
    """What a running app holds: the engine (one per process) and the auth settings."""

    ctx: DeepContext | None
    require_auth: bool
    local_tenant: str | None


def _state(request: Request) -> ServerState:
    state = getattr(request.app.state, "deepcontext", None)
    if not isinstance(state, ServerState) or state.ctx is None:
        raise ConfigurationError("the server is starting or stopping")
    return state


def get_ctx(request: Request) -> DeepContext:
    """The process's DeepContext (opened in the app's lifespan)."""
    ctx = _state(request).ctx
    assert ctx is not None
    return ctx


async def scope_from_key(ctx: DeepContext, presented: str) -> Scope:
    """The scope of an API key's text; AuthError (401) if it is not an active key."""
    key = await asyncio.to_thread(ctx.store.keys.verify, presented, now=ctx.clock.now())
    return Scope.from_key(key)


def local_scope(request: Request, state: ServerState) -> Scope:
    """The scope of a request while authentication is off: loopback clients only, and only under a
    loopback ``Host`` (a page whose name an attacker made resolve to 127.0.0.1, DNS rebinding, names
    its own host)."""
    client = request.client.host if request.client else None
    if not is_loopback(client):
        raise AuthError("authentication is off: only loopback clients are served", status_code=403)
    if not is_loopback(host_name(request.headers.get("host", ""))):
        raise AuthError("authentication is off: only loopback host names are served", status_code=403)
    return Scope.local(state.local_tenant)


async def authenticate(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
    api_key: Annotated[str | None, Security(_header)] = None,
) -> Scope:
    """The scope of this request (dependency of every protected route)."""
    state = _state(request)
    if not state.require_auth:
        return local_scope(request, state)
    presented = bearer.credentials if bearer is not None else api_key
    if not presented:
        raise AuthError("missing API key (Authorization: Bearer <key> or X-API-Key: <key>)", status_code=401)
    assert state.ctx is not None
    return await scope_from_key(state.ctx, presented)


async def _writer(scope: Annotated[Scope, Depends(authenticate)]) -> Scope:
    scope.check_write()
    return scope


#: the engine of this process
Ctx = Annotated[DeepContext, Depends(get_ctx)]
#: the scope of a request that only reads
ReadScope = Annotated[Scope, Depends(authenticate)]
#: the scope of a request that writes (read-only keys get 403)
WriteScope = Annotated[Scope, Depends(_writer)]
