"""POST /v1/search: hybrid search over one user's memories."""

from __future__ import annotations

from fastapi import APIRouter

from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.routes._util import external_search
from deepcontext.server.schemas import SearchBody
from deepcontext.services.activity import calls_from
from deepcontext.types import SearchResponse

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["search"], responses=PROBLEM_RESPONSES)


@router.post("/search", response_model=SearchResponse)
async def search(body: SearchBody, scope: ReadScope, ctx: Ctx) -> SearchResponse:
    """Vector + keyword + graph, fused by weighted RRF and rescored; every leg honours the filters.
    Each result's score is its calibrated relevance in [0, 1]."""
    with calls_from("rest", scope.key_id):
        res = await _search(body, scope, ctx)
    return external_search(scope, res)


async def _search(body: SearchBody, scope: ReadScope, ctx: Ctx) -> SearchResponse:
    return await ctx.search(
        body.query,
        scope.user(body.user_id),
        limit=body.limit,
        tier=[t.value for t in body.tier] if body.tier else None,
        memory_type=[t.value for t in body.memory_type] if body.memory_type else None,
        include_graph=body.include_graph,
        conversation_id=body.conversation_id or None,
        after=body.after,
        before=body.before,
        metadata=body.metadata,
        config=body.config,
        include_superseded=body.include_superseded,
        min_score=body.min_score,
        agent_id=body.agent_id,
        run_id=body.run_id,
        track_access=False if scope.read_only else None,
    )
