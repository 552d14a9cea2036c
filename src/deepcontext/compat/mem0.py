"""mem0's open-source ``Memory`` / ``AsyncMemory`` interface over the deepcontext engine.

Code written for mem0 runs with ``from deepcontext.compat.mem0 import Memory``.
:class:`AsyncMemory` is the implementation; :class:`Memory` runs it on a
:class:`~deepcontext.SyncDeepContext`'s event loop. Ids are deepcontext's integer ids as strings
(unique across users); without ``user_id`` memories go to ``default_user_id``; mem0's provider
``config`` does not apply; ``score`` is deepcontext's calibrated relevance (0-1).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from deepcontext.core import DeepContext
from deepcontext.errors import MemoryNotFoundError, ValidationError
from deepcontext.types import HistoryEntry, HistoryEvent, Memory as StoredMemory, MemorySearchResult, MemoryStatus

__all__ = ["AsyncMemory", "Memory"]

log = logging.getLogger("deepcontext")

_ENTITY_KEYS = ("user_id", "agent_id", "run_id")


class AsyncMemory:
    """mem0's ``AsyncMemory``: ``add``, ``search``, ``get``, ``get_all``, ``update``, ``delete``,
    ``delete_all``, ``history``, ``reset``, results as ``{"results": [...]}``.

    Args:
        config: mem0's configuration; accepted for compatibility and not used.
        context: a :class:`DeepContext` to work on (the caller keeps ownership). Without it one is
            built from ``settings`` (keyword arguments of :class:`DeepContext`) and closed by
            :meth:`close`.
        default_user_id: the user of memories added or looked for without a ``user_id``.
    """

    def __init__(
        self,
        config: Any = None,
        *,
        context: DeepContext | None = None,
        default_user_id: str = "default",
        **settings: Any,
    ) -> None:
        if config:
            log.warning("deepcontext.compat.mem0: mem0's provider configuration is not used; configure deepcontext instead")
        if context is not None and settings:
            raise ValidationError("give a context or settings, not both", field="context")
        self._owns = context is None
        self._ctx = context if context is not None else DeepContext(**settings)
        self.default_user_id = default_user_id

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any] | None = None, **kwargs: Any) -> AsyncMemory:
        return cls(config_dict, **kwargs)

    @property
    def context(self) -> DeepContext:
        """The engine behind this interface."""
        return self._ctx

    async def _engine(self) -> DeepContext:
        await self._ctx.init()  # idempotent: the first call opens the database
        return self._ctx

    async def close(self) -> None:
        """Close the engine if this object built it."""
        if self._owns:
            await self._ctx.close()

    async def __aenter__(self) -> AsyncMemory:
        await self._engine()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------------
    async def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        expiration_date: str | date | None = None,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Store a text (said by the user), one message or a list of ``{role, content}`` messages
        and the memories derived from them. ``infer=False`` keeps the messages without extraction.
        Returns ``{"results": [{"id", "memory", "event"}]}`` for the memories written."""
        if memory_type is not None:
            raise ValidationError("memory_type (procedural memories) is not supported", field="memory_type")
        if prompt is not None:
            raise ValidationError("a custom extraction prompt is not supported", field="prompt")
        user = self._user(user_id, agent_id, run_id)
        if isinstance(messages, str):
            msgs: Any = [{"role": "user", "content": messages}]
        elif isinstance(messages, Mapping):
            msgs = [messages]
        else:
            msgs = messages
        ctx = await self._engine()
        res = await ctx.add(
            msgs,
            user,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            infer=infer,
            expires_at=_expiry(expiration_date),
        )
        results = []
        for mid in res.memory_ids:
            mem = await ctx.get(mid, user)
            first = (await ctx.history(mid, user))[:1]
            event = "ADD" if not first or first[0].event is HistoryEvent.ADD else "UPDATE"
            results.append({"id": str(mem.id), "memory": mem.text, "event": event})
        return {"results": results}

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        top_k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """Hybrid search over the user's memories (of the agent and run, when given). ``filters``
        holds metadata conditions and may hold the entity ids themselves (mem0's newer form);
        ``threshold`` drops results scoring below it. ``rerank`` is accepted and has no effect
        (the engine always rescores)."""
        user, agents, runs, meta = self._scope(user_id, agent_id, run_id, filters)
        n = top_k if top_k is not None else limit
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValidationError(f"limit must be a non-negative integer, got {n!r}", field="limit")
        minimum = _threshold(threshold)
        if n == 0:
            return {"results": []}
        ctx = await self._engine()
        res = await ctx.search(query, user, limit=min(n, 100), agent_id=agents, run_id=runs, metadata=meta)
        return {"results": [_search_item(r, user) for r in res.results if minimum is None or r.score >= minimum]}

    async def get(self, memory_id: str | int) -> dict[str, Any] | None:
        """The memory with this id (whoever's it is), or None if there is none (or it was deleted)."""
        found = await self._find(memory_id)
        if found is None:
            return None
        mem = await self._ctx.get(found[0], found[1])
        return _item(mem) if mem.status is MemoryStatus.ACTIVE else None

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """The user's memories (of the agent and run, passing ``filters``, when given), newest first."""
        user, agents, runs, meta = self._scope(user_id, agent_id, run_id, filters)
        n = top_k if top_k is not None else limit
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValidationError(f"limit must be a non-negative integer, got {n!r}", field="limit")
        if n == 0:
            return {"results": []}
        ctx = await self._engine()
        page = await ctx.list(user, agent_id=agents, run_id=runs, metadata=meta, limit=min(n, 1000))
        return {"results": [_item(m) for m in page.memories]}

    async def update(
        self,
        memory_id: str | int,
        data: str | None = None,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, str]:
        """New text (``data``, or ``text``) and / or new metadata for a memory; the old text stays
        in its history."""
        new_text = text if text is not None else data
        if new_text is None and metadata is None:
            raise ValidationError("give the new text (data / text) or metadata", field="data")
        mid, user = await self._owned(memory_id)
        if new_text is None:
            new_text = (await self._ctx.get(mid, user)).text
        await self._ctx.update(mid, new_text, user, metadata=metadata)
        return {"message": "Memory updated successfully!"}

    async def delete(self, memory_id: str | int) -> dict[str, str]:
        """Forget a memory (it stays in its history)."""
        mid, user = await self._owned(memory_id)
        await self._ctx.delete(mid, user)
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """Forget every memory of the user (of the agent and / or run, when given)."""
        user = self._user(user_id, agent_id, run_id, what="delete_all")
        ctx = await self._engine()
        await ctx.delete_memories(user, agent_id=agent_id, run_id=run_id)
        return {"message": "Memories deleted successfully!"}

    async def history(self, memory_id: str | int) -> list[dict[str, Any]]:
        """Every change of a memory, oldest first (an empty list for an unknown id)."""
        found = await self._find(memory_id)
        if found is None:
            return []
        return [_history_item(h) for h in await self._ctx.history(found[0], found[1])]

    async def reset(self) -> None:
        """Delete everything of every user in the database."""
        ctx = await self._engine()
        for user in await ctx.users():
            await ctx.delete_user(user)

    # ------------------------------------------------------------------------------------------
    def _user(self, user_id: Any, agent_id: Any, run_id: Any, *, what: str = "add") -> str:
        if user_id is None and agent_id is None and run_id is None:
            raise ValidationError(f"{what} needs at least one of user_id, agent_id, run_id", field="user_id")
        if user_id == "*":
            raise ValidationError("user_id '*' is not supported: queries never cross users", field="user_id")
        return self.default_user_id if user_id is None else user_id

    def _scope(
        self, user_id: Any, agent_id: Any, run_id: Any, filters: Mapping[str, Any] | None
    ) -> tuple[str, Any, Any, dict[str, Any] | None]:
        """(user, agents, runs, metadata filter) from the keyword ids and the filter's entity ids."""
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        ids, meta = _split_filters(filters)
        for key, value in ids.items():
            if given[key] is not None and given[key] != value:
                raise ValidationError(f"{key} given twice with different values", field=key)
            given[key] = value
        if given["user_id"] is not None and not isinstance(given["user_id"], str):
            raise ValidationError("user_id must be one id: queries never cross users", field="user_id")
        user = self._user(given["user_id"], given["agent_id"], given["run_id"], what="this call")
        scopes = [None if given[k] == "*" else given[k] for k in ("agent_id", "run_id")]
        return user, scopes[0], scopes[1], meta

    async def _find(self, memory_id: Any) -> tuple[int, str] | None:
        """(id, owner) of a memory id given as mem0 gives it (a string), or None if none has it."""
        if isinstance(memory_id, bool):
            raise ValidationError("memory_id must be an id", field="memory_id")
        if isinstance(memory_id, str) and memory_id.strip().isdigit():
            memory_id = int(memory_id)
        if not isinstance(memory_id, int) or memory_id <= 0:
            return None  # not an id deepcontext gives out, so no memory has it
        ctx = await self._engine()
        try:
            return memory_id, await ctx.memory_owner(memory_id)
        except MemoryNotFoundError:
            return None

    async def _owned(self, memory_id: Any) -> tuple[int, str]:
        found = await self._find(memory_id)
        if found is None:
            raise MemoryNotFoundError(memory_id, "")
        return found


# --- blocking shell ---------------------------------------------------------------------------------
def _blocking(name: str) -> Any:
    method = getattr(AsyncMemory, name)

    @functools.wraps(method)
    def call(self: Memory, *args: Any, **kwargs: Any) -> Any:
        return self._sync.run_coroutine(getattr(self._async, name)(*args, **kwargs))

    return call


class Memory:
    """mem0's ``Memory``: :class:`AsyncMemory`'s methods, blocking. Takes the same arguments, except
    that ``context`` is a :class:`~deepcontext.SyncDeepContext`."""

    def __init__(self, config: Any = None, *, context: Any = None, default_user_id: str = "default", **settings: Any) -> None:
        from deepcontext.sync import SyncDeepContext

        if context is not None and settings:
            raise ValidationError("give a context or settings, not both", field="context")
        self._owns = context is None
        self._sync: SyncDeepContext = context if context is not None else SyncDeepContext(**settings)
        self._async = AsyncMemory(config, context=self._sync.async_context, default_user_id=default_user_id)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any] | None = None, **kwargs: Any) -> Memory:
        return cls(config_dict, **kwargs)

    @property
    def default_user_id(self) -> str:
        return self._async.default_user_id

    @property
    def context(self) -> Any:
        """The :class:`~deepcontext.SyncDeepContext` behind this interface."""
        return self._sync

    def close(self) -> None:
        """Close the engine if this object built it."""
        if self._owns:
            self._sync.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    add = _blocking("add")
    search = _blocking("search")
    get = _blocking("get")
    get_all = _blocking("get_all")
    update = _blocking("update")
    delete = _blocking("delete")
    delete_all = _blocking("delete_all")
    history = _blocking("history")
    reset = _blocking("reset")


# --- shapes -----------------------------------------------------------------------------------------
def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def _scoped(out: dict[str, Any], user: str, agent: str | None, run: str | None) -> dict[str, Any]:
    out["user_id"] = user
    if agent is not None:
        out["agent_id"] = agent
    if run is not None:
        out["run_id"] = run
    return out


def _item(m: StoredMemory) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(m.id),
        "memory": m.text,
        "metadata": dict(m.metadata) or None,
        "created_at": _iso(m.created_at),
        "updated_at": _iso(m.updated_at),
    }
    return _scoped(out, m.user_id, m.agent_id, m.run_id)


def _search_item(r: MemorySearchResult, user: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(r.memory_id),
        "memory": r.text,
        "score": r.score,
        "metadata": dict(r.metadata) or None,
        "created_at": _iso(r.created_at),
        "updated_at": None,
    }
    return _scoped(out, user, r.agent_id, r.run_id)


def _history_item(h: HistoryEntry) -> dict[str, Any]:
    return {
        "id": str(h.id),
        "memory_id": str(h.memory_id),
        "old_memory": h.old_text,
        "new_memory": h.new_text,
        "event": h.event.value if h.event is not HistoryEvent.REPLACE else "UPDATE",
        "created_at": _iso(h.created_at),
        "is_deleted": h.event is HistoryEvent.DELETE,
        "actor_id": h.actor,
    }


def _split_filters(filters: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The entity ids of a mem0 filter (top-level keys, or one-key conditions of a top-level AND)
    and the metadata filter that remains."""
    if filters is None:
        return {}, None
    if not isinstance(filters, Mapping):
        raise ValidationError("filters must be an object", field="filters")
    ids: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in filters.items():
        if key in _ENTITY_KEYS:
            ids[key] = _entity_value(key, value)
        elif key == "AND" and isinstance(value, (list, tuple)):
            kept = []
            for cond in value:
                if isinstance(cond, Mapping) and len(cond) == 1 and next(iter(cond)) in _ENTITY_KEYS:
                    k, v = next(iter(cond.items()))
                    ids[k] = _entity_value(k, v)
                else:
                    kept.append(cond)
            if kept:
                rest[key] = kept
        else:
            rest[key] = value
    return ids, (rest or None)


def _entity_value(key: str, value: Any) -> Any:
    """``"id"``, ``{"eq": "id"}``, ``{"in": [ids]}`` or ``"*"`` (any) of an entity key."""
    if isinstance(value, Mapping) and len(value) == 1:
        op, operand = next(iter(value.items()))
        if op == "eq":
            return operand
        if op == "in" and isinstance(operand, (list, tuple)) and key != "user_id":
            return list(operand)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    raise ValidationError(
        f"{key} in filters takes an id{'' if key == 'user_id' else ', {in: [ids]} or *'}", field=f"filters.{key}"
    )


def _threshold(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValidationError(f"threshold must be a number between 0 and 1, got {value!r}", field="threshold")
    return float(value)


def _expiry(value: Any) -> datetime | None:
    """mem0's expiration date (YYYY-MM-DD): the memories expire when that day ends (UTC)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        day = value.date()
    elif isinstance(value, date):
        day = value
    else:
        try:
            day = date.fromisoformat(str(value).strip())
        except ValueError:
            raise ValidationError(
                f"expiration_date must be a date (YYYY-MM-DD), got {value!r}", field="expiration_date"
            ) from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
