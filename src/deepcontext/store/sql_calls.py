"""The Store interface's reads and writes of a SQL store, each handed to the repository that holds
its SQL (:class:`~deepcontext.store.sql.SQLStore` creates the repositories; this mixin only calls them)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.store.interface import (
    AddOutcome,
    AddPlan,
    MemoryEdit,
    MemoryFilters,
    MemoryRewrite,
    RankFields,
)
from deepcontext.types import HistoryEntry, Memory, Provenance, Turn

if TYPE_CHECKING:
    from deepcontext.store.sql_add import AddWriter
    from deepcontext.store.sql_graph import GraphReads
    from deepcontext.store.sql_kv import KeyValues
    from deepcontext.store.sql_memories import MemoryReads
    from deepcontext.store.sql_provenance import ProvenanceReads
    from deepcontext.store.sql_transfer import Transfer
    from deepcontext.store.sql_turns import TurnReads
    from deepcontext.store.sql_writes import MemoryWriter

__all__ = ["RepositoryCalls"]


class RepositoryCalls:
    """The Store methods a repository answers, by that repository."""

    memories: MemoryReads
    writer: MemoryWriter
    adds: AddWriter
    turns: TurnReads
    graph: GraphReads
    provenance: ProvenanceReads
    kv: KeyValues
    transfer: Transfer

    # memories
    def get_memories(
        self, user_id: str, memory_ids: Sequence[int], *, details: bool = True, max_sources: int | None = None
    ) -> list[Memory]:
        return self.memories.get_memories(user_id, memory_ids, details=details, max_sources=max_sources)

    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, limit: int, cursor: str | None, now: datetime
    ) -> tuple[list[Memory], int, str | None]:
        return self.memories.list_memories(user_id, filters, limit=limit, cursor=cursor, now=now)

    def superseded_versions(
        self, user_id: str, memory_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> list[tuple[int, int]]:
        return self.memories.superseded_versions(user_id, memory_ids, filters, now)

    def find_active_by_metadata_keys(
        self,
        user_id: str,
        keys: Sequence[str],
        now: datetime,
        *,
        limit: int = 50,
        scope: tuple[str | None, str | None] | None = None,
    ) -> list[Memory]:
        return self.memories.find_active_by_metadata_keys(user_id, keys, now, limit=limit, scope=scope)

    def history(self, user_id: str, memory_id: int) -> list[HistoryEntry]:
        return self.memories.history(user_id, memory_id)

    def active_memory_count(self, user_id: str) -> int:
        return self.memories.active_memory_count(user_id)

    def list_users(self, tenant: str | None = None, *, after: str | None = None, limit: int | None = None) -> list[str]:
        return self.memories.list_users(tenant, after=after, limit=limit)

    def count_rows(self, user_id: str) -> dict[str, int]:
        return self.memories.count_rows(user_id)

    def iter_memories(self, user_id: str, *, batch: int = 500) -> Iterator[Memory]:
        return self.memories.iter_memories(user_id, batch=batch)

    def embeddings(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, np.ndarray]:
        return self.memories.embeddings(user_id, memory_ids)

    def rank_fields(self, user_id: str, memory_ids: Sequence[int], *, standing_only: bool = False) -> dict[int, RankFields]:
        return self.memories.rank_fields(user_id, memory_ids, standing_only=standing_only)

    def find_active_by_hash(
        self, user_id: str, hashes: Sequence[str], now: datetime, *, scope: tuple[str | None, str | None] | None = None
    ) -> dict[str, int]:
        return self.memories.find_active_by_hash(user_id, hashes, now, scope=scope)

    def memory_owner(self, memory_id: int) -> str | None:
        return self.memories.memory_owner(memory_id)

    def pinned_memories(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        return self.memories.pinned_memories(user_id, now, limit)

    # writer
    def apply_add(self, plan: AddPlan) -> AddOutcome:
        return self.adds.apply_add(plan)

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
        return self.writer.update_memory(
            user_id,
            memory_id,
            text=text,
            content_hash=content_hash,
            embedding=embedding,
            now=now,
            actor=actor,
            reason=reason,
            metadata=metadata,
        )

    def delete_memory(self, user_id: str, memory_id: int, *, now: datetime, actor: str, reason: str | None) -> Memory:
        return self.writer.delete_memory(user_id, memory_id, now=now, actor=actor, reason=reason)

    def change_memory(self, user_id: str, memory_id: int, change: MemoryEdit, *, now: datetime, actor: str) -> Memory:
        return self.writer.change_memory(user_id, memory_id, change, now=now, actor=actor)

    def delete_memories(
        self, user_id: str, filters: MemoryFilters, *, now: datetime, actor: str, reason: str | None
    ) -> list[int]:
        return self.writer.delete_memories(user_id, filters, now=now, actor=actor, reason=reason)

    def delete_user(self, user_id: str) -> dict[str, int]:
        return self.writer.delete_user(user_id)

    def bump_access(self, user_id: str, memory_ids: Sequence[int], now: datetime) -> None:
        self.writer.bump_access(user_id, memory_ids, now)

    # turns
    def get_turns(self, user_id: str, turn_ids: Sequence[int]) -> list[Turn]:
        return self.turns.get_turns(user_id, turn_ids)

    def recent_turns(self, user_id: str, conversation_id: str, limit: int, *, before: int | None = None) -> list[Turn]:
        return self.turns.recent_turns(user_id, conversation_id, limit, before=before)

    # graph
    def match_entities(self, user_id: str, norm_names: Sequence[str]) -> dict[str, tuple[int, int]]:
        return self.graph.match_entities(user_id, norm_names)

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
        return self.graph.entity_neighbourhood(
            user_id, entity_ids, depth, max_per_level=max_per_level, max_expand_mentions=max_expand_mentions, enough=enough
        )

    def memories_for_entities(
        self, user_id: str, entity_ids: Sequence[int], filters: MemoryFilters, now: datetime, limit: int | Sequence[int]
    ) -> list[tuple[int, int]]:
        return self.graph.memories_for_entities(user_id, entity_ids, filters, now, limit)

    def memory_entities(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[str]]:
        return self.graph.memory_entities(user_id, memory_ids)

    # provenance
    def sources(self, user_id: str, memory_ids: Sequence[int]) -> dict[int, list[Provenance]]:
        return self.provenance.sources(user_id, memory_ids)

    def memory_links(self, user_id: str, memory_ids: Sequence[int], per_memory: int | None = None) -> dict[int, list[int]]:
        return self.provenance.memory_links(user_id, memory_ids, per_memory)

    def rank_fields_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, RankFields]:
        return self.memories.rank_fields_citing(user_id, turn_ids, filters, now)

    def superseders_citing(
        self, user_id: str, turn_ids: Sequence[int], filters: MemoryFilters, now: datetime
    ) -> dict[int, tuple[int, RankFields]]:
        return self.memories.superseders_citing(user_id, turn_ids, filters, now)

    # kv
    def user_name(self, user_id: str) -> str | None:
        return self.kv.user_name(user_id)

    def set_user_name(
        self, user_id: str, name: str, now: datetime, rewrites: Sequence[MemoryRewrite] = (), *, source: str = "set"
    ) -> int:
        return self.kv.set_user_name(user_id, name, now, rewrites, source=source)

    def kv_get(self, user_id: str, namespace: str, key: str) -> Any | None:
        return self.kv.kv_get(user_id, namespace, key)

    def kv_put(self, user_id: str, namespace: str, key: str, value: Any, now: datetime) -> None:
        self.kv.kv_put(user_id, namespace, key, value, now)

    def kv_delete(self, user_id: str, namespace: str, key: str) -> bool:
        return self.kv.kv_delete(user_id, namespace, key)

    def kv_list(self, user_id: str, namespace: str) -> dict[str, Any]:
        return self.kv.kv_list(user_id, namespace)

    # transfer
    def export_rows(self, user_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
        return self.transfer.export_rows(user_id)

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
        counts = self.transfer.import_rows(user_id, rows, now, fingerprint=fingerprint, maps=maps, fixups=fixups, part=part)
        if not counts.get("already_imported"):
            self.note_writes(sum(counts.values()))  # imports grow tables as adds do
        return counts

    def note_writes(self, rows: int) -> None:
        """``rows`` were written (a backend keeping the planner's statistics current counts them)."""
