"""Who is looking: the inspector's sign-in and its CSRF check.

Keys and scopes are the REST API's; only the way the key travels differs. The sign-in form posts
the key once (never in a URL); the server checks it and opens a session (``store.keys.open_session``:
a random id, stored hashed, tied to the key, ending after :data:`SESSION_SECONDS`). The browser's
cookie holds the session id, never the key: ``HttpOnly``, ``SameSite=Strict``, limited to ``/ui``,
``Secure`` over HTTPS. Every request checks the session and its key, so signing out or revoking the
key ends it at once. Writes carry a CSRF token (double submit: a cookie of its own, repeated in
the form) and are refused from another ``Origin`` (``null`` included). With authentication off,
requests run in the local scope as in the REST API (:func:`~deepcontext.server.auth.local_scope`).
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request
from starlette.responses import Response

from deepcontext.errors import AuthError
from deepcontext.server.auth import ServerState, local_scope
from deepcontext.server.tenancy import Scope

__all__ = [
    "CSRF_COOKIE",
    "SESSION_COOKIE",
    "SignInRequired",
    "check_csrf",
    "csrf_token",
    "inspector_scope",
    "set_session_cookie",
    "sign_in",
    "sign_out",
]

SESSION_COOKIE = "dc_ui_session"
CSRF_COOKIE = "dc_ui_csrf"
COOKIE_PATH = "/ui"
#: a signed-in browser stays signed in for this long (the key itself may expire or be revoked sooner)
SESSION_SECONDS = 12 * 3600


class SignInRequired(Exception):
    """No (valid) key: the page answers with the sign-in form."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "")
        self.message = message


def _state(request: Request) -> ServerState:
    state = getattr(request.app.state, "deepcontext", None)
    assert isinstance(state, ServerState)
    return state


def auth_required(request: Request) -> bool:
    return _state(request).require_auth


async def inspector_scope(request: Request) -> Scope:
    """The scope of an inspector request: the key in the sign-in cookie, or the local scope when
    authentication is off (loopback clients and Host names only)."""
    state = _state(request)
    if not state.require_auth:
        return local_scope(request, state)
    presented = request.cookies.get(SESSION_COOKIE)
    if not presented:
        raise SignInRequired()
    ctx = state.ctx
    assert ctx is not None
    try:
        key = await asyncio.to_thread(ctx.store.keys.session_key, presented, now=ctx.clock.now())
    except AuthError:
        raise SignInRequired("your session ended (signed out, expired or its key revoked): sign in again") from None
    return Scope.from_key(key)


def csrf_token(request: Request) -> str:
    """This browser's CSRF token (a new one when it has none; :func:`keep_csrf` stores it)."""
    token = request.cookies.get(CSRF_COOKIE)
    if not token or len(token) != 43:
        token = getattr(request.state, "new_csrf", None) or secrets.token_urlsafe(32)
        request.state.new_csrf = token
    return token


def keep_csrf(request: Request, response: Response) -> None:
    """Set the CSRF cookie on ``response`` when :func:`csrf_token` made a new token."""
    token = getattr(request.state, "new_csrf", None)
    if token:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path=COOKIE_PATH, secure=_secure(request))


def check_csrf(request: Request, form: Any) -> None:
    """Refuse a write whose form does not carry this browser's CSRF token, or whose Origin is another
    site's (403)."""
    origin = request.headers.get("origin")
    if origin:
        # the host alone: behind a proxy that ends TLS the scheme seen here is not the browser's
        if urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
            raise AuthError("cross-site request refused", status_code=403)
    cookie = request.cookies.get(CSRF_COOKIE, "")
    sent = form.get("csrf", "") if form is not None else ""
    if not cookie or not isinstance(sent, str) or not hmac.compare_digest(cookie.encode(), sent.encode()):
        raise AuthError("the form's CSRF token is missing or wrong: reload the page and try again", status_code=403)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


async def sign_in(ctx: Any, presented: str) -> str:
    """Check the key and open a session for it; returns the session id. AuthError (401) for a key
    that is not active."""
    scope_key = await asyncio.to_thread(ctx.store.keys.verify, presented, now=ctx.clock.now())
    return await asyncio.to_thread(ctx.store.keys.open_session, scope_key, now=ctx.clock.now(), seconds=SESSION_SECONDS)


async def sign_out(request: Request) -> None:
    """End this browser's session on the server (the cookie is removed by the response)."""
    token = request.cookies.get(SESSION_COOKIE)
    state = _state(request)
    if token and state.ctx is not None and state.require_auth:
        await asyncio.to_thread(state.ctx.store.keys.end_session, token)


def set_session_cookie(request: Request, response: Response, session: str | None) -> None:
    """Keep ``session`` in the browser (None: remove it)."""
    if session is None:
        response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict", secure=_secure(request))
        return
    response.set_cookie(
        SESSION_COOKIE,
        session,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        path=COOKIE_PATH,
        secure=_secure(request),
    )
