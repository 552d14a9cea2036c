"""What a memory dashboard lets people do: pin, unpin and restore a memory, edit its metadata and
expiry; a user's page with their agents and runs, exports as JSON and CSV, and deletion behind a
typed confirmation. Every write is a form with the CSRF token, refused for read-only keys, and
recorded in the memory's history by the engine."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from deepcontext.errors import ValidationError
from deepcontext.server.inspector import data
from deepcontext.server.inspector.pages import Ctx, MemoryId, UiScope, _need_user, _write_form, render
from deepcontext.types import Memory

__all__ = ["router"]

router = APIRouter()

#: memories read per batch of an export
EXPORT_BATCH = 500
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
    """Every memory of the user (any status) as a JSON array or a CSV file, for download, streamed
    a batch of memories at a time (a user of a million memories is never held in memory)."""
    if format not in ("json", "csv"):
        raise ValidationError("format must be json or csv", field="format")
    uid = scope.user(user, "user")
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in user)[:80] or "user"
    headers = {"Content-Disposition": f'attachment; filename="memories-{stem}.{format}"', "Cache-Control": "no-store"}
    rows = _export_rows(ctx, uid)
    if format == "json":
        return StreamingResponse(_json_array(rows), media_type="application/json", headers=headers)
    return StreamingResponse(_csv_lines(rows), media_type="text/csv; charset=utf-8", headers=headers)


async def _export_rows(ctx: Any, user_id: str, batch: int = EXPORT_BATCH) -> AsyncIterator[list[dict[str, Any]]]:
    """The user's memories as export rows, a batch at a time, each batch read in a worker thread."""
    memories = ctx.store.iter_memories(user_id, batch=batch)
    while rows := await asyncio.to_thread(lambda: [_memory_row(m) for m in itertools.islice(memories, batch)]):
        yield rows


async def _json_array(batches: AsyncIterator[list[dict[str, Any]]]) -> AsyncIterator[str]:
    yield "["
    first = True
    async for rows in batches:
        yield ("" if first else ",") + ",".join("\n" + json.dumps(r, ensure_ascii=False) for r in rows)
        first = False
    yield "\n]\n"


async def _csv_lines(batches: AsyncIterator[list[dict[str, Any]]]) -> AsyncIterator[str]:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    async for rows in batches:
        for row in rows:
            writer.writerow({k: _cell(v) for k, v in row.items()})
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    yield out.getvalue()


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
