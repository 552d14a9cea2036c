"""/v1/memories: create from messages, list (filters, cursor paging), get, update, delete, history."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, status
from fastapi.responses import Response

from deepcontext.errors import ValidationError
from deepcontext.server.auth import Ctx, ReadScope, WriteScope
from deepcontext.server.metrics import memories_added
from deepcontext.server.paging import CURSOR_PATTERN, collect, dump, json_array, json_response
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.routes._util import external_memory
from deepcontext.server.schemas import (
    MAX_INT64,
    AddBody,
    ConversationId,
    DeletedMemory,
    PatchMemoryBody,
    ScopeId,
    Timestamp,
    UserBody,
    UserId,
)
from deepcontext.store import encode_cursor
from deepcontext.types import AddResponse, DeletedMemoryInfo, HistoryEntry, Memory, MemoryPage, MemoryTier, MemoryType

__all__ = ["router"]

router = APIRouter(prefix="/v1/memories", tags=["memories"], responses=PROBLEM_RESPONSES)

MemoryIdPath = Annotated[int, Path(ge=1, le=MAX_INT64, description="The memory's id")]
UserQuery = Annotated[UserId, Query(description="The user the memory belongs to")]


@router.post("", response_model=AddResponse, status_code=status.HTTP_201_CREATED)
async def create_memories(body: AddBody, scope: WriteScope, ctx: Ctx) -> AddResponse:
    """Store messages verbatim as turns of a conversation and derive memories from them (one
    transaction)."""
    result = await ctx.add(
        [m.as_message() for m in body.messages],
        scope.user(body.user_id),
        body.conversation_id,
        timestamp=body.timestamp,
        metadata=body.metadata,
        expires_at=body.expires_at,
        ttl=body.ttl,
        infer=body.infer,
        agent_id=body.agent_id,
        run_id=body.run_id,
    )
    memories_added(result.memories_added)
    return result


@router.get("", response_model=MemoryPage)
async def list_memories(
    scope: ReadScope,
    ctx: Ctx,
    user_id: UserQuery,
    tier: Annotated[list[MemoryTier] | None, Query(max_length=3)] = None,
    memory_type: Annotated[list[MemoryType] | None, Query(max_length=3)] = None,
    conversation_id: Annotated[list[ConversationId] | None, Query(max_length=100)] = None,
    after: Annotated[Timestamp | None, Query(description="Said at or after")] = None,
    before: Annotated[Timestamp | None, Query(description="Said before")] = None,
    agent_id: Annotated[list[ScopeId] | None, Query(max_length=100, description="Memories of these agents")] = None,
    run_id: Annotated[list[ScopeId] | None, Query(max_length=100, description="Memories of these runs")] = None,
    metadata: Annotated[
        str | None, Query(max_length=16_000, description="Metadata filter as JSON (the form of POST /v1/search)")
    ] = None,
    include_inactive: Annotated[bool, Query(description="Also deleted, superseded, merged, decayed")] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=CURSOR_PATTERN, description="next_cursor of the previous page")
    ] = None,
) -> Response:
    """A user's memories, newest first, one page at a time: up to ``limit`` of them, fewer when
    the page reaches ``max_response_bytes``; ``next_cursor`` continues."""
    uid = scope.user(user_id)
    filters = {
        "tier": [t.value for t in tier] if tier else None,
        "memory_type": [t.value for t in memory_type] if memory_type else None,
        "conversation_id": conversation_id or None,
        "after": after,
        "before": before,
        "agent_id": agent_id or None,
        "run_id": run_id or None,
        "metadata": _json_filter(metadata),
        "include_inactive": include_inactive,
    }
    total: list[int] = []

    async def fetch(cur: str | None, n: int) -> tuple[list[Memory], str | None]:
        got = await ctx.list(uid, **filters, limit=n, cursor=cur)
        total.append(got.total)
        return got.memories, got.next_cursor

    page = await collect(
        fetch,
        cursor=cursor,
        limit=limit,
        max_bytes=ctx.settings.max_response_bytes,
        dump=lambda m: dump(m.model_copy(update={"user_id": user_id})),
        cursor_after=lambda m: encode_cursor(m.id),
    )
    nxt = json.dumps(page.next_cursor).encode()
    return json_response(b'{"total":%d,"memories":%s,"next_cursor":%s}' % (total[0], json_array(page.parts), nxt))


def _json_filter(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValidationError(f"metadata is not valid JSON: {exc}", field="metadata") from None


@router.get("/{memory_id}", response_model=Memory)
async def get_memory(memory_id: MemoryIdPath, user_id: UserQuery, scope: ReadScope, ctx: Ctx) -> Memory:
    """One memory with its provenance, whatever its status."""
    return external_memory(scope, await ctx.get(memory_id, scope.user(user_id)))


@router.patch("/{memory_id}", response_model=Memory)
async def update_memory(memory_id: MemoryIdPath, body: PatchMemoryBody, scope: WriteScope, ctx: Ctx) -> Memory:
    """Change a memory: new text (re-embedded; the old text stays in its history), metadata, pin,
    expiry (null clears it), all in one transaction and one entry of the memory's history; a PATCH
    with any part refused changes nothing."""
    uid = scope.user(body.user_id)
    clear = "expires_at" in body.model_fields_set and body.expires_at is None
    if body.text is None and body.metadata is None and body.pinned is None and body.expires_at is None and not clear:
        return external_memory(scope, await ctx.get(memory_id, uid))  # nothing asked: the memory as it is
    edited = await ctx.edit(
        memory_id, uid, text=body.text, metadata=body.metadata, pinned=body.pinned, expires_at=body.expires_at,
        clear_expiry=clear,
    )  # fmt: skip
    return external_memory(scope, edited)


@router.post("/{memory_id}/restore", response_model=Memory)
async def restore_memory(memory_id: MemoryIdPath, body: UserBody, scope: WriteScope, ctx: Ctx) -> Memory:
    """Make a deleted or decayed memory active again (400 for a superseded or merged one)."""
    uid = scope.user(body.user_id)
    return external_memory(scope, await ctx.restore(memory_id, uid))


@router.delete("/{memory_id}", response_model=DeletedMemory)
async def delete_memory(memory_id: MemoryIdPath, user_id: UserQuery, scope: WriteScope, ctx: Ctx) -> DeletedMemoryInfo:
    """Soft-delete a memory: gone from search and list, kept in its history."""
    return await ctx.delete(memory_id, scope.user(user_id))


@router.get("/{memory_id}/history", response_model=list[HistoryEntry])
async def memory_history(memory_id: MemoryIdPath, user_id: UserQuery, scope: ReadScope, ctx: Ctx) -> list[HistoryEntry]:
    """Every change of a memory, oldest first."""
    return await ctx.history(memory_id, scope.user(user_id))
