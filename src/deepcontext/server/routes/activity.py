"""/v1/activity: a user's recorded search and context calls (the activity log), newest first."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.paging import CURSOR_PATTERN
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import MAX_INT64, ConversationId, ScopeId, Timestamp, UserId
from deepcontext.types import ActivityCall, ActivityPage

__all__ = ["router"]

router = APIRouter(prefix="/v1/activity", tags=["activity"], responses=PROBLEM_RESPONSES)

UserQuery = Annotated[UserId, Query(description="Whose calls")]


@router.get("", response_model=ActivityPage)
async def list_activity(
    scope: ReadScope,
    ctx: Ctx,
    user_id: UserQuery,
    kind: Annotated[Literal["search", "context"] | None, Query(description="Only this kind of call")] = None,
    via: Annotated[Literal["python", "rest", "mcp", "cli"] | None, Query(description="Only calls made this way")] = None,
    # optional, yet typed as the id itself: a query parameter is absent or a string, never null
    agent_id: Annotated[ScopeId, Query(description="Only calls that named this agent")] = None,  # type: ignore[assignment]
    run_id: Annotated[ScopeId, Query(description="Only calls that named this run")] = None,  # type: ignore[assignment]
    conversation_id: Annotated[ConversationId, Query(description="Only calls that named this conversation")] = None,  # type: ignore[assignment]
    after: Annotated[Timestamp | None, Query(description="Made at or after")] = None,
    before: Annotated[Timestamp | None, Query(description="Made before")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=CURSOR_PATTERN, description="next_cursor of the previous page")
    ] = None,
) -> ActivityPage:
    """What the user's agents searched for and were given: each call with its parameters, its
    results (score, rank in each leg, the memory's text then) and, for a context, what it included
    and left out. Calls through the REST API and MCP are recorded by default (setting ``activity_log``),
    kept per ``activity_max_calls`` and ``activity_max_age_days``."""
    page = await ctx.activity(
        scope.user(user_id), kind=kind, via=via, agent_id=agent_id, run_id=run_id, conversation_id=conversation_id,
        after=after, before=before, limit=limit, cursor=cursor,
    )  # fmt: skip
    return page.model_copy(update={"calls": [c.model_copy(update={"user_id": user_id}) for c in page.calls]})


@router.get("/{call_id}", response_model=ActivityCall)
async def get_activity(
    scope: ReadScope,
    ctx: Ctx,
    call_id: Annotated[int, Path(ge=1, le=MAX_INT64, description="The call's id")],
    user_id: UserQuery,
) -> ActivityCall:
    """One recorded call of the user, with everything it returned."""
    call = await ctx.activity_call(scope.user(user_id), call_id)
    return call.model_copy(update={"user_id": user_id})
