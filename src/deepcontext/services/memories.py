"""Single memories, users, the knowledge graph and export / import: what the matching
``DeepContext`` methods delegate to, inputs validated here."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from deepcontext.errors import EntityNotFoundError, MemoryNotFoundError, ValidationError
from deepcontext.ids import check_tenant
from deepcontext.services.naming import rename_user
from deepcontext.services.requests import ListRequest
from deepcontext.services.validation import (
    check_flag,
    check_id,
    check_json,
    check_limit,
    check_text,
    check_user_name,
    expiry,
    parse_filters,
)
from deepcontext.store.interface import MemoryEdit
from deepcontext.text import content_hash, entity_norm
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
    from deepcontext.embed.embedder import Embedder
    from deepcontext.services.ingest import IngestService
    from deepcontext.services.requests import EditRequest, ImportRequest, UpdateRequest
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store

__all__ = ["MemoryService", "check_memory_id", "deferred_vector_index"]

T = TypeVar("T")

#: ids are 64-bit signed integers in both databases
_MAX_ID = 2**63 - 1


def check_memory_id(memory_id: Any, field: str = "memory_id") -> int:
    """A memory (or turn) id is a positive integer (a string of digits is refused: ids are not text)."""
    if isinstance(memory_id, bool) or not isinstance(memory_id, int):
        raise ValidationError(f"{field} must be an integer, got {type(memory_id).__name__}", field=field)
    if not 0 < memory_id <= _MAX_ID:
        raise ValidationError(f"{field} must be between 1 and {_MAX_ID}, got {memory_id!r}", field=field)
    return memory_id


class MemoryService:
    """The memories, users and graph of one store."""

    def __init__(
        self, store: Store, embedder: Embedder, settings: DeepContextSettings, clock: Clock, ingest: IngestService
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.ingest = ingest

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def get(self, memory_id: int, user_id: str) -> Memory:
        """A memory of this user with its provenance and entities, whatever its status."""
        user_id = check_id(user_id, "user_id")
        mid = check_memory_id(memory_id)
        found = await self._db(self.store.get_memories, user_id, [mid])
        if not found:
            raise MemoryNotFoundError(memory_id, user_id)
        return found[0]

    async def update(self, req: UpdateRequest) -> UpdatedMemory:
        """Change a memory's text (re-embedded; the old text stays in its history) and, when given,
        replace its metadata."""
        user_id, mid, text, metadata = req.user_id, req.memory_id, req.text, req.metadata
        vec = await asyncio.to_thread(self.embedder.embed_one, text)
        mem = await self._db(
            self.store.update_memory,
            user_id,
            mid,
            text=text,
            content_hash=content_hash(text),
            embedding=vec,
            now=self.clock.now(),
            actor="user",
            reason="updated through the API",
            metadata=dict(metadata) if metadata is not None else None,
        )
        return {"memory_id": mem.id, "text": mem.text, "status": "updated"}

    async def pin(self, memory_id: int, user_id: str, pinned: bool = True) -> Memory:
        """Pin a memory (never decayed, consolidated or cleaned up; always in ``context``) or unpin it."""
        check_flag(pinned, "pinned")
        return await self._change(memory_id, user_id, MemoryEdit(pinned=pinned, reason="pinned" if pinned else "unpinned"))

    async def restore(self, memory_id: int, user_id: str) -> Memory:
        """Make a deleted or decayed memory active again (ValidationError for other statuses)."""
        return await self._change(memory_id, user_id, MemoryEdit(restore=True, reason="restored"))

    async def set_metadata(self, memory_id: int, user_id: str, metadata: Mapping[str, Any]) -> Memory:
        """Replace a memory's metadata, its text unchanged."""
        if not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be an object", field="metadata")
        check_json(metadata, "metadata")
        return await self._change(memory_id, user_id, MemoryEdit(metadata=dict(metadata), reason="metadata changed"))

    async def set_expiry(
        self, memory_id: int, user_id: str, expires_at: datetime | str | None = None, *, ttl: Any = None
    ) -> Memory:
        """When the memory expires (``expires_at`` or ``ttl`` from now); neither: it never does."""
        when = expiry(self.clock.now(), expires_at, ttl)
        edit = MemoryEdit(expires_at=when, clear_expiry=when is None, reason="expiry set" if when else "expiry cleared")
        return await self._change(memory_id, user_id, edit)

    async def edit(self, req: EditRequest, now: datetime) -> Memory:
        """Change any of a memory's text, metadata, pin and expiry in one transaction (one history
        entry); what is not given stays. Everything is checked before anything is written."""
        text, metadata, pinned, clear_expiry, when = req.new_text, req.metadata, req.pinned, req.clear_expiry, req.new_expiry
        vec = None if text is None else await asyncio.to_thread(self.embedder.embed_one, text)
        change = MemoryEdit(
            text=text, content_hash=None if text is None else content_hash(text), embedding=vec, pinned=pinned,
            metadata=None if metadata is None else dict(metadata), expires_at=when, clear_expiry=clear_expiry,
            reason="edited",
        )  # fmt: skip
        if change.empty:
            raise ValidationError("nothing to change: give text, metadata, pinned, expires_at or clear_expiry", field="memory_id")
        return await self._db(self.store.change_memory, req.user_id, req.memory_id, change, now=now, actor="user")

    async def _change(self, memory_id: int, user_id: str, edit: MemoryEdit) -> Memory:
        user_id = check_id(user_id, "user_id")
        mid = check_memory_id(memory_id)
        return await self._db(self.store.change_memory, user_id, mid, edit, now=self.clock.now(), actor="user")

    async def delete(self, memory_id: int, user_id: str) -> DeletedMemoryInfo:
        """Soft-delete a memory: gone from search and list, kept in history."""
        user_id = check_id(user_id, "user_id")
        mid = check_memory_id(memory_id)
        await self._db(
            self.store.delete_memory, user_id, mid, now=self.clock.now(), actor="user", reason="deleted through the API"
        )
        return {"memory_id": mid, "status": "deleted"}

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
        user_id = check_id(user_id, "user_id")
        filters = parse_filters(agent_id=agent_id, run_id=run_id, metadata=metadata)
        return await self._db(
            self.store.delete_memories, user_id, filters, now=self.clock.now(), actor="user", reason="deleted through the API"
        )

    async def memory_owner(self, memory_id: int) -> str:
        """The user a memory belongs to (memory ids are unique across users). For in-process callers
        that hold an id and nothing else; servers never use it. Raises MemoryNotFoundError."""
        mid = check_memory_id(memory_id)
        owner = await self._db(self.store.memory_owner, mid)
        if owner is None:
            raise MemoryNotFoundError(memory_id, "")
        return owner

    async def history(self, memory_id: int, user_id: str) -> list[HistoryEntry]:
        """Every change of a memory, oldest first."""
        user_id = check_id(user_id, "user_id")
        return await self._db(self.store.history, user_id, check_memory_id(memory_id))

    async def list(self, req: ListRequest) -> MemoryPage:
        """Memories of a user, newest first, one page at a time (pass ``next_cursor`` back). The
        filters are those of :meth:`search`."""
        memories, total, nxt = await self._db(
            self.store.list_memories, req.user_id, req.filters, limit=req.limit, cursor=req.cursor, now=self.clock.now()
        )
        return MemoryPage(total=total, memories=memories, next_cursor=nxt)

    async def list_memories(
        self,
        user_id: str,
        tier: str | None = None,
        memory_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryListing:
        """DeepContext 0.1's listing (offset paging). Prefer :meth:`list` (cursor paging)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset must be a non-negative integer", field="offset")
        limit = check_limit(limit, hi=1000)
        req = ListRequest.of(self.settings, user_id=user_id, tier=tier, memory_type=memory_type, limit=min(1000, offset + limit))
        page = await self.list(req)
        items = page.memories[offset : offset + limit]
        return {
            "total": page.total,
            "limit": limit,
            "offset": offset,
            "memories": [m.model_dump(mode="json") for m in items],
        }

    async def turns(
        self, user_id: str, conversation_id: str = "default", limit: int = 50, *, before: int | None = None
    ) -> builtins.list[Turn]:
        """The last turns of a conversation (of those older than turn ``before``), oldest first,
        verbatim."""
        user_id = check_id(user_id, "user_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        limit = check_limit(limit, hi=10_000)
        if before is not None:
            before = check_memory_id(before, "before")
        return await self._db(self.store.recent_turns, user_id, conversation_id, limit, before=before)

    async def get_entity_graph(self, user_id: str, entity_name: str, depth: int = 2) -> builtins.list[GraphNeighbourInfo]:
        """The knowledge-graph neighbourhood of an entity (matched case-insensitively by whole
        name): ``[{entity, entity_type, relation, depth, strength, via, direction}]``, breadth first.
        The entity itself comes first with depth 0 (no relation). ``direction`` is "out" for
        ``via --relation--> entity`` and "in" for ``entity --relation--> via``. Raises
        EntityNotFoundError for an unknown entity."""
        user_id = check_id(user_id, "user_id")
        name = check_text(entity_name, "entity_name", 512)
        depth = check_limit(depth, "depth", lo=0, hi=5)
        norm = entity_norm(name)
        found = await self._db(self.store.match_entities, user_id, [norm])
        if norm not in found:
            raise EntityNotFoundError(name, user_id)
        hood = await self._db(self.store.entity_neighbourhood, user_id, [found[norm][0]], depth)
        return [
            {
                "entity": h["entity"],
                "entity_type": h["entity_type"],
                "relation": h["relation"],
                "depth": h["depth"],
                "strength": h["strength"],
                "via": next((x["entity"] for x in hood if x["id"] == h["via"]), None),
                "direction": h["direction"],
            }
            for h in hood
        ]

    async def delete_user(self, user_id: str) -> RowCounts:
        """Delete everything of a user from every table and cache. Returns rows deleted per table."""
        user_id = check_id(user_id, "user_id")
        return await self._db(self.store.delete_user, user_id)

    async def set_user(self, user_id: str, *, name: str) -> None:
        """Set the user's display name: what memories call the user ("Ana lives in Lisbon", not "User
        lives in Lisbon"), in new memories and in the ones already stored. The user's entity keeps one
        node: the one of the former name (or of "User") is renamed, or merged into the entity of
        ``name``. One transaction."""
        user_id = check_id(user_id, "user_id")
        name = check_user_name(name)
        await rename_user(self.store, self.embedder, user_id, name, self.clock.now())
        self.ingest.name_changed(user_id, name)

    async def get_user(self, user_id: str) -> UserInfo:
        """The user's profile: ``{"user_id": ..., "name": display name or None}``."""
        user_id = check_id(user_id, "user_id")
        return {"user_id": user_id, "name": await self.ingest.user_name(user_id)}

    async def users(self, *, tenant: str | None = None, after: str | None = None, limit: int | None = None) -> builtins.list[str]:
        """Stored user ids in byte order: of ``tenant`` only (``tenant/...``, read from an index, so
        it costs what the tenant has), the ones after ``after`` (a previous page's last), at most
        ``limit``."""
        if tenant is not None:
            tenant = check_tenant(tenant)
        if after is not None:
            after = check_id(after, "after")
        if limit is not None:
            limit = check_limit(limit, hi=1_000_000)
        return await self._db(self.store.list_users, tenant, after=after, limit=limit)

    async def stats(self, user_id: str) -> RowCounts:
        """Rows of a user per table."""
        return await self._db(self.store.count_rows, check_id(user_id, "user_id"))

    async def export(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Everything of a user as JSON-ready records (turns, entities, relations, memories with
        provenance and history): what :meth:`import_records` restores."""
        from deepcontext.services.transfer import export_records

        user_id = check_id(user_id, "user_id")
        async for rec in export_records(self.store, self.embedder, user_id, self.clock.now()):
            yield rec

    async def import_records(self, req: ImportRequest) -> RowCounts:
        """Restore an export (into ``user_id``, default: the exported user). One transaction, or one
        per ``part_size`` records, resumable (see :func:`deepcontext.services.transfer.import_records`).
        ``defer_vector_index``: see :meth:`deepcontext.store.interface.Store.deferred_vector_index`."""
        from deepcontext.services.transfer import import_records

        rows = list(req.records)
        async with deferred_vector_index(self.store) if req.defer_vector_index else nullcontext():
            return await import_records(
                self.store, self.embedder, rows, req.user_id, self.clock.now(), part_size=req.part_size, progress=req.progress
            )

    async def import_v01(self, path: str | Path) -> dict[str, RowCounts]:
        """Import a DeepContext 0.1 SQLite file (read-only): every user's memories, entities,
        relations and conversation summaries, one transaction per user. Returns rows per table
        per user."""
        from deepcontext.services.legacy import import_v01

        return await import_v01(self, path)


@asynccontextmanager
async def deferred_vector_index(store: Store) -> AsyncIterator[None]:
    """:meth:`Store.deferred_vector_index <deepcontext.store.interface.Store.deferred_vector_index>`
    entered and left off the event loop (letting the index go waits for running queries; the exit
    builds it)."""
    scope = store.deferred_vector_index()
    await asyncio.to_thread(scope.__enter__)
    try:
        yield
    except BaseException as exc:
        await asyncio.to_thread(scope.__exit__, type(exc), exc, exc.__traceback__)
        raise
    await asyncio.to_thread(scope.__exit__, None, None, None)
