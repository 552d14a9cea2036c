"""``deepcq.memory.session``."""

from deepcontext.query.tiers import History, SessionCache

__all__ = ["History", "SessionCache"]
