"""mem0's ``AsyncMemory`` and ``Memory`` over a :class:`DeepContext`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Self

from deepcontext.compat.mem0 import views as v
from deepcontext.compat.mem0.config import read_config
from deepcontext.core import DeepContext
from deepcontext.errors import MemoryNotFoundError, ValidationError
from deepcontext.services.validation import parse_filters
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import HistoryEvent, MemoryStatus

__all__ = ["AsyncMemory", "Memory"]


_UNSET: Any = object()
#: what mem0 2.x raises for its platform-only temporal parameters
_NOT_IN_OSS = "The {} parameter is not supported by the OSS Memory SDK."
#: the most results one engine search returns
_SEARCH_POOL = 100


class AsyncMemory:
    """mem0's ``AsyncMemory``: ``add``, ``search``, ``get``, ``get_all``, ``update``, ``delete``,
    ``delete_all``, ``history``, ``reset``, ``chat``, results as ``{"results": [...]}``.

    Args:
        config: mem0's configuration dict (or ``MemoryConfig``): its ``llm``, ``embedder`` and
            ``vector_store`` become deepcontext settings (see :func:`~deepcontext.compat.mem0.config.read_config`);
            what deepcontext cannot do raises :class:`~deepcontext.errors.ValidationError`.
        context: a :class:`DeepContext` to work on (the caller keeps ownership). Without it one is
            built from ``config`` and ``settings`` (keyword arguments of :class:`DeepContext`, which
            win over the config's) and closed by :meth:`close`.
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
        if context is not None and settings:
            raise ValidationError("give a context or settings, not both", field="context")
        asked = read_config(config, settings)
        if context is not None:
            _no_settings_for(asked.settings)
        self._owns = context is None
        self._ctx = context if context is not None else DeepContext(**{**asked.settings, **settings})
        asked.check(self._ctx.settings)  # nothing is opened before init(): nothing to close on failure
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

    async def __aenter__(self) -> Self:
        await self._engine()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------------------------------
    async def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: Any = None,
        agent_id: Any = None,
        run_id: Any = None,
        metadata: Mapping[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Store a text (said by the user), one message or a list of ``{role, content}`` messages.
        ``infer=True`` keeps the memories extracted from them; ``infer=False`` keeps each user and
        assistant message as one memory, as given. Returns ``{"results": [{"id", "memory",
        "event"}]}`` (with ``actor_id`` and ``role`` for ``infer=False``)."""
        if timestamp is not None:
            raise ValidationError(_NOT_IN_OSS.format("timestamp"), field="timestamp")
        if memory_type is not None:
            raise ValidationError("memory_type (procedural memories) is not supported", field="memory_type")
        if prompt is not None:
            raise ValidationError("a custom extraction prompt is not supported", field="prompt")
        if not isinstance(infer, bool):
            raise ValidationError("infer must be true or false", field="infer")
        user, agent, run = self._ids(user_id, agent_id, run_id, what="add")
        if isinstance(messages, str):
            msgs: Any = [{"role": "user", "content": messages}]
        elif isinstance(messages, Mapping):
            msgs = [messages]
        elif isinstance(messages, list):
            msgs = messages
        else:
            raise ValidationError("messages must be a string, a message or a list of messages", field="messages")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be an object", field="metadata")
        meta = {k: val for k, val in (metadata or {}).items() if k not in (*v.ENTITY_KEYS, "actor_id")}
        expiry = v.expiration_of(expiration_date)
        if expiry is not None:
            meta[v.EXPIRATION_KEY] = expiry
        ctx = await self._engine()
        res = await ctx.add(
            msgs,
            user,
            "default" if infer else v.RAW_CONVERSATION,
            agent_id=agent,
            run_id=run,
            metadata=meta or None,
            infer=infer,
        )
        views, lasts = await asyncio.to_thread(self._added, user, res.memory_ids)
        results = []
        for view in views:
            last = lasts.get(view.id)
            if last is HistoryEvent.NOOP:
                continue  # a duplicate of a memory it had: mem0 adds nothing either
            event = "UPDATE" if last in (HistoryEvent.UPDATE, HistoryEvent.REPLACE, HistoryEvent.MERGE) else "ADD"
            out: dict[str, Any] = {"id": str(view.id), "memory": view.text, "event": event}
            if not infer:
                out["actor_id"] = view.actor_id
                out["role"] = view.role
            results.append(out)
        return {"results": results}

    def _added(self, user: str, ids: list[int]) -> tuple[list[v.View], dict[int, HistoryEvent]]:
        store, now = self._ctx.store, self._ctx.clock.now()
        mems = store.get_memories(user, ids, details=True)
        live = [m for m in mems if m.status is MemoryStatus.ACTIVE]
        shown = [x for x in v.views_of(store, user, live, now)[0] if x is not None]
        # what this add did to each memory is its latest history entry
        lasts = {x.id: h[-1].event for x in shown if (h := store.history(user, x.id))}
        return shown, lasts

    async def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Mapping[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        user_id: Any = None,
        agent_id: Any = None,
        run_id: Any = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Hybrid search over the user's memories (of the agent and run, when given), best first.
        ``filters`` holds the entity ids and metadata conditions; ``threshold`` drops results
        scoring below it (``score`` is the calibrated relevance on mem0's scale); ``explain`` adds
        ``score_details``; ``show_expired`` includes memories past their ``expiration_date``.
        ``rerank`` is accepted and has no effect (the engine always rescores)."""
        if reference_date is not None:
            raise ValidationError(_NOT_IN_OSS.format("reference_date"), field="reference_date")
        user, agents, runs, meta = self._scope(user_id, agent_id, run_id, filters)
        n = v.count_of(limit if limit is not None else top_k, "top_k" if limit is None else "limit")
        floor = v.threshold_of(threshold)
        for flag, name in ((rerank, "rerank"), (explain, "explain"), (show_expired, "show_expired")):
            if not isinstance(flag, bool):
                raise ValidationError(f"{name} must be true or false", field=name)
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query must be a non-empty string", field="query")
        if n == 0:
            return {"results": []}
        ctx = await self._engine()
        if not show_expired:
            meta = v.unexpired(meta, ctx.clock.now().date())
        res = await ctx.search(
            query.strip(), user, limit=min(n * 2 + 10, _SEARCH_POOL),
            agent_id=agents, run_id=runs, metadata=meta, min_score=v.relevance_from_score(floor) if floor > 0 else None,
        )  # fmt: skip
        hits = {r.memory_id: r for r in res.results}
        scope = parse_filters(agent_id=agents, run_id=runs, metadata=meta)
        views, standing_in = await asyncio.to_thread(self._views, user, list(hits), scope)
        results: list[dict[str, Any]] = []
        seen: set[int] = set()
        for hit_id, view in zip(hits, views, strict=True):
            r = hits[hit_id]
            score = v.score_from_relevance(r.score)
            # a hidden turn found by the search stands for the memories derived from it
            for shown in [view] if view is not None else standing_in.get(hit_id, []):
                if score < floor or shown.id in seen or (shown.id != hit_id and shown.id in hits):
                    continue
                seen.add(shown.id)
                out = v.item(shown)
                out["score"] = score
                if explain:
                    out["score_details"] = {
                        "relevance": r.score,
                        "similarity": r.similarity,
                        "legs": dict(r.legs),
                        "final_score": score,
                        "threshold": floor,
                    }
                results.append(out)
        return {"results": results[:n]}

    def _views(
        self, user: str, ids: list[int], scope: MemoryFilters | None = None
    ) -> tuple[list[v.View | None], dict[int, list[v.View]]]:
        store = self._ctx.store
        return v.views_of(store, user, store.get_memories(user, ids, details=True), self._ctx.clock.now(), scope)

    async def get(self, memory_id: str | int) -> dict[str, Any] | None:
        """The memory with this id (whoever's it is), or None if there is none (or it was deleted)."""
        found = await self._find(memory_id)
        if found is None:
            return None
        views = (await asyncio.to_thread(self._views, found[1], [found[0]]))[0]
        view = views[0] if views else None
        if view is None or view.memory.status is not MemoryStatus.ACTIVE:
            return None
        out = v.item(view)
        out["score"] = None  # mem0's get() carries its item's empty score
        return out

    async def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        user_id: Any = None,
        agent_id: Any = None,
        run_id: Any = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The user's memories (of the agent and run, passing ``filters``, when given), newest
        first, at most ``top_k``."""
        user, agents, runs, meta = self._scope(user_id, agent_id, run_id, filters)
        n = v.count_of(limit if limit is not None else top_k, "top_k" if limit is None else "limit")
        if not isinstance(show_expired, bool):
            raise ValidationError("show_expired must be true or false", field="show_expired")
        if n == 0:
            return {"results": []}
        ctx = await self._engine()
        if not show_expired:
            meta = v.unexpired(meta, ctx.clock.now().date())
        results: list[dict[str, Any]] = []
        cursor = None
        while len(results) < n:
            page = await ctx.list(user, agent_id=agents, run_id=runs, metadata=meta, limit=min(1000, n * 2 + 10), cursor=cursor)
            views = (await asyncio.to_thread(self._views, user, [m.id for m in page.memories]))[0]
            results += [v.item(x) for x in views if x is not None][: n - len(results)]
            cursor = page.next_cursor
            if cursor is None:
                break
        return {"results": results}

    async def update(
        self,
        memory_id: str | int,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, str]:
        """New text (``text``, or ``data``), metadata merged into the memory's (as mem0 does) and /
        or a new ``expiration_date`` (None clears it); the old text stays in its history."""
        new_text = text if text is not None else data
        if new_text is None and metadata is None and expiration_date is _UNSET:
            raise ValidationError("give at least one of text, metadata, expiration_date", field="text")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be an object", field="metadata")
        expiry = v.expiration_of(expiration_date) if expiration_date is not _UNSET else None
        mid, user = await self._owned(memory_id)
        mem = await self._ctx.get(mid, user)
        if mem.status is not MemoryStatus.ACTIVE:
            raise MemoryNotFoundError(memory_id, user)
        if new_text is None:
            content = await asyncio.to_thread(v.turn_content, self._ctx.store, user, mem)
            new_text = v.shown_text(mem.text, content)
        merged: dict[str, Any] | None = None
        if metadata is not None or expiration_date is not _UNSET:
            # mem0 merges: keys not given keep their value; the entity ids are not metadata
            merged = dict(mem.metadata)
            merged.update({k: val for k, val in (metadata or {}).items() if k not in (*v.ENTITY_KEYS, "actor_id")})
            if expiration_date is not _UNSET:
                if expiry is None:
                    merged.pop(v.EXPIRATION_KEY, None)
                else:
                    merged[v.EXPIRATION_KEY] = expiry
        await self._ctx.update(mid, new_text, user, metadata=merged)
        return {"message": "Memory updated successfully!"}

    async def delete(self, memory_id: str | int) -> dict[str, str]:
        """Forget a memory (it stays in its history)."""
        mid, user = await self._owned(memory_id)
        await self._ctx.delete(mid, user)
        return {"message": "Memory deleted successfully!"}

    async def delete_all(self, user_id: Any = None, agent_id: Any = None, run_id: Any = None) -> dict[str, str]:
        """Forget every memory of the user (of the agent and / or run, when given)."""
        user, agent, run = self._ids(user_id, agent_id, run_id, what="delete_all")
        ctx = await self._engine()
        await ctx.delete_memories(user, agent_id=agent, run_id=run)
        return {"message": "Memories deleted successfully!"}

    async def history(self, memory_id: str | int) -> list[dict[str, Any]]:
        """Every change of a memory, oldest first (an empty list for an unknown id)."""
        found = await self._find(memory_id)
        if found is None:
            return []
        return await asyncio.to_thread(self._history, found[0], found[1])

    def _history(self, mid: int, user: str) -> list[dict[str, Any]]:
        store = self._ctx.store
        mem = store.get_memories(user, [mid], details=True)[0]
        content = v.turn_content(store, user, mem)
        turn = store.get_turns(user, [mem.sources[0].turn_id])[0] if content is not None else None
        view = v.View(mem, mem.text, role=turn.role if turn else None, actor_id=turn.name if turn else None)
        shown = (HistoryEvent.ADD, HistoryEvent.UPDATE, HistoryEvent.REPLACE, HistoryEvent.DELETE)
        return [v.history_item(h, view, content) for h in store.history(user, mid) if h.event in shown]

    async def reset(self) -> None:
        """Delete everything of every user in the database."""
        ctx = await self._engine()
        for user in await ctx.users():
            await ctx.delete_user(user)

    async def chat(self, query: str) -> Any:
        """Not implemented, as in mem0."""
        raise NotImplementedError("Chat function not implemented yet.")

    # ------------------------------------------------------------------------------------------
    def _ids(self, user_id: Any, agent_id: Any, run_id: Any, *, what: str) -> tuple[str, str | None, str | None]:
        user = v.entity_id(user_id, "user_id")
        agent, run = v.entity_id(agent_id, "agent_id"), v.entity_id(run_id, "run_id")
        if user is None and agent is None and run is None:
            raise ValidationError(f"{what} needs at least one of user_id, agent_id, run_id", field="user_id")
        if user == "*":
            raise ValidationError("user_id '*' is not supported: queries never cross users", field="user_id")
        return (self.default_user_id if user is None else user), agent, run

    def _scope(
        self, user_id: Any, agent_id: Any, run_id: Any, filters: Mapping[str, Any] | None
    ) -> tuple[str, Any, Any, dict[str, Any] | None]:
        """(user, agents, runs, metadata filter) from the keyword ids and the filter's entity ids."""
        given = {
            "user_id": v.entity_id(user_id, "user_id"),
            "agent_id": v.entity_id(agent_id, "agent_id"),
            "run_id": v.entity_id(run_id, "run_id"),
        }
        ids, meta = v.split_filters(filters)
        for key, value in ids.items():
            if given[key] is not None and given[key] != value:
                raise ValidationError(f"{key} given twice with different values", field=key)
            given[key] = value
        if given["user_id"] is None and given["agent_id"] is None and given["run_id"] is None:
            raise ValidationError("filters must contain at least one of user_id, agent_id, run_id", field="filters")
        if given["user_id"] == "*":
            raise ValidationError("user_id '*' is not supported: queries never cross users", field="user_id")
        user = self.default_user_id if given["user_id"] is None else given["user_id"]
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


def _no_settings_for(asked: Mapping[str, Any]) -> None:
    """A given engine is configured already: a config asking for settings cannot apply to it."""
    if asked:
        raise ValidationError(
            f"the config asks for {', '.join(sorted(asked))}, but context= is an engine configured already: "
            "configure that engine instead, or give the config without context=",
            field="config",
        )


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
        asked = read_config(config, settings)
        if context is not None:
            _no_settings_for(asked.settings)
        self._owns = context is None
        self._sync: SyncDeepContext = context if context is not None else SyncDeepContext(**{**asked.settings, **settings})
        try:
            asked.check(self._sync.settings)
        except BaseException:
            self.close()  # the engine's event loop thread
            raise
        self._async = AsyncMemory(context=self._sync.async_context, default_user_id=default_user_id)

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

    def __enter__(self) -> Self:
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
    chat = _blocking("chat")
