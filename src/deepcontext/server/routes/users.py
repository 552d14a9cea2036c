"""/v1/users: the users an API key sees, their display names, row counts, and deleting everything of one."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import Response

from deepcontext.server.auth import Ctx, ReadScope, WriteScope
from deepcontext.server.paging import (
    CURSOR_PATTERN,
    collect,
    decode_text_cursor,
    encode_text_cursor,
    json_array,
    json_response,
)
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import UserDeleted, UserId, UserList, UserProfile, UserProfileIn

__all__ = ["router"]

router = APIRouter(prefix="/v1/users", tags=["users"], responses=PROBLEM_RESPONSES)

UserPath = Annotated[UserId, PathParam()]


@router.get("", response_model=UserList)
async def list_users(
    scope: ReadScope,
    ctx: Ctx,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    cursor: Annotated[
        str | None, Query(max_length=1100, pattern=CURSOR_PATTERN, description="next_cursor of the previous page")
    ] = None,
) -> Response:
    """Users with data in this key's tenant (only the key's users for a key limited to some), in
    byte order, a page at a time: ``next_cursor`` continues."""

    async def fetch(cur: str | None, n: int) -> tuple[list[str], str | None]:
        # one more than asked tells whether more follow; a key limited to some users skips others
        stored = await ctx.users(tenant=scope.tenant, after=decode_text_cursor(cur) if cur else None, limit=n + 1)
        more = len(stored) > n
        stored = stored[:n]
        return [u for u in stored if scope.owns(u)], (encode_text_cursor(stored[-1]) if more else None)

    page = await collect(
        fetch,
        cursor=cursor,
        limit=limit,
        max_bytes=ctx.settings.max_response_bytes,
        dump=lambda u: json.dumps(scope.external(u), ensure_ascii=False).encode(),
        cursor_after=encode_text_cursor,
    )
    return json_response(b'{"users":%s,"next_cursor":%s}' % (json_array(page.parts), json.dumps(page.next_cursor).encode()))


@router.get("/{user_id}/stats", response_model=dict[str, int])
async def user_stats(user_id: UserPath, scope: ReadScope, ctx: Ctx) -> dict[str, int]:
    """Rows of the user per table."""
    return await ctx.stats(scope.user(user_id))


@router.get("/{user_id}", response_model=UserProfile)
async def get_user(user_id: UserPath, scope: ReadScope, ctx: Ctx) -> UserProfile:
    """The user's profile: the display name memories use (null while none is known)."""
    profile = await ctx.get_user(scope.user(user_id))
    return UserProfile(user_id=user_id, name=profile["name"])


@router.put("/{user_id}", response_model=UserProfile)
async def set_user(user_id: UserPath, body: UserProfileIn, scope: WriteScope, ctx: Ctx) -> UserProfile:
    """Set the user's display name: memories say "Ana lives in Lisbon", not "The user lives in Lisbon"."""
    await ctx.set_user(scope.user(user_id), name=body.name)
    profile = await ctx.get_user(scope.user(user_id))
    return UserProfile(user_id=user_id, name=profile["name"])


@router.delete("/{user_id}", response_model=UserDeleted)
async def delete_user(user_id: UserPath, scope: WriteScope, ctx: Ctx) -> UserDeleted:
    """Delete everything of this user (turns, memories, graph, history): only this user's rows."""
    deleted = await ctx.delete_user(scope.user(user_id))
    return UserDeleted(user_id=user_id, deleted=deleted)
