"""GET /v1/turns: the turns of a conversation, verbatim."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.routes._util import external_turns
from deepcontext.server.schemas import ConversationId, UserId
from deepcontext.types import Turn

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["conversations"], responses=PROBLEM_RESPONSES)


@router.get("/turns", response_model=list[Turn])
async def turns(
    scope: ReadScope,
    ctx: Ctx,
    user_id: Annotated[UserId, Query()],
    conversation_id: Annotated[ConversationId, Query()] = "default",
    limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
) -> list[Turn]:
    """The last ``limit`` turns of a conversation, oldest first, with their parents (an unknown
    conversation has none)."""
    return external_turns(scope, await ctx.turns(scope.user(user_id), conversation_id, limit))
