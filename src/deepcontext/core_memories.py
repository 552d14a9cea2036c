"""The methods of :class:`~deepcontext.core.DeepContext` over a user's memories: one memory (get,
edit, pin, restore, delete, its history), listings, the knowledge graph around an entity, users,
export and import. Each one hands its call to the memory service; they make up a mixin of their own
so ``core.py`` holds the engine's construction, its wiring and the calls with logic of their own
(add, search, summary, context).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepcontext.services.requests import EditRequest, ImportRequest, ListRequest, UpdateRequest
from deepcontext.types import (
    DeletedMemoryInfo,
    GraphNeighbourInfo,
    HistoryEntry,
    Memory,
    MemoryListing,
    MemoryPage,
    RowCounts,
    Turn,
    UpdatedMemory,
    UserInfo,
)

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.core import _Services
    from deepcontext.settings import DeepContextSettings

__all__ = ["MemoryMethods"]


class MemoryMethods:
    """DeepContext's calls of :class:`~deepcontext.services.memories.MemoryService`."""

    if TYPE_CHECKING:
        settings: DeepContextSettings
        clock: Clock

        def _wired(self) -> _Services: ...

    # --- single memories, users, graph, export (MemoryService) -------------------------------------
    async def get(self, memory_id: int, user_id: str) -> Memory:
        """A memory of this user with its provenance and entities, whatever its status."""
        return await self._wired().memories.get(memory_id, user_id)

    async def update(
        self, memory_id: int, text: str, user_id: str, *, metadata: Mapping[str, Any] | None = None
    ) -> UpdatedMemory:
        """Change a memory's text (re-embedded; the old text stays in its history) and, when given,
        replace its metadata."""
        req = UpdateRequest.of(self.settings, memory_id=memory_id, text=text, user_id=user_id, metadata=metadata)
        return await self._wired().memories.update(req)

    async def edit(
        self,
        memory_id: int,
        user_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        pinned: bool | None = None,
        expires_at: datetime | str | None = None,
        clear_expiry: bool = False,
    ) -> Memory:
        """Change any of a memory's text (re-embedded), metadata, pin and expiry in one transaction
        and one history entry; what is not given stays, and nothing is written when any of it is
        refused."""
        now = self.clock.now()
        req = EditRequest.of(
            self.settings, memory_id=memory_id, user_id=user_id, text=text, metadata=metadata, pinned=pinned,
            expires_at=expires_at, clear_expiry=clear_expiry, _context={"now": now},
        )  # fmt: skip
        return await self._wired().memories.edit(req, now)

    async def pin(self, memory_id: int, user_id: str) -> Memory:
        """Pin a memory: never decayed, consolidated or cleaned up, and always in ``context``."""
        return await self._wired().memories.pin(memory_id, user_id, True)

    async def unpin(self, memory_id: int, user_id: str) -> Memory:
        """Unpin a memory: it fades and merges like any other again."""
        return await self._wired().memories.pin(memory_id, user_id, False)

    async def restore(self, memory_id: int, user_id: str) -> Memory:
        """Make a deleted or decayed memory active again (its history says so); a superseded or
        merged one cannot be (ValidationError): its replacement holds what it said."""
        return await self._wired().memories.restore(memory_id, user_id)

    async def set_metadata(self, memory_id: int, user_id: str, metadata: Mapping[str, Any]) -> Memory:
        """Replace a memory's metadata, its text unchanged (the history keeps the old metadata)."""
        return await self._wired().memories.set_metadata(memory_id, user_id, metadata)

    async def set_expiry(
        self, memory_id: int, user_id: str, expires_at: datetime | str | None = None, *, ttl: float | timedelta | None = None
    ) -> Memory:
        """When a memory expires: at ``expires_at``, or ``ttl`` (seconds or a timedelta) from now;
        neither clears its expiry."""
        return await self._wired().memories.set_expiry(memory_id, user_id, expires_at, ttl=ttl)

    async def delete(self, memory_id: int, user_id: str) -> DeletedMemoryInfo:
        """Soft-delete a memory: gone from search and list, kept in history."""
        return await self._wired().memories.delete(memory_id, user_id)

    async def delete_memories(
        self,
        user_id: str,
        *,
        agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> builtins.list[int]:
        """Soft-delete every active memory of the user (of these agents / runs, passing the metadata
        filter, when given) in one transaction; returns their ids. Their history stays."""
        return await self._wired().memories.delete_memories(user_id, agent_id=agent_id, run_id=run_id, metadata=metadata)

    async def memory_owner(self, memory_id: int) -> str:
        """The user a memory belongs to (for in-process callers that hold only an id)."""
        return await self._wired().memories.memory_owner(memory_id)

    async def history(self, memory_id: int, user_id: str) -> builtins.list[HistoryEntry]:
        """Every change of a memory, oldest first."""
        return await self._wired().memories.history(memory_id, user_id)

    async def list(
        self, user_id: str, *, tier: str | Iterable[str] | None = None,
        memory_type: str | Iterable[str] | None = None, conversation_id: str | Iterable[str] | None = None,
        after: datetime | str | None = None, before: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None, include_inactive: bool = False, limit: int = 50,
        cursor: str | None = None, agent_id: str | Iterable[str] | None = None, run_id: str | Iterable[str] | None = None,
    ) -> MemoryPage:  # fmt: skip
        """Memories of a user, newest first, one page at a time (pass ``next_cursor`` back). The
        filters are those of :meth:`search`."""
        req = ListRequest.of(
            self.settings, user_id=user_id, tier=tier, memory_type=memory_type, conversation_id=conversation_id,
            after=after, before=before, metadata=metadata, include_inactive=include_inactive, limit=limit,
            cursor=cursor, agent_id=agent_id, run_id=run_id,
        )  # fmt: skip
        return await self._wired().memories.list(req)

    async def list_memories(
        self, user_id: str, tier: str | None = None, memory_type: str | None = None, limit: int = 50, offset: int = 0
    ) -> MemoryListing:
        """DeepContext 0.1's listing (offset paging). Prefer :meth:`list` (cursor paging)."""
        return await self._wired().memories.list_memories(user_id, tier, memory_type, limit, offset)

    async def turns(
        self, user_id: str, conversation_id: str = "default", limit: int = 50, *, before: int | None = None
    ) -> builtins.list[Turn]:
        """The last turns of a conversation, oldest first, verbatim; with ``before`` (a turn id),
        the last ones older than that turn (the page before)."""
        return await self._wired().memories.turns(user_id, conversation_id, limit, before=before)

    async def get_entity_graph(self, user_id: str, entity_name: str, depth: int = 2) -> builtins.list[GraphNeighbourInfo]:
        """The knowledge-graph neighbourhood of an entity, breadth first (see
        :meth:`MemoryService.get_entity_graph`). Raises EntityNotFoundError for an unknown entity."""
        return await self._wired().memories.get_entity_graph(user_id, entity_name, depth)

    async def delete_user(self, user_id: str) -> RowCounts:
        """Delete everything of a user from every table and cache (the activity log too). Returns
        rows deleted per table."""
        wired = self._wired()
        await wired.activity.flush()  # a call recorded before this one must not outlive the user
        return await wired.memories.delete_user(user_id)

    async def set_user(self, user_id: str, *, name: str) -> None:
        """Set the user's display name: what memories call the user. One transaction."""
        await self._wired().memories.set_user(user_id, name=name)

    async def get_user(self, user_id: str) -> UserInfo:
        """The user's profile: ``{"user_id": ..., "name": display name or None}``."""
        return await self._wired().memories.get_user(user_id)

    async def users(self, *, tenant: str | None = None, after: str | None = None, limit: int | None = None) -> builtins.list[str]:
        """User ids with data, in byte order: only ``tenant``'s (``tenant/...``) when given, the
        ones after ``after`` (pass a page's last id back), at most ``limit``."""
        return await self._wired().memories.users(tenant=tenant, after=after, limit=limit)

    async def stats(self, user_id: str) -> RowCounts:
        """Rows of a user per table."""
        return await self._wired().memories.stats(user_id)

    async def export(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Everything of a user as JSON-ready records: what :meth:`import_records` restores."""
        async for rec in self._wired().memories.export(user_id):
            yield rec

    async def import_records(
        self,
        records: Iterable[Mapping[str, Any]],
        user_id: str | None = None,
        *,
        part_size: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        defer_vector_index: bool = False,
    ) -> RowCounts:
        """Restore an export (into ``user_id``, default: the exported user). One transaction; with
        ``part_size``, one per that many records, resumable: run again after an interruption, it
        continues after the last committed part. ``progress(done, total)`` counts records.
        ``defer_vector_index``: on PostgreSQL, drop the HNSW index for the import and build it once
        after it (several times faster for a large import; other processes' searches scan exactly
        meanwhile and their writes wait while it builds); nothing changes on SQLite."""
        req = ImportRequest.of(
            self.settings, records=records, user_id=user_id, part_size=part_size, progress=progress,
            defer_vector_index=defer_vector_index,
        )  # fmt: skip
        return await self._wired().memories.import_records(req)

    async def import_v01(self, path: str | Path) -> dict[str, RowCounts]:
        """Import a DeepContext 0.1 SQLite file (read-only), one transaction per user."""
        return await self._wired().memories.import_v01(path)
