"""GET /v1/turns: the turns of a conversation, verbatim, a page at a time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from deepcontext.server.auth import Ctx, ReadScope
from deepcontext.server.paging import CURSOR_PATTERN, NEXT_HEADERS, collect, dump, json_array, json_response, next_headers
from deepcontext.server.problems import PROBLEM_RESPONSES
from deepcontext.server.schemas import ConversationId, UserId
from deepcontext.store import decode_cursor, encode_cursor
from deepcontext.types import Turn

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["conversations"], responses=PROBLEM_RESPONSES)


@router.get("/turns", response_model=list[Turn], responses={200: {"headers": NEXT_HEADERS}})
async def turns(
    request: Request,
    scope: ReadScope,
    ctx: Ctx,
    user_id: Annotated[UserId, Query()],
    conversation_id: Annotated[ConversationId, Query()] = "default",
    limit: Annotated[int, Query(ge=1, le=10_000)] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, pattern=CURSOR_PATTERN, description="X-Next-Cursor of the previous page")
    ] = None,
) -> Response:
    """The last ``limit`` turns of a conversation, oldest first, with their parents (an unknown
    conversation has none). When older turns remain (or the page reached ``max_response_bytes``),
    ``X-Next-Cursor`` and ``Link`` name the page before: its turns are older than these."""
    uid = scope.user(user_id)

    async def newest_first(cur: str | None, n: int) -> tuple[Sequence[Turn], str | None]:
        got = await ctx.turns(uid, conversation_id, n + 1, before=decode_cursor(cur) if cur else None)
        page = got[::-1][:n]
        return page, (encode_cursor(page[-1].id) if len(got) > n else None)

    page = await collect(
        newest_first,
        cursor=cursor,
        limit=limit,
        max_bytes=ctx.settings.max_response_bytes,
        dump=lambda t: dump(t.model_copy(update={"user_id": user_id})),
        cursor_after=lambda t: encode_cursor(t.id),
    )
    return json_response(json_array(reversed(page.parts)), next_headers(request, page.next_cursor))
