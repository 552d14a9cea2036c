"""List responses capped by count and by bytes.

A page holds at most ``limit`` items and about ``max_response_bytes`` (setting) of JSON: items are
read from the database in chunks and serialised one at a time, and the page ends early, with a
cursor to the rest, before the item that would not fit. A response never holds more than the cap
plus one chunk of rows, whatever ``limit`` asks for (the cap counts the body, not the headers). A page holds at least one item (or none were
left), so following the cursors always reaches the end.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel

from deepcontext.errors import ValidationError

__all__ = [
    "CURSOR_PATTERN",
    "NEXT_HEADERS",
    "CappedPage",
    "collect",
    "decode_text_cursor",
    "dump",
    "encode_text_cursor",
    "json_array",
    "json_response",
    "next_headers",
]

T = TypeVar("T")

#: what a cursor may contain (base64url)
CURSOR_PATTERN = r"^[A-Za-z0-9_=-]+$"
#: rows asked for in the first round trip; later ones are sized by the bytes left
FIRST_CHUNK = 100
MAX_CHUNK = 1000
#: bytes of a page besides its items and cursor, at most
ENVELOPE = 64

#: the OpenAPI description of the paging headers of a response that is a bare list
NEXT_HEADERS: dict[str, Any] = {
    "X-Next-Cursor": {
        "description": "Present when more items follow: pass it back as `cursor` for the next page",
        "schema": {"type": "string"},
    },
    "Link": {"description": 'The next page (`rel="next"`), when more items follow', "schema": {"type": "string"}},
}


@dataclass
class CappedPage:
    #: each item's JSON, in the order read
    parts: list[bytes]
    next_cursor: str | None


async def collect(
    fetch: Callable[[str | None, int], Awaitable[tuple[Sequence[T], str | None]]],
    *,
    cursor: str | None,
    limit: int,
    max_bytes: int,
    dump: Callable[[T], bytes],
    cursor_after: Callable[[T], str],
) -> CappedPage:
    """Up to ``limit`` items of ``fetch(cursor, n)`` (at most ``n`` items and the cursor after
    them, None at the end) whose JSON stays within ``max_bytes``; ``cursor_after(item)`` is the
    cursor to the items after ``item``."""
    parts: list[bytes] = []
    used = 0
    last: T | None = None
    chunk = min(limit, FIRST_CHUNK)
    while True:
        items, nxt = await fetch(cursor, chunk)
        for item in items:
            body = dump(item)
            # room for this item, the cursor after it and the envelope ({"total":...,"next_cursor":...})
            if last is not None and used + len(body) + len(cursor_after(item)) + ENVELOPE > max_bytes:
                return CappedPage(parts, cursor_after(last))
            parts.append(body)
            used += len(body) + 1
            last = item
        if nxt is None or len(parts) >= limit:
            return CappedPage(parts, nxt)
        cursor = nxt
        average = used // len(parts) if parts else 1
        chunk = max(1, min(limit - len(parts), MAX_CHUNK, (max_bytes - used) // max(1, average) + 1))


def dump(model: BaseModel) -> bytes:
    return model.__pydantic_serializer__.to_json(model)


def json_array(parts: Iterable[bytes]) -> bytes:
    return b"[" + b",".join(parts) + b"]"


def json_response(body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, media_type="application/json", headers=headers)


def next_headers(request: Request, cursor: str | None) -> dict[str, str]:
    """``X-Next-Cursor`` and a relative ``Link`` to the next page (the same query, this cursor)."""
    if cursor is None:
        return {}
    url = request.url.include_query_params(cursor=cursor)
    return {"X-Next-Cursor": cursor, "Link": f'<{url.path}?{url.query}>; rel="next"'}


def encode_text_cursor(value: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(["t1", value]).encode()).decode().rstrip("=")


def decode_text_cursor(cursor: str) -> str:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not (isinstance(raw, list) and len(raw) == 2 and raw[0] == "t1" and isinstance(raw[1], str)):
            raise ValueError(raw)
        return raw[1]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError("invalid cursor: pass back the next_cursor of a previous page", field="cursor") from exc
