"""``deepcq.locate``: linear-time candidate location."""

from deepcontext.query.locator import Candidate, LocateStats, locate, locate_with_stats

__all__ = ["Candidate", "LocateStats", "locate", "locate_with_stats"]
