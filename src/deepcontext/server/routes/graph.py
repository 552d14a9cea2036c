"""GET /v1/graph/neighbours: the knowledge-graph neighbourhood of an entity."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import EntityName, GraphNeighbour, GraphResult, UserId

__all__ = ["router"]

router = APIRouter(prefix="/v1/graph", tags=["graph"], responses=PROBLEM_RESPONSES)


@router.get("/neighbours", response_model=GraphResult)
async def neighbours(
    scope: ReadScope,
    ctx: Ctx,
    user_id: Annotated[UserId, Query()],
    entity: Annotated[EntityName, Query(description="Entity name, matched case-insensitively by whole words")],
    depth: Annotated[int, Query(ge=0, le=5)] = 2,
) -> GraphResult:
    """The entity (depth 0) and its neighbours up to ``depth`` hops, breadth first; 404 for an
    unknown entity."""
    hood = await ctx.get_entity_graph(scope.user(user_id), entity, depth=depth)
    return GraphResult(entity=hood[0]["entity"], depth=depth, neighbours=[GraphNeighbour(**h) for h in hood])
