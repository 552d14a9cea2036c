"""Cleanup: soft-delete what has faded, purge what was deleted long enough ago or has expired.

1. *Faded*: working and short-term memories under ``decay_min_importance`` become ``deleted``
   (never long-term or pinned ones).
2. *Purge*: memories deleted more than ``deleted_retention_days`` ago are removed from every table,
   the keyword index and the vector caches, with the versions merged or superseded into them;
   entities left with no memory and no relation go too. Turns are never deleted.
3. *Expiry*: memories past ``expires_at`` by more than :data:`EXPIRY_GRACE` are purged the same way
   (search hides them at once; the grace protects an add planned just before that links to them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from deepcontext.store import PurgeResult, Store

__all__ = ["EXPIRY_GRACE", "CleanupResult", "cleanup"]

#: expired memories are purged once they have been expired this long
EXPIRY_GRACE = timedelta(minutes=10)


@dataclass(slots=True)
class CleanupResult:
    cleaned: list[int]  # soft-deleted now (faded)
    purge: PurgeResult


def cleanup(store: Store, user_id: str, *, now: datetime, min_importance: float, retention_days: float) -> CleanupResult:
    """Run the three cleanup steps for one user (blocking; two short transactions at most)."""
    cleaned = store.soft_delete_faded(user_id, min_importance, now)
    purged = store.purge(
        user_id,
        deleted_before=now - timedelta(days=retention_days),
        expired_before=now - EXPIRY_GRACE,
        now=now,
    )
    return CleanupResult(cleaned=cleaned, purge=purged)
