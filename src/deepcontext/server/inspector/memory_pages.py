"""The inspector's memory pages: a user's memories searched (each result's score and the legs that
found it) or listed (filters, cursor paging), one memory with its source turns, links, history and
the recorded calls that retrieved it, and the forms that forget or edit it. They stand apart from
:mod:`.pages`, which holds what every page shares (rendering, the user in scope, a write's form)
and the sign-in, users, conversation, lifecycle and context pages."""

from __future__ import annotations

import asyncio
import math
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from deepcontext.errors import ValidationError
from deepcontext.retrieve.config import PRESETS
from deepcontext.server.inspector import data
from deepcontext.server.inspector.pages import Ctx, MemoryId, UiScope, _need_user, _user, _write_form, render
from deepcontext.services.activity import calls_from
from deepcontext.services.requests import SearchRequest, bounds
from deepcontext.services.validation import parse_filters
from deepcontext.types import MemoryStatus, MemoryTier, MemoryType

__all__ = ["router"]

router = APIRouter()

#: a page of the memory list, and the default number of search results
PAGE_SIZE = 50
#: the most results the search form asks for (the engine's limit)
#: how many earlier pages a memory list page can link back through; the marker of the first page
MAX_TRAIL = 40
FIRST_PAGE = "first"
#: below this calibrated score (the estimated chance a result is relevant: one in a hundred) a search
#: says nothing is (nonsense falls well below it; see the inspector's docs)
ALMOST_SURELY_IRRELEVANT = 0.01
#: recorded calls that returned a memory, listed on its page
RETRIEVALS_SHOWN = 10


def _metadata_filter(text: str | None) -> dict[str, Any] | None:
    """``key=value, key2=value2`` (values: true/false, numbers, else text)."""
    if not text or not text.strip():
        return None
    out: dict[str, Any] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValidationError("metadata filter: write key=value, separated by commas", field="metadata")
        k, v = (s.strip() for s in part.split("=", 1))
        if not k:
            raise ValidationError("metadata filter: a key is empty", field="metadata")
        value: Any = v
        if v.lower() in ("true", "false"):
            value = v.lower() == "true"
        else:
            try:
                value = int(v)
            except ValueError:
                try:
                    f = float(v)
                    value = f if math.isfinite(f) else v
                except ValueError:
                    pass
        out[k] = value
    return out or None


def _choices(values: list[str], enum: Any, field: str) -> list[str]:
    allowed = {e.value for e in enum}
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValidationError(f"unknown {field} {bad[0]!r}; expected one of {sorted(allowed)}", field=field)
    return values


@router.get("/memories", response_class=HTMLResponse)
async def memories_page(
    request: Request,
    scope: UiScope,
    ctx: Ctx,
    user: str | None = None,
    q: str | None = None,
    cursor: str | None = None,
    after: str | None = None,
    before: str | None = None,
    metadata: str | None = None,
    conversation: str | None = None,
    agent: str | None = None,
    run: str | None = None,
    at: int = 0,
    trail: str | None = None,
    preset: str | None = None,
    limit: int = PAGE_SIZE,
    superseded: bool = False,
) -> HTMLResponse:
    """Search (score and each leg's rank) or list (filters, cursor paging) a user's memories. ``at``
    is the list position of the page's first memory, ``trail`` the cursors of the pages before it
    (so a page links back)."""
    picked = await _need_user(request, ctx, scope, user, "/memories")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    if cursor == FIRST_PAGE:
        cursor = None
    params = request.query_params
    tiers = _choices(params.getlist("tier"), MemoryTier, "tier")
    types = _choices(params.getlist("type"), MemoryType, "type")
    statuses = _choices(params.getlist("status"), MemoryStatus, "status") or [MemoryStatus.ACTIVE.value]
    meta = _metadata_filter(metadata)
    filters = parse_filters(
        tier=tiers or None, memory_type=types or None, conversation_id=conversation or None,
        after=after or None, before=before or None, metadata=meta, agent_id=agent or None, run_id=run or None,
    )  # fmt: skip
    form = {
        "q": q or "", "tier": tiers, "type": types, "status": statuses, "after": after or "", "before": before or "",
        "metadata": metadata or "", "conversation": conversation or "", "agent": agent or "", "run": run or "",
        "preset": preset or "", "limit": limit, "superseded": superseded,
    }  # fmt: skip
    lowest, highest = bounds(SearchRequest, "limit")  # the search's own range, also when no query runs
    if not lowest <= limit <= highest:  # type: ignore[operator]
        raise ValidationError(f"limit must be {lowest:g} to {highest:g}", field="limit")
    if preset and preset not in PRESETS:
        raise ValidationError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}", field="preset")
    common: dict[str, Any] = dict(user=ext, form=form, all_tiers=[t.value for t in MemoryTier], all_types=[t.value for t in MemoryType],
                  all_statuses=[s.value for s in MemoryStatus], presets=sorted(PRESETS))  # fmt: skip
    if q and q.strip():
        with calls_from("inspector"):  # a preview: never in the activity log
            res = await ctx.search(
                q, uid, limit=limit, tier=tiers or None, config=preset or None, include_superseded=superseded, memory_type=types or None, conversation_id=conversation or None,
                after=after or None, before=before or None, metadata=meta, agent_id=agent or None, run_id=run or None,
                track_access=False,
            )  # fmt: skip
        best = max((r.score for r in res.results), default=0.0)
        return render(request, scope, "memories.html", results=res.results, took_ms=res.took_ms,
                      nothing_relevant=best < ALMOST_SURELY_IRRELEVANT, best=best, cut=ALMOST_SURELY_IRRELEVANT,
                      **common)  # fmt: skip
    filters.statuses = tuple(MemoryStatus(s) for s in statuses)
    mems, total, nxt = await asyncio.to_thread(
        ctx.store.list_memories, uid, filters, limit=PAGE_SIZE, cursor=cursor or None, now=ctx.clock.now()
    )
    earlier = (trail or "").split()[-MAX_TRAIL:]
    paging = {
        "at": max(0, at) if cursor else 0,
        "next_trail": " ".join([*earlier, cursor or FIRST_PAGE][-MAX_TRAIL:]),
        # the page before this one: the trail's last cursor (FIRST_PAGE: the first page)
        "prev_cursor": (earlier[-1] if earlier else FIRST_PAGE) if cursor else None,
        "prev_trail": " ".join(earlier[:-1]),
        "prev_at": max(0, at - PAGE_SIZE),
    }
    return render(request, scope, "memories.html", results=None, took_ms=None, memories=mems, total=total, next_cursor=nxt,
                  first_page=not cursor, paging=paging, first_marker=FIRST_PAGE, **common)  # fmt: skip


@router.get("/memory/{memory_id}", response_class=HTMLResponse)
async def memory_page(
    request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx, user: str, notice: str | None = None
) -> HTMLResponse:
    """One memory: text, source turns verbatim, entities, links, history."""
    ext, uid = _user(scope, user) or ("", "")
    mem = await ctx.get(memory_id, uid)
    history = await ctx.history(memory_id, uid)
    store = ctx.store

    def more() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        turns = store.get_turns(uid, [s.turn_id for s in mem.sources])
        linked = store.memory_links(uid, [memory_id], 20).get(memory_id, [])
        related = list(dict.fromkeys([*linked, *mem.consolidated_from, *([mem.superseded_by] if mem.superseded_by else [])]))
        others = store.get_memories(uid, related, details=False) if related else []
        return turns, linked, others, data.retrievals(store, uid, memory_id, RETRIEVALS_SHOWN)

    turns, linked, others, retrieved = await asyncio.to_thread(more)
    by_id = {m.id: m for m in others}
    return render(request, scope, "memory.html", user=ext, mem=mem, history=history, turns=turns,
                  linked=[by_id[i] for i in linked if i in by_id], by_id=by_id, notice=notice,
                  retrieved=retrieved)  # fmt: skip


@router.post("/memory/{memory_id}/forget")
async def forget(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """Soft-delete the memory (as DELETE /v1/memories/{id})."""
    _, ext, uid = await _write_form(request, scope)
    await ctx.delete(memory_id, uid)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/memory/{memory_id}?{urlencode({'user': ext, 'notice': 'forgotten'})}", status_code=303)


@router.post("/memory/{memory_id}/edit")
async def edit(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """New text for the memory (as PATCH /v1/memories/{id})."""
    form, ext, uid = await _write_form(request, scope)
    text = form.get("text")
    await ctx.update(memory_id, text if isinstance(text, str) else "", uid)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/memory/{memory_id}?{urlencode({'user': ext, 'notice': 'updated'})}", status_code=303)
