"""POST /v1/context: the budgeted context for the next prompt of one user (``DeepContext.context``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from deepcontext.context.results import ContextResult
from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import ConversationId, JsonFloat, NumberOnly, Query, ScopeIds, UserId
from deepcontext.services.activity import calls_from

__all__ = ["ContextBody", "SharesBody", "router"]

router = APIRouter(prefix="/v1", tags=["context"], responses=PROBLEM_RESPONSES)

#: the largest budget the API accepts
MAX_API_BUDGET = 200_000


class SharesBody(BaseModel):
    """Shares of the budget per part (normalised; omitted parts keep their defaults)."""

    model_config = ConfigDict(extra="forbid")

    pinned: JsonFloat | None = Field(default=None, ge=0, le=1000)
    memories: JsonFloat | None = Field(default=None, ge=0, le=1000)
    tiers: JsonFloat | None = Field(default=None, ge=0, le=1000)
    conversation: JsonFloat | None = Field(default=None, ge=0, le=1000)


class ContextBody(BaseModel):
    """What the next prompt is about, whose memory, and how many tokens it may take."""

    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    query: Query
    conversation_id: ConversationId | None = Field(default=None, description="Include this conversation's path")
    budget_tokens: Annotated[int, Field(ge=1, le=MAX_API_BUDGET), NumberOnly] = 2000
    shares: SharesBody | None = None
    memory_limit: Annotated[int, Field(ge=1, le=100), NumberOnly] | None = Field(
        default=None, description="Search results considered (default: one per 40 tokens of budget, at least 20)"
    )
    min_intent: JsonFloat | None = Field(
        default=None, ge=0, le=1, description="Intent score (query coverage) memories and tier sections need (0.3)"
    )
    min_similarity: JsonFloat = Field(default=0.3, ge=0, le=1, description="Cosine that makes a memory relevant below min_intent")
    max_conversation_nodes: Annotated[int, Field(ge=1, le=1000), NumberOnly] = 12
    agent_id: ScopeIds | None = Field(default=None, description="Only memories of this agent (or these)")
    run_id: ScopeIds | None = Field(default=None, description="Only memories of this run (or these)")


@router.post("/context", response_model=ContextResult)
async def context(body: ContextBody, scope: ReadScope, ctx: Ctx) -> ContextResult:
    """Pinned memories, relevant memories with their dates, the deepcq tier sections the query's
    intent selects and the conversation's path, within ``budget_tokens``; with the breakdown (what
    is included and why, tokens per part, what was left out and why)."""
    shares = body.shares.model_dump(exclude_none=True) if body.shares else None
    with calls_from("rest", scope.key_id):
        res = await _context(body, scope, ctx, shares)
    return res.model_copy(update={"user_id": scope.external(res.user_id)})


async def _context(body: ContextBody, scope: ReadScope, ctx: Ctx, shares: dict[str, float] | None) -> ContextResult:
    return await ctx.context(
        body.query,
        scope.user(body.user_id),
        body.conversation_id,
        budget_tokens=body.budget_tokens,
        shares=shares or None,
        min_intent=body.min_intent,
        memory_limit=body.memory_limit,
        min_similarity=body.min_similarity,
        max_conversation_nodes=body.max_conversation_nodes,
        agent_id=body.agent_id,
        run_id=body.run_id,
        track_access=False if scope.read_only else None,
    )
