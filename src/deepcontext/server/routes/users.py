"""/v1/users: the users an API key sees, their row counts, and deleting everything of one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from fastapi import Path as PathParam

from deepcontext.server.auth import Ctx, ReadScope, WriteScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import UserDeleted, UserId, UserList

__all__ = ["router"]

router = APIRouter(prefix="/v1/users", tags=["users"], responses=PROBLEM_RESPONSES)

UserPath = Annotated[UserId, PathParam()]


@router.get("", response_model=UserList)
async def list_users(scope: ReadScope, ctx: Ctx) -> UserList:
    """Users with data in this key's tenant (only the key's users for a key limited to some)."""
    return UserList(users=[scope.external(u) for u in await ctx.users() if scope.owns(u)])


@router.get("/{user_id}/stats", response_model=dict[str, int])
async def user_stats(user_id: UserPath, scope: ReadScope, ctx: Ctx) -> dict[str, int]:
    """Rows of the user per table."""
    return await ctx.stats(scope.user(user_id))


@router.delete("/{user_id}", response_model=UserDeleted)
async def delete_user(user_id: UserPath, scope: WriteScope, ctx: Ctx) -> UserDeleted:
    """Delete everything of this user (turns, memories, graph, history): only this user's rows."""
    deleted = await ctx.delete_user(scope.user(user_id))
    return UserDeleted(user_id=user_id, deleted=deleted)
