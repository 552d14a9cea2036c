"""SyncDeepContext: the blocking shell. It owns one event loop in a background thread and runs the
async :class:`~deepcontext.core.DeepContext` methods there; no logic is copied."""

from __future__ import annotations

import asyncio
import builtins
import inspect
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from deepcontext.core import DeepContext
from deepcontext.retrieve.config import SearchConfig
from deepcontext.types import AddResponse, HistoryEntry, Memory, MemoryPage, SearchResponse, Turn

__all__ = ["SyncDeepContext"]

T = TypeVar("T")


class SyncDeepContext:
    """The same API as :class:`DeepContext`, blocking. Takes the same arguments.

    >>> with SyncDeepContext(database_url="sqlite:///mem.db") as ctx:   # doctest: +SKIP
    ...     ctx.add([{"role": "user", "content": "I live in Lisbon"}], user_id="ana")
    ...     ctx.search("where does Ana live?", user_id="ana")
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="deepcontext-sync", daemon=True)
        self._thread.start()
        self._async = self._run(_make(args, kwargs))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coro.close()
            from deepcontext.errors import ConfigurationError

            raise ConfigurationError("this SyncDeepContext is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this shell's event loop and wait for its result (for blocking shells
        built on this one, such as :class:`deepcontext.compat.mem0.Memory`)."""
        return self._run(coro)

    @property
    def async_context(self) -> DeepContext:
        """The async object behind this shell."""
        return self._async

    @property
    def settings(self) -> Any:
        return self._async.settings

    def init(self) -> None:
        self._run(self._async.init())

    def __getattr__(self, name: str) -> Any:
        """Methods of the async API not spelled out below (added by feature modules) are wrapped
        the same way: coroutines run on the private loop, async iterators are collected to lists."""
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._async, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **kw: self._run(attr(*a, **kw))
        if inspect.isasyncgenfunction(attr):

            async def collect(*a: Any, **kw: Any) -> list[Any]:
                return [x async for x in attr(*a, **kw)]

            return lambda *a, **kw: self._run(collect(*a, **kw))
        return attr

    def flush(self) -> None:
        self._run(self._async.flush())

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._async.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def __enter__(self) -> SyncDeepContext:
        self.init()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, messages: Sequence[Any], user_id: str, conversation_id: str = "default", **kwargs: Any) -> AddResponse:
        return self._run(self._async.add(messages, user_id, conversation_id, **kwargs))

    def search(
        self,
        query: str,
        user_id: str,
        limit: int = 10,
        tier: str | Iterable[str] | None = None,
        memory_type: str | Iterable[str] | None = None,
        include_graph: bool = True,
        *,
        config: SearchConfig | str | None = None,
        **filters: Any,
    ) -> SearchResponse:
        return self._run(
            self._async.search(query, user_id, limit, tier, memory_type, include_graph, config=config, **filters)
        )

    def get(self, memory_id: int, user_id: str) -> Memory:
        return self._run(self._async.get(memory_id, user_id))

    def update(self, memory_id: int, text: str, user_id: str, **kwargs: Any) -> dict[str, Any]:
        return self._run(self._async.update(memory_id, text, user_id, **kwargs))

    def delete(self, memory_id: int, user_id: str) -> dict[str, Any]:
        return self._run(self._async.delete(memory_id, user_id))

    def delete_memories(self, user_id: str, **kwargs: Any) -> builtins.list[int]:
        return self._run(self._async.delete_memories(user_id, **kwargs))

    def memory_owner(self, memory_id: int) -> str:
        return self._run(self._async.memory_owner(memory_id))

    def set_user(self, user_id: str, *, name: str) -> None:
        return self._run(self._async.set_user(user_id, name=name))

    def get_user(self, user_id: str) -> dict[str, Any]:
        return self._run(self._async.get_user(user_id))

    def history(self, memory_id: int, user_id: str) -> list[HistoryEntry]:
        return self._run(self._async.history(memory_id, user_id))

    def summary(self, user_id: str, conversation_id: str = "default") -> str | None:
        return self._run(self._async.summary(user_id, conversation_id))

    def list(self, user_id: str, **kwargs: Any) -> MemoryPage:
        return self._run(self._async.list(user_id, **kwargs))

    def list_memories(self, user_id: str, tier: str | None = None, memory_type: str | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        return self._run(self._async.list_memories(user_id, tier, memory_type, limit, offset))

    def turns(self, user_id: str, conversation_id: str = "default", limit: int = 50) -> builtins.list[Turn]:
        return self._run(self._async.turns(user_id, conversation_id, limit))

    def get_entity_graph(self, user_id: str, entity_name: str, depth: int = 2) -> builtins.list[dict[str, Any]]:
        return self._run(self._async.get_entity_graph(user_id, entity_name, depth))

    def delete_user(self, user_id: str) -> dict[str, int]:
        return self._run(self._async.delete_user(user_id))

    def users(self) -> builtins.list[str]:
        return self._run(self._async.users())

    def stats(self, user_id: str) -> dict[str, int]:
        return self._run(self._async.stats(user_id))

    def export(self, user_id: str) -> builtins.list[dict[str, Any]]:
        async def collect() -> builtins.list[dict[str, Any]]:
            return [r async for r in self._async.export(user_id)]

        return self._run(collect())

    def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        user_id: str | None = None,
        *,
        part_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        return self._run(self._async.import_records(records, user_id, part_size=part_size, progress=progress))

    def import_v01(self, path: str | Path) -> dict[str, dict[str, int]]:
        return self._run(self._async.import_v01(path))

    # --- memory lifecycle (deepcontext.lifecycle.service.LifecycleService) ---------------------------
    def run_lifecycle(self, user_id: str, **kwargs: Any) -> dict[str, Any]:
        return self._run(self._async.run_lifecycle(user_id, **kwargs))

    def consolidate(self, user_id: str, **kwargs: Any) -> dict[str, Any]:
        return self._run(self._async.consolidate(user_id, **kwargs))

    # --- conversation graphs (deepcontext.dialogue.conversations.DialogueService) --------------------
    def dialogue(self, user_id: str, conversation_id: str = "default", **kwargs: Any) -> Any:
        """A blocking :class:`~deepcontext.dialogue.session.SyncDialogueSession`."""
        from deepcontext.dialogue.session import SyncDialogueSession

        return SyncDialogueSession(self._run(self._async.dialogue(user_id, conversation_id, **kwargs)), self._run)

    def conversation_path(self, user_id: str, conversation_id: str = "default", **kwargs: Any) -> Any:
        return self._run(self._async.conversation_path(user_id, conversation_id, **kwargs))

    def export_conversation(self, user_id: str, conversation_id: str = "default", format: str = "json") -> str:
        return self._run(self._async.export_conversation(user_id, conversation_id, format))

    def compress_conversation(self, user_id: str, conversation_id: str = "default", **kwargs: Any) -> int | None:
        return self._run(self._async.compress_conversation(user_id, conversation_id, **kwargs))

    # --- context for the next prompt (deepcontext.context.assembly.ContextService) --------------------
    def context(self, query: str, user_id: str, conversation_id: str | None = None, **kwargs: Any) -> Any:
        """A :class:`~deepcontext.context.ContextResult` (see ``DeepContext.context``)."""
        return self._run(self._async.context(query, user_id, conversation_id, **kwargs))

    def tiers(self, user_id: str, schema: Any, **kwargs: Any) -> Any:
        """The user's persisted :class:`~deepcontext.query.DeepCQ` (its methods are synchronous)."""
        return self._run(self._async.tiers(user_id, schema, **kwargs))


async def _make(args: tuple[Any, ...], kwargs: dict[str, Any]) -> DeepContext:
    # built inside the loop thread so its asyncio primitives belong to that loop
    return DeepContext(*args, **kwargs)
