"""``deepcq.memory``: the five tiers."""

from deepcontext.query.tiers import AppState, History, LongTermStore, ReferenceData, SessionCache

__all__ = ["AppState", "History", "LongTermStore", "ReferenceData", "SessionCache"]
