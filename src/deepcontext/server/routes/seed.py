"""DeepContext 0.1's REST API, same paths and bodies: GET /health, POST /memory/add,
POST /memory/search, PUT /memory/update, DELETE /memory/delete, POST /graph/neighbors.
(POST /lifecycle/run lives in :mod:`.seed_lifecycle`.)

Responses keep 0.1's fields and add the new ones. Differences: an API key is required (0.1 had
none), errors are problem details (0.1 answered 500 with the exception text), and user ids may not
contain ``/``.
"""

from __future__ import annotations

from fastapi import APIRouter

import deepcontext
from deepcontext.errors import EntityNotFoundError
from deepcontext.server.auth import Ctx, ReadScope, WriteScope
from deepcontext.server.metrics import memories_added
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.routes._util import external_search
from deepcontext.server.schemas import (
    DeleteBody,
    DeletedMemory,
    GraphBody,
    GraphNeighbour,
    Health,
    SeedAddBody,
    SeedSearchBody,
    UpdateBody,
)
from deepcontext.services.activity import calls_from
from deepcontext.types import AddResponse, DeletedMemoryInfo, GraphNeighbourInfo, SearchResponse, UpdatedMemory

__all__ = ["router"]

TAG = "DeepContext 0.1 compatible"
router = APIRouter(tags=[TAG])


@router.get("/health", response_model=Health)
async def health() -> dict[str, str]:
    """Liveness (public)."""
    return {"status": "ok", "version": deepcontext.__version__}


@router.post("/memory/add", response_model=AddResponse, responses=PROBLEM_RESPONSES)
async def add_memory(body: SeedAddBody, scope: WriteScope, ctx: Ctx) -> AddResponse:
    """Store the messages and the memories derived from them."""
    result = await ctx.add([m.as_message() for m in body.messages], scope.user(body.user_id), body.conversation_id)
    memories_added(result.memories_added)
    return result


@router.post("/memory/search", response_model=SearchResponse, responses=PROBLEM_RESPONSES)
async def search_memory(body: SeedSearchBody, scope: ReadScope, ctx: Ctx) -> SearchResponse:
    """Hybrid search (vector + keyword + graph)."""
    with calls_from("rest", scope.key_id):
        res = await ctx.search(
            body.query,
            scope.user(body.user_id),
            limit=body.limit,
            tier=body.tier.value if body.tier else None,
            memory_type=body.memory_type.value if body.memory_type else None,
            include_graph=body.include_graph,
            min_score=body.min_score,
            track_access=False if scope.read_only else None,
        )
    return external_search(scope, res)


@router.put("/memory/update", responses=PROBLEM_RESPONSES)
async def update_memory(body: UpdateBody, scope: WriteScope, ctx: Ctx) -> UpdatedMemory:
    """New text for a memory (re-embedded); ``{memory_id, text, status: "updated"}``."""
    return await ctx.update(body.memory_id, body.text, scope.user(body.user_id))


@router.delete("/memory/delete", response_model=DeletedMemory, responses=PROBLEM_RESPONSES)
async def delete_memory(body: DeleteBody, scope: WriteScope, ctx: Ctx) -> DeletedMemoryInfo:
    """Soft-delete a memory (the body carries memory_id and user_id)."""
    return await ctx.delete(body.memory_id, scope.user(body.user_id))


@router.post("/graph/neighbors", response_model=list[GraphNeighbour], responses=PROBLEM_RESPONSES)
async def graph_neighbors(body: GraphBody, scope: ReadScope, ctx: Ctx) -> list[GraphNeighbourInfo]:
    """The knowledge-graph neighbourhood of an entity (an empty list for an unknown entity, as in 0.1)."""
    try:
        return await ctx.get_entity_graph(scope.user(body.user_id), body.entity_name, depth=body.depth)
    except EntityNotFoundError:
        return []
