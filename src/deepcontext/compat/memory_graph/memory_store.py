"""``modules.memory_store``: key memories (candidate, committed, pinned)."""

from deepcontext.dialogue import KeyMemory, MemoryStore

__all__ = ["KeyMemory", "MemoryStore"]
