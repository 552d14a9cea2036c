"""The activity log: what ``search`` and ``context`` calls returned, recorded after they return.

Who made a call comes from :func:`calls_from` (the REST routes and the MCP tools say so, with the
API key); a call made without it is the library's. Whether a call is recorded follows the
``activity_log`` setting (None: REST and MCP calls only); the inspector's own previews never are.
A record is built from the call's result (no query runs for it) and written by one background task
in batches, so a call waits for neither the database nor a failure to write, which is logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from deepcontext.clock import Clock
from deepcontext.errors import NotFoundError, ValidationError
from deepcontext.services.background import BackgroundTasks
from deepcontext.services.validation import check_id, check_limit, check_row_id, check_scope, parse_time
from deepcontext.settings import DeepContextSettings
from deepcontext.store.interface import Store
from deepcontext.types import ActivityCall, ActivityHit, ActivityItem, ActivityPage, SearchResponse

if TYPE_CHECKING:
    from deepcontext.context.results import ContextResult
    from deepcontext.store.activity import ActivityRow

__all__ = ["ActivityLog", "Origin", "Via", "calls_from"]

Via = Literal["python", "rest", "mcp", "cli", "inspector"]
#: calls recorded when ``activity_log`` is None
_RECORDED_BY_DEFAULT = frozenset({"rest", "mcp"})
#: the longest a record waits for others to share its transaction (``flush`` writes at once)
BATCH_SECONDS = 2.0
#: a left-out context item keeps this much of its text
PREVIEW_CHARS = 200


@dataclasses.dataclass(frozen=True, slots=True)
class Origin:
    """Who is calling: the interface and, through the REST API or MCP, the API key."""

    via: Via
    key_id: str | None = None


_ORIGIN: ContextVar[Origin | None] = ContextVar("deepcontext_activity_origin", default=None)


@contextmanager
def calls_from(via: Via, key_id: str | None = None) -> Iterator[None]:
    """The calls made inside the block come from ``via`` (and the key ``key_id``)."""
    token = _ORIGIN.set(Origin(via, key_id))
    try:
        yield
    finally:
        _ORIGIN.reset(token)


def _jsonable(value: Any) -> Any:
    """A call's parameter as JSON: times as ISO text, enums by value, models and tuples opened."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump())
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return repr(value)


def _one(value: Any) -> str | None:
    """A scope parameter as a column value: one id as itself, several joined by commas."""
    if value is None:
        return None
    if isinstance(value, str):
        return value[:255]
    return ",".join(str(v) for v in value)[:255] or None


class ActivityLog:
    """Records calls of one DeepContext and reads them back."""

    def __init__(self, store: Store, settings: DeepContextSettings, clock: Clock, tasks: BackgroundTasks) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.tasks = tasks
        self._queue: list[dict[str, Any]] = []
        self._writer: asyncio.Task[Any] | None = None
        self._wake: asyncio.Event | None = None
        #: records dropped because the queue was full (``activity_queue_max``)
        self.dropped = 0

    # --- recording ----------------------------------------------------------------------------------

    def origin(self) -> Origin | None:
        """The caller when this call is to be recorded, else None."""
        origin = _ORIGIN.get() or Origin("python")
        if origin.via == "inspector" or self.store.read_only:
            return None
        wanted = self.settings.activity_log
        recorded = origin.via in _RECORDED_BY_DEFAULT if wanted is None else wanted
        return origin if recorded else None

    def search(self, origin: Origin, user_id: str, res: SearchResponse, params: Mapping[str, Any]) -> None:
        hits = [_hit(rank, r) for rank, r in enumerate(res.results, start=1)]
        record = {"params": _jsonable(dict(params)), "results": [h.model_dump() for h in hits]}
        self._enqueue(origin, "search", user_id, res.query, params, res.took_ms, record, hits)

    def context(self, origin: Origin, user_id: str, res: ContextResult, params: Mapping[str, Any]) -> None:
        included = [
            ActivityItem(part=i.part, id=i.id, memory_id=i.memory_id, tokens=i.tokens, score=i.score, why=i.why, text=i.text)
            for i in res.items
        ]
        left = [
            ActivityItem(
                part=o.part,
                id=o.id,
                memory_id=o.memory_id,
                tokens=o.tokens,
                score=o.score,
                why=o.why,
                text=o.preview[:PREVIEW_CHARS],
                cause=o.cause,
            )  # fmt: skip
            for o in res.left_out
        ]
        memories = [i for i in included if i.memory_id is not None]
        hits = [
            ActivityHit(memory_id=i.memory_id or 0, rank=rank, score=i.score or 0.0, text=i.text)
            for rank, i in enumerate(memories, start=1)
        ]
        record = {
            "params": _jsonable({**params, "budget_tokens": res.budget_tokens}),
            "included": [i.model_dump() for i in included],
            "left_out": [i.model_dump() for i in left],
            "total_tokens": res.total_tokens,
        }
        self._enqueue(origin, "context", user_id, res.query, params, res.took_ms, record, hits)

    def _enqueue(
        self, origin: Origin, kind: str, user_id: str, query: str, params: Mapping[str, Any], took_ms: float | None,
        record: dict[str, Any], hits: list[ActivityHit],
    ) -> None:  # fmt: skip
        if len(self._queue) >= self.settings.activity_queue_max:
            self.dropped += 1
            return
        self._queue.append(
            {
                "user_id": user_id, "kind": kind, "via": origin.via, "key_id": origin.key_id,
                "agent_id": _one(params.get("agent_id")), "run_id": _one(params.get("run_id")),
                "conversation_id": _one(params.get("conversation_id")), "query": query, "took_ms": took_ms,
                "created_at": self.clock.now(), "details": record,
                "hits": list({h.memory_id: h.rank for h in reversed(hits)}.items()),
            }
        )  # fmt: skip
        if self._writer is None or self._writer.done():
            self._wake = asyncio.Event()
            self._writer = self.tasks.spawn(self._drain(self._wake))

    async def _drain(self, wake: asyncio.Event) -> None:
        while self._queue:
            # gather the calls of a moment into one transaction: a busy agent's searches then share
            # a commit, and the writes stay out of the way of the searches that follow
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), BATCH_SECONDS)
            batch, self._queue = self._queue, []
            since = self.clock.now() - timedelta(days=self.settings.activity_max_age_days)
            await asyncio.to_thread(self.store.activity_log.write, batch, keep=self.settings.activity_max_calls, since=since)

    # --- reading ------------------------------------------------------------------------------------

    async def page(
        self, user_id: str, *, kind: str | None = None, via: str | None = None, agent_id: str | None = None,
        run_id: str | None = None, conversation_id: str | None = None, after: datetime | str | None = None,
        before: datetime | str | None = None, limit: int = 50, cursor: str | None = None,
    ) -> ActivityPage:  # fmt: skip
        from deepcontext.store import ActivityFilters, decode_cursor, encode_cursor

        user_id = check_id(user_id, "user_id")
        limit = check_limit(limit, hi=200)
        if kind is not None and kind not in ("search", "context"):
            raise ValidationError("kind must be search or context", field="kind")
        if via is not None and via not in ("python", "rest", "mcp", "cli"):
            raise ValidationError("via must be python, rest, mcp or cli", field="via")
        filters = ActivityFilters(
            kind=kind, via=via, agent_id=check_scope(agent_id, "agent_id"), run_id=check_scope(run_id, "run_id"),
            conversation_id=check_scope(conversation_id, "conversation_id"), after=parse_time(after, "after"),
            before=parse_time(before, "before"),
        )  # fmt: skip
        before_id = decode_cursor(cursor) if cursor else None
        rows = await asyncio.to_thread(self.store.activity_log.page, user_id, filters, limit=limit + 1, before_id=before_id)
        more = len(rows) > limit
        rows = rows[:limit]
        return ActivityPage(calls=[_call(r) for r in rows], next_cursor=encode_cursor(rows[-1].id) if more else None)

    async def call(self, user_id: str, call_id: int) -> ActivityCall:
        user_id = check_id(user_id, "user_id")
        cid = check_row_id(call_id, "call_id")
        row = await asyncio.to_thread(self.store.activity_log.get, user_id, cid)
        if row is None:
            raise NotFoundError(f"no recorded call {cid} of user {user_id!r}")
        return _call(row)

    def write_now(self) -> None:
        """Have the writer write what is queued without waiting for more."""
        if self._wake is not None:
            self._wake.set()

    async def flush(self) -> None:
        """Write the records queued so far now, and wait until they are."""
        self.write_now()
        while self._writer is not None and not self._writer.done():
            await asyncio.wait([self._writer])


def _hit(rank: int, r: Any) -> ActivityHit:
    return ActivityHit(memory_id=r.memory_id, rank=rank, score=r.score, similarity=r.similarity, legs=dict(r.legs), text=r.text)


def _call(row: ActivityRow) -> ActivityCall:
    rec = row.record
    return ActivityCall(
        id=row.id, user_id=row.user_id, kind="context" if row.kind == "context" else "search", via=row.via,
        key_id=row.key_id, agent_id=row.agent_id, run_id=row.run_id, conversation_id=row.conversation_id,
        query=row.query, params=dict(rec.get("params") or {}), took_ms=row.took_ms, created_at=row.created_at,
        results=[ActivityHit.model_validate(h) for h in rec.get("results") or []],
        included=[ActivityItem.model_validate(i) for i in rec.get("included") or []],
        left_out=[ActivityItem.model_validate(i) for i in rec.get("left_out") or []],
        total_tokens=rec.get("total_tokens"),
    )  # fmt: skip
