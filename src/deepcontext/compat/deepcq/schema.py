"""``deepcq.schema``."""

from deepcontext.query.schema import TIER_NAMES, MemorySchema

__all__ = ["TIER_NAMES", "MemorySchema"]
