"""``deepcq.memory.state``: T1."""

from deepcontext.query.tiers import AppState

__all__ = ["AppState"]
