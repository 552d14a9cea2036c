"""What a memory dashboard lets people do: pin, unpin and restore a memory, edit its metadata and
expiry; a user's page with their agents and runs, exports as JSON and CSV, and deletion behind a
typed confirmation. Every write is a form with the CSRF token, refused for read-only keys, and
recorded in the memory's history by the engine."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from deepcontext.errors import ValidationError
from deepcontext.server.inspector import data
from deepcontext.server.inspector.pages import Ctx, MemoryId, UiScope, _need_user, _write_form, render
from deepcontext.types import Memory

__all__ = ["router"]

router = APIRouter()

#: the columns of an exported memory, in order
EXPORT_FIELDS = (
    "id", "text", "memory_type", "tier", "status", "importance", "confidence", "pinned", "said_at", "occurred_at",
    "created_at", "updated_at", "expires_at", "conversation_id", "agent_id", "run_id", "entities", "metadata",
)  # fmt: skip


def _back_to_memory(request: Request, memory_id: int, user: str, notice: str) -> RedirectResponse:
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/memory/{memory_id}?{urlencode({'user': user, 'notice': notice})}", status_code=303)


@router.post("/memory/{memory_id}/pin")
async def pin(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """Pin the memory (never forgotten, always in the context) or, with ``pinned=0``, unpin it."""
    form, ext, uid = await _write_form(request, scope)
    if form.get("pinned") == "0":
        await ctx.unpin(memory_id, uid)
        return _back_to_memory(request, memory_id, ext, "unpinned")
    await ctx.pin(memory_id, uid)
    return _back_to_memory(request, memory_id, ext, "pinned")


@router.post("/memory/{memory_id}/restore")
async def restore(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """Make a deleted or decayed memory active again."""
    _, ext, uid = await _write_form(request, scope)
    await ctx.restore(memory_id, uid)
    return _back_to_memory(request, memory_id, ext, "restored")


@router.post("/memory/{memory_id}/metadata")
async def metadata(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """Replace the memory's metadata with the JSON object of the form."""
    form, ext, uid = await _write_form(request, scope)
    raw = form.get("metadata")
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"metadata is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", field="metadata"
        ) from exc
    if not isinstance(value, dict):
        raise ValidationError('metadata must be a JSON object, such as {"source": "email"}', field="metadata")
    await ctx.set_metadata(memory_id, uid, value)
    return _back_to_memory(request, memory_id, ext, "metadata saved")


@router.post("/memory/{memory_id}/expiry")
async def expiry(request: Request, memory_id: MemoryId, scope: UiScope, ctx: Ctx) -> Response:
    """Set when the memory expires (a UTC date and time), or clear it (an empty field)."""
    form, ext, uid = await _write_form(request, scope)
    when = form.get("expires_at")
    when = when.strip() if isinstance(when, str) else ""
    # a datetime-local field has no zone: the page says the time is UTC
    await ctx.set_expiry(memory_id, uid, f"{when}+00:00" if when and "+" not in when and not when.endswith("Z") else when or None)
    return _back_to_memory(request, memory_id, ext, "expiry set" if when else "expiry cleared")


# --- a user's page ------------------------------------------------------------------------------------


@router.get("/user", response_class=HTMLResponse)
async def user_page(request: Request, scope: UiScope, ctx: Ctx, user: str | None = None) -> HTMLResponse:
    """One user: counts, agents and runs, exports, and deletion."""
    picked = await _need_user(request, ctx, scope, user, "/user")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    [summary] = await asyncio.to_thread(data.user_summaries, ctx.store, [uid])
    scopes = await asyncio.to_thread(data.agents_and_runs, ctx.store, uid)
    profile = await ctx.get_user(uid)
    return render(request, scope, "user.html", user=ext, s=summary, scopes=scopes, display_name=profile.get("name"))


def _memory_row(m: Memory) -> dict[str, Any]:
    row = m.model_dump(mode="json", include=set(EXPORT_FIELDS))
    return {k: row.get(k) for k in EXPORT_FIELDS}


@router.get("/export")
async def export(request: Request, scope: UiScope, ctx: Ctx, user: str, format: str = "json") -> Response:  # noqa: A002
    """Every memory of the user (any status) as a JSON array or a CSV file, for download."""
    if format not in ("json", "csv"):
        raise ValidationError("format must be json or csv", field="format")
    uid = scope.user(user, "user")
    memories = await asyncio.to_thread(lambda: [_memory_row(m) for m in ctx.store.iter_memories(uid)])
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in user)[:80] or "user"
    headers = {"Content-Disposition": f'attachment; filename="memories-{stem}.{format}"', "Cache-Control": "no-store"}
    if format == "json":
        return Response(json.dumps(memories, ensure_ascii=False, indent=1), media_type="application/json", headers=headers)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for row in memories:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


def _cell(value: Any) -> Any:
    """A CSV cell: lists and objects as JSON; text that a spreadsheet would run as a formula is
    quoted with a leading apostrophe (CSV injection)."""
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


@router.post("/user/delete")
async def delete_user(request: Request, scope: UiScope, ctx: Ctx) -> Response:
    """Delete everything of the user, once its id is typed again in the form."""
    form, ext, uid = await _write_form(request, scope)
    if form.get("confirm") != ext:
        raise ValidationError(f"type the user id ({ext}) to confirm the deletion", field="confirm")
    await ctx.delete_user(uid)
    base = request.scope.get("root_path", "")
    return RedirectResponse(f"{base}/?{urlencode({'deleted': ext})}", status_code=303)
