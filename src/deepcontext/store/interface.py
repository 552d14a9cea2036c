"""The store seam: everything the engine asks of a database, in one interface.

Stores are synchronous (the async facade runs each call in a worker thread). Every method takes
``user_id`` and touches only that user's rows; every write is one transaction. The data classes are
the vocabulary between engine and store (``store/records.py``, re-exported here).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.clock import Clock
from deepcontext.store.activity import ActivityLog
from deepcontext.store.apikeys import ApiKeys
from deepcontext.store.conversations import ConversationRows
from deepcontext.store.inspection import Inspection
from deepcontext.store.records import (
    DEFAULT_FILTERS,
    AddOutcome,
    AddPlan,
    CandidateRow,
    ColumnKind,
    DecayChange,
    DecayRow,
    EntityUpsert,
    FactWrite,
    GroupWrite,
    HeldLock,
    MemoryChange,
    MemoryEdit,
    MemoryFilters,
    MemoryRewrite,
    NewMemory,
    NewTurn,
    PurgeResult,
    RankFields,
    RelationUpsert,
)
from deepcontext.store.summaries import Summaries
from deepcontext.types import (
    HistoryEntry,
    Memory,
    MemoryStatus,
    Provenance,
    Turn,
)

__all__ = [
    "DEFAULT_FILTERS",
    "AddOutcome",
    "AddPlan",
    "CandidateRow",
    "ColumnKind",
    "DecayChange",
    "DecayRow",
    "EntityUpsert",
    "FactWrite",
    "GroupWrite",
    "HeldLock",
    "MemoryChange",
    "MemoryEdit",
    "MemoryFilters",
    "MemoryRewrite",
    "NewMemory",
    "NewTurn",
    "PurgeResult",
    "RankFields",
    "RelationUpsert",
    "Store",
]


class Store(ABC):
    """A database holding memories, turns and the knowledge graph of many users."""

    backend: str = "abstract"
    #: opened read-only (SQLite: a file or directory this process may not write): writes fail with
    #: ReadOnlyDatabaseError, and nothing is written behind a read (access counts)
    read_only: bool = False
    #: the last write failed for want of disk space (DiskFullError); cleared by the next write that
    #: succeeds. Readiness reports it.
    disk_full: bool = False
    #: the inspector's reads (counts, the graph, a conversation's DAG, a lifecycle preview's inputs)
    inspection: Inspection
    #: API keys of the REST API and MCP server, and the inspector's sign-in sessions
    keys: ApiKeys
    #: the recorded search and context calls
    activity_log: ActivityLog
    #: running conversation summaries (None: the store keeps none)
    summaries: Summaries | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    @abstractmethod
    def migrate(self) -> int:
        """Create or upgrade the schema to the current version; returns the version."""

    @abstractmethod
    def schema_version(self) -> int:
        """The schema version of the database (0 for an empty one)."""

    @abstractmethod
    def ensure_embedder(self, model_id: str, dimensions: int) -> None:
        """Record the embedder on first use; raise ConfigurationError if the database holds vectors
        of another model or size."""

    @abstractmethod
    def close(self) -> None: ...

    def warm_up(self) -> None:
        """Start background work that makes the first searches after opening faster, and return at
        once (SQLite: reading big users' saved vectors and graphs); nothing by default."""

    @abstractmethod
    def size_bytes(self) -> int | None:
        """The database's size on disk (SQLite: the file with its write-ahead log; PostgreSQL: the
        database), or None when it cannot be read."""

    # --- writes -------------------------------------------------------------------------------
    @abstractmethod
    def apply_add(self, plan: AddPlan) -> AddOutcome:
        """Write an add: turns, memories, provenance, graph, history. One transaction."""

    @abstractmethod
    def update_memory(
        self,
        user_id: str,
        memory_id: int,
        *,
        text: str,
        content_hash: str,
        embedding: np.ndarray | None,
        now: datetime,
        actor: str,
        reason: str | None,
        metadata: dict[str, Any] | None = None,
    ) -> Memory:
        """Change a memory's text in place; the old text goes to history. Raises MemoryNotFoundError."""

    @abstractmethod
    def change_memory(self, user_id: str, memory_id: int, change: MemoryEdit, *, now: datetime, actor: str) -> Memory:
        """Pin or unpin, replace the metadata, set or clear the expiry, or restore a deleted or
        decayed memory (``change``); one history entry (RESTORE or UPDATE, with what changed in
        its details). Raises MemoryNotFoundError, or ValidationError for a memory that cannot be
        restored."""

    @abstractmethod
    def delete_memory(self, user_id: str, memory_id: int, *, now: datetime, actor: str, reason: str | None) -> Memory:
        """Soft-delete (status deleted); history entry. Raises MemoryNotFoundError."""

    @abstractmethod
    def delete_memories(
        self, user_id: str, filters: MemoryFilters, *, now: datetime, actor: str, reason: str | None
    ) -> list[int]:
        """Soft-delete every memory of the user that passes ``filters`` (history entries); returns
        their ids. One transaction."""

    @abstractmethod
    def delete_user(self, user_id: str) -> dict[str, int]:
        """Remove every row of the user from every table (and caches); counts per table."""

    @abstractmethod
    def bump_access(self, user_id: str, memory_ids: Sequence[int], now: datetime) -> None:
        """Atomically increment access counts of these memories."""

    # --- reads --------------------------------------------------------------------------------
    @abstractmethod
    def get_memories(
        self, user_id: str, memory_ids: Sequence[int], *, details: bool = True, max_sources: int | None = None
    ) -> list[Memory]:
        """Memories by id (any status), in the order given; unknown ids are skipped. With ``details``
        the sources (the oldest ``max_sources`` turns, all if None) and entities are filled."""

    @abstractmethod
    def list_memories(
        self,
        user_id: str,
        filters: MemoryFilters,
        *,
        limit: int,
        cursor: str | None,
        now: datetime,
    ) -> tuple[list[Memory], int, str | None]:
        """A page of memories, newest first: (memories, total matching, next cursor)."""

    @abstractmethod
    def memory_owner(self, memory_id: int) -> str | None:
        """The user a memory belongs to (memory ids are unique across users), or None."""

    @abstractmethod
    def find_active_by_hash(
        self, user_id: str, hashes: Sequence[str], now: datetime, *, scope: tuple[str | None, str | None] | None = None
    ) -> dict[str, int]:
        """Active, unexpired memories with these content hashes: hash -> memory id. With ``scope``
        (agent id, run id), only memories of that agent and run where given (None: any)."""

    @abstractmethod
    def superseded_versions(
        self, user_id: str, memory_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, int]]:
        """The superseded memories matching ``filters`` (their statuses aside) that these memories, or
        memories citing the same turns, replaced (one step back): ``(superseded id, one of memory_ids)``
        pairs, newest first."""

    @abstractmethod
    def find_active_by_metadata_keys(
        self,
        user_id: str,
        keys: Sequence[str],
        now: datetime,
        *,
        limit: int = 50,
        scope: tuple[str | None, str | None] | None = None,
    ) -> list[Memory]:
        """Active, unexpired facts (short and long term) whose metadata has any of these top-level keys,
        newest first (the stored values of single-valued facts, see :mod:`deepcontext.extract.slots`).
        With ``scope`` (agent id, run id), only memories of that agent and run where given."""

    @abstractmethod
    def history(self, user_id: str, memory_id: int) -> list[HistoryEntry]:
        """Every change of a memory, oldest first. Raises MemoryNotFoundError."""

    @abstractmethod
    def memory_links(self, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None) -> dict[int, list[int]]:
        """Active memories linked to each of ``memory_ids``, most similar first (at most
        ``per_memory`` each when given)."""

    def result_details(
        self, user_id: str, memory_ids: Sequence[int], *, max_sources: int, links_per_memory: int
    ) -> tuple[dict[int, Memory], dict[int, list[int]]]:
        """What a search returns for its results: the memories with entities and their oldest
        ``max_sources`` sources, and up to ``links_per_memory`` linked memories each (0: none).
        Backends may answer it in one round trip."""
        mems = {m.id: m for m in self.get_memories(user_id, memory_ids, details=True, max_sources=max_sources)}
        links = self.memory_links(user_id, list(mems), links_per_memory) if links_per_memory > 0 and mems else {}
        return mems, links

    @abstractmethod
    def get_turns(self, user_id: str, turn_ids: Sequence[int]) -> list[Turn]: ...

    @abstractmethod
    def recent_turns(self, user_id: str, conversation_id: str, limit: int, *, before: int | None = None) -> list[Turn]:
        """The last turns of a conversation (by id; those older than turn ``before``), oldest first."""

    @abstractmethod
    def count_rows(self, user_id: str) -> dict[str, int]:
        """Rows of this user per table (for checks and `deepcontext stats`)."""

    @abstractmethod
    def list_users(self, tenant: str | None = None, *, after: str | None = None, limit: int | None = None) -> list[str]:
        """Stored user ids in byte order (of ``tenant`` only, read from the index: what the tenant
        has, not what all tenants have), the ones after ``after``, at most ``limit``."""

    @abstractmethod
    def active_memory_count(self, user_id: str) -> int:
        """Number of active memories of the user (cheap when nothing changed)."""

    def pinned_memories(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        """Active, unexpired pinned memories of the user, by importance then newest first."""
        found = [
            m
            for m in self.iter_memories(user_id)
            if m.pinned and m.status is MemoryStatus.ACTIVE and (m.expires_at is None or m.expires_at > now)
        ]
        found.sort(key=lambda m: (-m.importance, -m.id))
        return found[:limit]

    @contextmanager
    def deferred_vector_index(self) -> Iterator[None]:
        """A scope for a bulk import: where the vector index is maintained on every insert, it is
        dropped for the scope and built once when the scope closes (searches stay exact meanwhile).
        Default: nothing changes."""
        yield

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A scope in which this thread's reads may share one connection / snapshot. Default: none."""
        yield

    #: whether a search runs its vector leg on another thread, inside :meth:`side_reading`, while its
    #: own thread reads the other legs (worth it where the database works in another process)
    concurrent_vector_leg: bool = False

    @contextmanager
    def side_reading(self) -> Iterator[None]:
        """As :meth:`reading`, for reads that run beside a thread holding :meth:`reading`: their
        connection comes from a pool of its own, so a full main pool cannot make them wait on the
        searches that wait on them. Default: :meth:`reading`."""
        with self.reading():
            yield

    # --- retrieval legs: ranked (memory_id, leg score), best first ----------------------------
    @abstractmethod
    def vector_search(
        self, user_id: str, query: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]: ...

    def vector_search_batch(
        self, user_id: str, queries: np.ndarray, k: int, filters: MemoryFilters, now: datetime
    ) -> list[list[tuple[int, float]]]:
        """:meth:`vector_search` for several query vectors (rows of ``queries``) at once."""
        return [self.vector_search(user_id, q, k, filters, now) for q in queries]

    @abstractmethod
    def keyword_search(
        self, user_id: str, terms: Sequence[str], k: int, filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, float]]: ...

    @abstractmethod
    def match_entities(self, user_id: str, norm_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Entities whose normalised name is one of ``norm_names``: norm -> (id, mention_count)."""

    @abstractmethod
    def entity_neighbourhood(
        self,
        user_id: str,
        entity_ids: Sequence[int],
        depth: int,
        *,
        max_per_level: int | None = None,
        max_expand_mentions: int | None = None,
        enough: int | None = None,
    ) -> list[dict[str, Any]]:
        """Entities reachable within ``depth`` hops (both directions), breadth first. Each item:
        {id, entity, entity_type, relation, depth, strength, via, direction, mention_count}; direction
        is "out" when the relation runs from ``via`` to the entity, "in" when it runs from the entity
        to ``via``. Start entities come first with depth 0. ``max_per_level`` keeps only the strongest new entities of each hop.
        ``max_expand_mentions``: an entity mentioned more often than this (a hub, such as the user
        themself) is listed but its relations are not followed. ``enough``: no hop past the first
        once at least this many of the entities listed are not hubs."""

    @abstractmethod
    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        """(memory_id, entity_id) pairs of memories mentioning these entities, the most recent first,
        at most ``limit`` per entity (one number for all, or one per entity id, in order)."""

    @abstractmethod
    def memory_entities(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]: ...

    @abstractmethod
    def rank_fields(self, user_id: str, memory_ids: Sequence[int], *, standing_only: bool = False) -> dict[int, RankFields]:
        """Importance, confidence, time and access count of candidates (cheap, no details);
        ``standing_only``: of those stating a standing fact only (the profile leg's deeper pool)."""

    @abstractmethod
    def sources(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[Provenance]]: ...

    @abstractmethod
    def rank_fields_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, RankFields]:
        """:meth:`rank_fields` of the memories (within ``filters``) citing any of these turns."""

    @abstractmethod
    def superseders_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, tuple[int, RankFields]]:
        """The memories (within ``filters``) that superseded a memory citing one of these turns: per
        memory id, the turn and its :meth:`rank_fields`."""

    # --- the user's display name ----------------------------------------------------------------
    @abstractmethod
    def user_name(self, user_id: str) -> str | None:
        """The display name set for the user, else the first name on the user's own turns, else None."""

    @abstractmethod
    def set_user_name(
        self, user_id: str, name: str, now: datetime, rewrites: Sequence[MemoryRewrite] = (), *, source: str = "set"
    ) -> int:
        """Set the display name. One transaction: the entity of the name used until now (a former
        display name, or "User") becomes the entity of ``name`` (merged into it if it exists), and
        each memory of ``rewrites`` still active with its old text takes its new text (history
        entry). Returns the memories rewritten. ``source`` says who named the user: "set" (the
        application, which always wins) or "introduced" (the user's own words, which do not replace a
        name set); -1 when the name was not replaced."""

    # --- key/value (deepcq tiers and other per-user state) -------------------------------------
    @abstractmethod
    def kv_get(self, user_id: str, namespace: str, key: str) -> Any | None: ...

    @abstractmethod
    def kv_put(self, user_id: str, namespace: str, key: str, value: Any, now: datetime) -> None: ...

    @abstractmethod
    def kv_delete(self, user_id: str, namespace: str, key: str) -> bool: ...

    @abstractmethod
    def kv_list(self, user_id: str, namespace: str) -> dict[str, Any]: ...

    # --- export -------------------------------------------------------------------------------
    @abstractmethod
    def export_rows(self, user_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row of the user, table by table in import order: (table name, column values)."""

    @abstractmethod
    def import_rows(
        self,
        user_id: str,
        rows: Sequence[tuple[str, dict[str, Any]]],
        now: datetime,
        *,
        fingerprint: str | None = None,
        maps: dict[str, dict[int, int]] | None = None,
        fixups: Sequence[tuple[str, dict[str, Any]]] = (),
        part: str | None = None,
    ) -> dict[str, int]:
        """Write exported rows for ``user_id`` with fresh ids, references remapped. One transaction.
        With a ``fingerprint`` (of the export), a second import of it into the user writes nothing.
        In parts: shared ``maps`` of old to new ids, each ``part`` recorded with its ids, and the
        ``fixups`` (earlier parts' rows) whose references the last part resolves."""

    @abstractmethod
    def import_columns(self, table: str) -> Mapping[str, ColumnKind] | None:
        """The columns an exported row of ``table`` may carry, each with how its JSON value is read;
        None for a table an import never writes."""

    @abstractmethod
    def iter_memories(self, user_id: str, *, batch: int = 500) -> Iterator[Memory]:
        """Every memory of the user (any status), by id, with details."""

    # --- one conversation's graph (the Memory Graph's DAG) ----------------------------------------
    @abstractmethod
    def conversation_rows(self, user_id: str, conversation_id: str) -> ConversationRows:
        """The turns, edges and key memories of one conversation, read and written as a graph."""

    # --- per-user locks ----------------------------------------------------------------------------
    @abstractmethod
    def user_lock(
        self,
        user_id: str,
        name: str,
        *,
        timeout: float = 30.0,
        ttl: float = 600.0,
        clock: Clock | None = None,
        abandon: threading.Event | None = None,
    ) -> AbstractContextManager[HeldLock]:
        """Hold the user's lock ``name`` for the body of a ``with``, across processes and machines
        (LockTimeoutError after ``timeout`` s; see :func:`deepcontext.store.user_lock`)."""

    # --- the memory lifecycle's steps (decay, consolidation, cleanup) --------------------------
    # Each is one short transaction or one read; a write re-checks inside it what it read before
    # (still active, not accessed meanwhile), so work planned earlier never overwrites another writer.
    @abstractmethod
    def count_short_term(self, user_id: str, now: datetime) -> int:
        """The user's active, unexpired short-term memories."""

    @abstractmethod
    def set_consolidation_due(self, user_id: str, due: bool) -> None:
        """Flag (or clear) the user for consolidation."""

    @abstractmethod
    def consolidation_flag(self, user_id: str) -> bool: ...

    @abstractmethod
    def users_due(self) -> list[str]:
        """Users flagged for consolidation."""

    @abstractmethod
    def speaker_entity_ids(self, user_id: str) -> list[int]:
        """Entities naming the speakers of the user's conversations (never a consolidation's theme)."""

    @abstractmethod
    def decay_rows(self, user_id: str, now: datetime) -> list[DecayRow]:
        """The user's active, unpinned, unexpired memories with what the forgetting curve needs."""

    @abstractmethod
    def apply_decay(self, user_id: str, changes: Sequence[DecayChange], now: datetime) -> list[int]:
        """Write new importances and deactivate the changes marked so; the ids deactivated."""

    @abstractmethod
    def soft_delete_faded(self, user_id: str, threshold: float, now: datetime) -> list[int]:
        """Soft-delete the unpinned working and short-term memories under ``threshold``; their ids."""

    @abstractmethod
    def purge(self, user_id: str, *, deleted_before: datetime, expired_before: datetime, now: datetime) -> PurgeResult:
        """Remove for good what was deleted or expired before these times, with its merged history."""

    @abstractmethod
    def consolidation_candidates(self, user_id: str, now: datetime, limit: int) -> list[CandidateRow]:
        """Active short-term memories a consolidation may merge, oldest first."""

    @abstractmethod
    def write_consolidations(self, user_id: str, groups: Sequence[GroupWrite], now: datetime) -> list[list[int] | None]:
        """Write each group in its own transaction: the ids of its long-term memories, or None for a
        group whose sources changed since they were read (nothing written for it)."""
