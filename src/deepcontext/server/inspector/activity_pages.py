"""The inspector's activity pages: a user's recorded search and context calls, one call in full,
and "run it again now" with what changed (results gained, lost, moved)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse

from deepcontext.core import DeepContext
from deepcontext.retrieve.config import SearchConfig
from deepcontext.server.inspector.pages import Ctx, UiScope, _need_user, _user, render
from deepcontext.server.schemas import MAX_INT64
from deepcontext.services.activity import calls_from
from deepcontext.services.requests import ContextRequest, SearchRequest
from deepcontext.types import ActivityCall

__all__ = ["router"]

router = APIRouter()
CallId = Annotated[int, PathParam(ge=1, le=MAX_INT64)]
#: calls per page of the list
ACTIVITY_PAGE = 50


@router.get("/activity", response_class=HTMLResponse)
async def activity_page(
    request: Request,
    scope: UiScope,
    ctx: Ctx,
    user: str | None = None,
    kind: str | None = None,
    via: str | None = None,
    agent: str | None = None,
    run: str | None = None,
    conversation: str | None = None,
    after: str | None = None,
    before: str | None = None,
    cursor: str | None = None,
) -> HTMLResponse:
    """The user's recorded calls, newest first, with filters; each opens to its full record."""
    picked = await _need_user(request, ctx, scope, user, "/activity")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    form = {"kind": kind or "", "via": via or "", "agent": agent or "", "run": run or "", "conversation": conversation or "",
            "after": after or "", "before": before or ""}  # fmt: skip
    page = await ctx.activity(
        uid, kind=kind or None, via=via or None, agent_id=agent or None, run_id=run or None,
        conversation_id=conversation or None, after=after or None, before=before or None, limit=ACTIVITY_PAGE,
        cursor=cursor or None,
    )  # fmt: skip
    recording = ctx.settings.activity_log is not False
    return render(request, scope, "activity.html", user=ext, calls=page.calls, next_cursor=page.next_cursor, form=form,
                  first_page=not cursor, recording=recording)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Change:
    """How a result's place changed between the recorded call and the same call now."""

    memory_id: int
    text: str
    then: int | None
    now: int | None

    @property
    def kind(self) -> str:
        if self.then is None:
            return "gained"
        if self.now is None:
            return "lost"
        return "same" if self.then == self.now else ("up" if self.now < self.then else "down")


@router.get("/activity/{call_id}", response_class=HTMLResponse)
async def activity_call_page(
    request: Request, call_id: CallId, scope: UiScope, ctx: Ctx, user: str, again: bool = False
) -> HTMLResponse:
    """One recorded call: its parameters, its results or what its context included and left out;
    with ``again``, the same call run now beside it."""
    ext, uid = _user(scope, user) or ("", "")
    call = await ctx.activity_call(uid, call_id)
    changes = await _run_again(ctx, uid, call) if again else None
    return render(request, scope, "activity_call.html", user=ext, call=call, changes=changes)


def _ranked(call: ActivityCall) -> list[tuple[int, str]]:
    """The memories a recorded call returned, in order (a context: the memories it included)."""
    if call.kind == "search":
        return [(h.memory_id, h.text) for h in call.results]
    return [(i.memory_id, i.text) for i in call.included if i.memory_id is not None]


async def _run_again(ctx: DeepContext, uid: str, call: ActivityCall) -> list[Change]:
    p = call.params
    with calls_from("inspector"):  # a preview: never recorded, never counted as an access
        if call.kind == "search":
            res = await ctx.search(call.query, uid, track_access=False, **_search_args(p))
            now = [(r.memory_id, r.text) for r in res.results]
        else:
            got = await ctx.context(call.query, uid, p.get("conversation_id"), track_access=False, **_context_args(p))
            now = [(i.memory_id, i.text) for i in got.items if i.memory_id is not None]
    return _compare(_ranked(call), now)


#: a re-run passes a recorded call's parameters, by its request's fields, but these: the query and
#: user are given apart, and a re-run never counts access
_GIVEN_APART = {"query", "user_id", "track_access"}


def _search_args(p: dict[str, Any]) -> dict[str, Any]:
    names = [n for n in SearchRequest.model_fields if n not in _GIVEN_APART | {"config"}]  # config: below
    args = {k: p[k] for k in names if p.get(k) is not None}
    config = p.get("config")
    if isinstance(config, str):
        args["config"] = config
    elif isinstance(config, dict):
        args["config"] = SearchConfig.model_validate(config)
    return args


def _context_args(p: dict[str, Any]) -> dict[str, Any]:
    # the conversation's path is today's, not the call's (a re-run compares memories); a schema is code
    names = [n for n in ContextRequest.model_fields if n not in _GIVEN_APART | {"conversation_id", "schema_"}]
    return {k: p[k] for k in names if p.get(k) is not None}


def _compare(then: list[tuple[int, str]], now: list[tuple[int, str]]) -> list[Change]:
    """Each memory of either list once: in today's order, then the ones lost, in their old order."""
    old = {m: rank for rank, (m, _) in reversed(list(enumerate(then, start=1)))}
    new = {m: rank for rank, (m, _) in reversed(list(enumerate(now, start=1)))}
    texts = dict(then) | dict(now)
    seen = sorted(new, key=new.__getitem__) + [m for m in sorted(old, key=old.__getitem__) if m not in new]
    return [Change(m, texts[m], old.get(m), new.get(m)) for m in seen]
