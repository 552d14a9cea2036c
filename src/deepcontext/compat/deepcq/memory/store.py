"""``deepcq.memory.store``: T4 and T5, file-backed when given a path (written atomically; a corrupt
file raises instead of being overwritten)."""

from deepcontext.query.tiers import LongTermStore, ReferenceData

__all__ = ["LongTermStore", "ReferenceData"]
