"""MemoryStore: key memories kept outside the conversation graph (the Memory Graph seed's API).

Key memories (formulas, conclusions, preferences) are never compressed away: compression archives
graph nodes, never memories, and nodes cited by a memory with ``packable=False`` are not
compressed at all. ``canonical_key`` deduplicates: adding a memory whose key is held merges its
sources into the holder and returns the holder's id; removing a memory frees its key.

Share the backend with the graph (``MemoryStore(graph.backend)``) so provenance (``source_nodes``)
refers to that graph's nodes; with a store-backed backend the memories are rows of the deepcontext
``memories`` table.
"""

from __future__ import annotations

from collections.abc import Iterable

from deepcontext.dialogue.backend import DialogueBackend, NewKeyMemory
from deepcontext.dialogue.vocabulary import KEY_MEMORY_STATUSES, KeyMemory
from deepcontext.errors import ValidationError

__all__ = ["MemoryStore"]


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer", field=what)
    return value


class MemoryStore:
    """Key memories of one conversation. ``MemoryStore()`` keeps them in memory (ids from 0)."""

    def __init__(self, backend: DialogueBackend | None = None) -> None:
        if backend is None:
            from deepcontext.dialogue.memory_backend import InMemoryBackend

            backend = InMemoryBackend()
        self.backend: DialogueBackend = backend

    @property
    def memories(self) -> dict[int, KeyMemory]:
        """Snapshot id -> memory (the seed exposed this dict)."""
        return {m.id: m for m in self.backend.get_memories()}

    def add_memory(
        self,
        content: str,
        source_nodes: Iterable[int] | None = None,
        tags: Iterable[str] | None = None,
        pinned: bool = False,
        packable: bool = True,
        canonical_key: str | None = None,
        turn_id: int = 0,
        status: str = "candidate",
    ) -> int:
        """Add a key memory and return its id (or the id of the memory already holding
        ``canonical_key``, whose sources gain ``source_nodes``).

        Raises ``ValidationError`` for empty content or an unknown status, and
        :class:`~deepcontext.dialogue.vocabulary.NodeNotFoundError` for an unknown source node.
        """
        if not isinstance(content, str) or not content.strip():
            raise ValidationError("content must be a non-empty string", field="content")
        if status not in KEY_MEMORY_STATUSES:
            raise ValidationError(f"status must be one of {', '.join(KEY_MEMORY_STATUSES)}", field="status")
        if canonical_key is not None and not isinstance(canonical_key, str):
            raise ValidationError("canonical_key must be a string", field="canonical_key")
        tag_list = list(dict.fromkeys(tags or ()))
        if not all(isinstance(t, str) for t in tag_list):
            raise ValidationError("tags must be strings", field="tags")
        sources = sorted({_int(n, "source_nodes") for n in source_nodes or ()})
        mid, _ = self.backend.add_memory(
            NewKeyMemory(
                content=content,
                source_nodes=sources,
                tags=tag_list,
                pinned=bool(pinned),
                packable=bool(packable),
                canonical_key=canonical_key or None,
                turn_id=_int(turn_id, "turn_id"),
                status=status,
            )
        )
        return mid

    def find_canonical(self, canonical_key: str) -> int | None:
        """The id of the memory holding ``canonical_key``, if any (rejected memories hold none)."""
        for m in self.backend.get_memories():
            if m.canonical_key == canonical_key and m.status != "rejected":
                return m.id
        return None

    def get_pinned_memories(self) -> list[KeyMemory]:
        """Pinned memories (rejected ones excluded), by id."""
        return [m for m in self.backend.get_memories() if m.pinned and m.status != "rejected"]

    def get_committed_memories(self) -> list[KeyMemory]:
        return [m for m in self.backend.get_memories() if m.status == "committed"]

    def commit_candidates(self, turn_id: int) -> list[int]:
        """Promote the candidate memories of round ``turn_id`` to committed; returns their ids."""
        return self.backend.set_memory_status(turn_id=_int(turn_id, "turn_id"), from_status="candidate", to_status="committed")

    def reject_candidates(self, turn_id: int) -> list[int]:
        """Mark the candidate memories of round ``turn_id`` rejected; returns their ids."""
        return self.backend.set_memory_status(turn_id=_int(turn_id, "turn_id"), from_status="candidate", to_status="rejected")

    def get_memory(self, mem_id: int) -> KeyMemory | None:
        """One memory, or None (as in the seed)."""
        if isinstance(mem_id, bool) or not isinstance(mem_id, int):
            return None
        found = self.backend.get_memories([mem_id])
        return found[0] if found else None

    def search_by_tags(self, tags: Iterable[str]) -> list[KeyMemory]:
        """Memories carrying every one of ``tags`` (exact tags), by id; no tags: nothing."""
        wanted = set(tags or ())
        if not wanted:
            return []
        return [m for m in self.backend.get_memories() if wanted <= m.tags]

    def search_by_text(self, query: str) -> list[KeyMemory]:
        """Memories whose content or one of whose tags contains ``query`` (case-insensitive), by id."""
        q = (query or "").casefold()
        if not q.strip():
            return []
        return [m for m in self.backend.get_memories() if q in m.content.casefold() or any(q in t.casefold() for t in m.tags)]

    def get_all_memories(self) -> list[KeyMemory]:
        """Every memory, by id."""
        return self.backend.get_memories()

    def remove_memory(self, mem_id: int) -> bool:
        """Remove a memory and free its canonical key; False if there was none."""
        if isinstance(mem_id, bool) or not isinstance(mem_id, int):
            return False
        return self.backend.remove_memory(mem_id)
