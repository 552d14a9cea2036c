"""The inspector's pages: server-rendered HTML (Jinja2, autoescaped) over the same engine and scopes
as the REST API. Reads call the engine's methods where it has them (search, get, history, context,
lifecycle) and :mod:`.data` otherwise; writes are forms with a CSRF token that read-only keys never
see and the server refuses for them anyway. The memory pages are :mod:`.memory_pages`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import jinja2
from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from deepcontext.core import DeepContext
from deepcontext.errors import AuthError, DeepContextError, ReadOnlyDatabaseError, ValidationError
from deepcontext.lifecycle.decay import ACCESS_BONUS
from deepcontext.server.auth import get_ctx
from deepcontext.server.inspector import data
from deepcontext.server.inspector.security import (
    auth_required,
    check_csrf,
    csrf_token,
    inspector_scope,
    keep_csrf,
    set_session_cookie,
    sign_in,
    sign_out,
)
from deepcontext.server.inspector.svg import curve_plot, dag_layout
from deepcontext.server.schemas import MAX_INT64
from deepcontext.server.tenancy import Scope
from deepcontext.services.activity import calls_from
from deepcontext.types import MemoryStatus, MemoryTier

__all__ = ["STATIC", "TEMPLATES", "router"]

HERE = Path(__file__).parent
STATIC = HERE / "static"
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(HERE / "templates")),
    autoescape=True,  # every page shows user input: memory text, turns, entity names
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

router = APIRouter()
UiScope = Annotated[Scope, Depends(inspector_scope)]
Ctx = Annotated[DeepContext, Depends(get_ctx)]
MemoryId = Annotated[int, PathParam(ge=1, le=MAX_INT64)]

#: the most nodes a conversation's picture shows
MAX_DAG_NODES = 400


def _fmt_time(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else ""


TEMPLATES.filters["when"] = _fmt_time
TEMPLATES.filters["num"] = lambda v, d=3: "" if v is None else f"{v:.{d}f}"


def render(request: Request, scope: Scope | None, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    base = request.scope.get("root_path", "").rstrip("/")

    def url(path: str, **params: Any) -> str:
        clean = {k: v for k, v in params.items() if v not in (None, "", [])}
        return f"{base}{path}" + (f"?{urlencode(clean, doseq=True)}" if clean else "")

    html = TEMPLATES.get_template(name).render(
        url=url,
        scope=scope,
        can_write=scope is not None and not scope.read_only,
        signed_in=auth_required(request),
        csrf=csrf_token(request),
        page=name.removesuffix(".html"),
        user=values.pop("user", None),
        **values,
    )
    response = HTMLResponse(html, status_code=status_code)
    keep_csrf(request, response)
    response.headers["Cache-Control"] = "no-store"
    return response


def _user(scope: Scope, user: str | None) -> tuple[str, str] | None:
    """(external, stored) id of the ``user`` query parameter (403 outside the scope), None without."""
    if not user:
        return None
    return user, scope.user(user, "user")


async def _need_user(
    request: Request, ctx: DeepContext, scope: Scope, user: str | None, page: str
) -> tuple[str, str] | HTMLResponse:
    """The user asked for, or a page to pick one (a page of users at a time, like the users list)."""
    picked = _user(scope, user)
    if picked is not None:
        return picked
    after = request.query_params.get("after") or None
    found = await ctx.users(tenant=scope.tenant, after=scope.stored(after, "after") if after else None, limit=USERS_PER_PAGE)
    users = [scope.external(u) for u in found if scope.owns(u)]
    return render(
        request, scope, "pick.html", users=users, target=page,
        next_after=scope.external(found[-1]) if len(found) == USERS_PER_PAGE else None,
    )  # fmt: skip


# --- sign-in ----------------------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str | None = None) -> HTMLResponse:  # noqa: A002 - the usual name
    """The sign-in form (the key is posted, never put in a URL); ``next``: the page to open after."""
    return render(request, None, "login.html", message=None, next_page=_next_page(next))


def _next_page(value: object) -> str | None:
    """A page of the inspector to return to after signing in: a path under it (with its query),
    never another site (``//host``, a scheme, a backslash), nor the sign-in pages themselves."""
    if not isinstance(value, str) or not value.startswith("/") or len(value) > 2000:
        return None
    if value.startswith("//") or "\\" in value or any(ord(ch) < 32 for ch in value):
        return None
    path = value.split("?", 1)[0]
    if path in ("/login", "/logout") or ":" in path:
        return None
    return value


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, ctx: Ctx) -> Response:
    """Check the key and open a session; the cookie holds the session's id, never the key."""
    form = await request.form()
    check_csrf(request, form)
    key = form.get("key")
    next_page = _next_page(form.get("next"))
    if not isinstance(key, str) or not key.strip():
        return render(request, None, "login.html", status_code=401, message="enter an API key", next_page=next_page)
    try:
        session = await sign_in(ctx, key.strip())
    except AuthError:
        return render(request, None, "login.html", status_code=401, message="that key is not valid", next_page=next_page)
    except ReadOnlyDatabaseError:
        message = "this database is read-only, so no sign-in can be recorded: run `deepcontext ui` on this machine instead"
        return render(request, None, "login.html", status_code=503, message=message, next_page=next_page)
    response = RedirectResponse(request.scope.get("root_path", "") + (next_page or "/"), status_code=303)
    set_session_cookie(request, response, session)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End this browser's session, on the server and in the cookie."""
    check_csrf(request, await request.form())
    await sign_out(request)
    response = RedirectResponse(request.scope.get("root_path", "") + "/login", status_code=303)
    set_session_cookie(request, response, None)
    return response


@router.get("/static/{name}")
async def static(name: str) -> Response:
    """The inspector's own stylesheet and script (no third-party code)."""
    media = {"inspector.css": "text/css", "inspector.js": "text/javascript", "favicon.svg": "image/svg+xml"}
    if name not in media:
        return Response(status_code=404)
    return Response((STATIC / name).read_bytes(), media_type=media[name], headers={"Cache-Control": "max-age=300"})


# --- users ------------------------------------------------------------------------------------------


#: users per page of the users list (each row counts the user's memories, turns and entities)
USERS_PER_PAGE = 100


@router.get("/", response_class=HTMLResponse)
async def users_page(request: Request, scope: UiScope, ctx: Ctx, after: str | None = None) -> HTMLResponse:
    """The users this key sees, a page at a time in id order, with their counts and last activity;
    ``after``: the ids after this one (a page's last id, or where to start)."""
    after = after.strip() if after else None
    start = scope.stored(after, "after") if after else None
    found = await ctx.users(tenant=scope.tenant, after=start, limit=USERS_PER_PAGE)
    stored = [u for u in found if scope.owns(u)]
    summaries = await asyncio.to_thread(data.user_summaries, ctx.store, stored)
    rows = [(scope.external(s.user_id), s) for s in summaries]
    return render(
        request, scope, "users.html", rows=rows, tiers=[t.value for t in MemoryTier], statuses=[s.value for s in MemoryStatus],
        deleted=request.query_params.get("deleted"), after=after or "",
        next_after=scope.external(found[-1]) if len(found) == USERS_PER_PAGE else None,
    )  # fmt: skip


async def _write_form(request: Request, scope: Scope) -> tuple[Any, str, str]:
    """The form of a write: CSRF checked, a writing key, the user in scope."""
    form = await request.form()
    check_csrf(request, form)
    scope.check_write()
    user = form.get("user")
    picked = _user(scope, user if isinstance(user, str) else None)
    if picked is None:
        raise ValidationError("user is required", field="user")
    return form, picked[0], picked[1]


# --- conversations ----------------------------------------------------------------------------------


@router.get("/conversations", response_class=HTMLResponse)
async def conversations_page(
    request: Request,
    scope: UiScope,
    ctx: Ctx,
    user: str | None = None,
    conversation: str | None = None,
    node: int | None = None,
    upto: int | None = None,
    after: int | None = None,
) -> HTMLResponse:
    """A user's conversations; one conversation's DAG (branches, merges, summaries), a node's text.
    Long conversations page by windows of turns: older (``upto``), newer (``after``); a link to a
    turn (``node``) opens the window around it."""
    picked = await _need_user(request, ctx, scope, user, "/conversations")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    store = ctx.store

    def build() -> dict[str, Any]:
        convs = data.conversations(store, uid)
        if not conversation:
            return {"convs": convs, "nodes": [], "total": 0, "selected": None, "lanes": 0, "rows": 0, "edges": []}
        around = node if node is not None and upto is None and after is None else None
        win = data.conversation_dag(store, uid, conversation, MAX_DAG_NODES, upto=upto, after=after, around=around)
        nodes, total = win.nodes, win.total
        place, lanes, rows = dag_layout(nodes)
        placed: list[dict[str, Any]] = [{"n": n, "x": 30 + place[n.id][0] * 46, "y": 24 + place[n.id][1] * 34} for n in nodes]
        at = {n.id: p for n, p in zip(nodes, placed, strict=True)}
        edges = [(at[p], at[n.id]) for n in nodes for p in n.parents if p in at]
        summary_edges = [(at[n.id], at[s]) for n in nodes for s in n.summary_of if s in at]
        selected = next((n for n in nodes if n.id == node), None)
        return {"convs": convs, "nodes": placed, "total": total, "selected": selected, "lanes": lanes, "rows": rows,
                "edges": edges, "summary_edges": summary_edges, "older": win.before, "newer": win.after,
                "first_id": nodes[0].id if nodes else None, "last_id": nodes[-1].id if nodes else None}  # fmt: skip

    view = await asyncio.to_thread(build)
    view.setdefault("summary_edges", [])
    return render(request, scope, "conversations.html", user=ext, conversation=conversation or "", node=node, **view)


# --- lifecycle --------------------------------------------------------------------------------------


async def _lifecycle(request: Request, scope: Scope, ctx: DeepContext, ext: str, uid: str, report: Any = None) -> HTMLResponse:
    pv = await asyncio.to_thread(data.lifecycle_preview, ctx.store, ctx.settings, uid, ctx.clock.now())
    plot = curve_plot(pv.curves, threshold=pv.policy.min_importance)
    texts = {}
    ids: list[int] = [c["id"] for c in pv.curves] + [d["id"] for d in pv.would_deactivate[:20]]
    if ids:
        texts = {m.id: m.text for m in await asyncio.to_thread(ctx.store.get_memories, uid, ids, details=False)}
    return render(request, scope, "lifecycle.html", user=ext, pv=pv, plot=plot, texts=texts, report=report,
                  half_lives=pv.policy.table(), access_bonus=ACCESS_BONUS)  # fmt: skip


#: the lifecycle report's counts travel to the result page in its query string, prefixed
_RAN = "ran_"


@router.get("/lifecycle", response_class=HTMLResponse)
async def lifecycle_page(request: Request, scope: UiScope, ctx: Ctx, user: str | None = None) -> HTMLResponse:
    """The forgetting curves and what the next run would decay, consolidate and purge (after a run:
    its report, from the query string of the redirect)."""
    picked = await _need_user(request, ctx, scope, user, "/lifecycle")
    if isinstance(picked, HTMLResponse):
        return picked
    ran = {k.removeprefix(_RAN): v for k, v in request.query_params.items() if k.startswith(_RAN)}
    return await _lifecycle(request, scope, ctx, *picked, report=ran or None)


@router.post("/lifecycle/run")
async def lifecycle_run(request: Request, scope: UiScope, ctx: Ctx) -> Response:
    """Run the lifecycle of the user now (as POST /v1/lifecycle/run), then redirect to the page
    showing its report: a refresh shows it again and runs nothing."""
    _, ext, uid = await _write_form(request, scope)
    report = await ctx.run_lifecycle(uid)
    counts = {f"{_RAN}{k}": v for k, v in report.items() if k != "user_id" and isinstance(v, int | float | str) and v != ""}
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/lifecycle?{urlencode({'user': ext, **counts})}", status_code=303)


# --- context preview --------------------------------------------------------------------------------


@router.get("/context", response_class=HTMLResponse)
async def context_page(
    request: Request,
    scope: UiScope,
    ctx: Ctx,
    user: str | None = None,
    q: str | None = None,
    budget: int = 2000,
    conversation: str | None = None,
) -> HTMLResponse:
    """Exactly what ``context()`` gives the next prompt for a query and budget, part by part."""
    picked = await _need_user(request, ctx, scope, user, "/context")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    result = None
    if q and q.strip():
        with calls_from("inspector"):
            result = await ctx.context(q, uid, conversation or None, budget_tokens=budget, track_access=False)
    return render(
        request, scope, "context.html", user=ext, q=q or "", budget=budget, conversation=conversation or "", result=result
    )


def error_page(request: Request, exc: DeepContextError) -> HTMLResponse:
    from deepcontext.server.problems import classify

    status, _, detail = classify(exc)
    return render(request, None, "error.html", status_code=status, status=status, detail=detail, back=_back(request))


def http_error_page(request: Request, status: int) -> HTMLResponse:
    """An HTML page for an HTTP error of the inspector's own routing (an unknown /ui/ address)."""
    detail = "no such page" if status == 404 else HTTPStatus(status).phrase.lower()
    return render(request, None, "error.html", status_code=status, status=status, detail=detail, back=_back(request))


def _back(request: Request) -> str:
    """The page the reader came from when it is one of ours (the Referer, same host), else the users
    page: a real link, as the Content-Security-Policy refuses ``javascript:`` ones."""
    from urllib.parse import urlsplit

    base = request.scope.get("root_path", "").rstrip("/")
    came = urlsplit(request.headers.get("referer", ""))
    if came.netloc == request.url.netloc and came.path.startswith(base + "/") and came.scheme in ("http", "https"):
        return came.path + (f"?{came.query}" if came.query else "")
    return base + "/"
