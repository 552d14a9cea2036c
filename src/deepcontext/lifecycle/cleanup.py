"""Cleanup: soft-delete what has faded, purge what was deleted long enough ago or has expired.

1. *Faded*: working and short-term memories (active or already ``decayed``) whose importance is under
   ``decay_min_importance`` (0.05) become ``deleted`` (a DELETE history entry, actor ``lifecycle``).
   Long-term memories are never soft-deleted by cleanup; pinned memories never are.
2. *Purge*: memories soft-deleted more than ``deleted_retention_days`` (30) ago are removed for good
   from every table (memories, provenance, entity mentions, links, history), from the keyword index
   (SQLite FTS5 ``memory_fts``, PostgreSQL ``memory_fts``) and from the vector caches (the user's
   version is bumped), together with the inactive versions merged or superseded into them; entities
   left with no memory and no relation go too. The turns (what was said, verbatim) are never deleted.
3. *Expiry*: memories whose ``expires_at`` has passed (by more than :data:`EXPIRY_GRACE`) are purged
   the same way. They already disappear from search and list at the instant they expire; the grace
   only protects an add that was planned just before the expiry and links to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from deepcontext.store import lifecycle as sql

if TYPE_CHECKING:
    from deepcontext.store.sql import SQLStore

__all__ = ["EXPIRY_GRACE", "CleanupResult", "cleanup"]

#: expired memories are purged once they have been expired this long
EXPIRY_GRACE = timedelta(minutes=10)


@dataclass(slots=True)
class CleanupResult:
    cleaned: list[int]  # soft-deleted now (faded)
    purge: sql.PurgeResult


def cleanup(store: SQLStore, user_id: str, *, now: datetime, min_importance: float, retention_days: float) -> CleanupResult:
    """Run the three cleanup steps for one user (blocking; two short transactions at most)."""
    cleaned = sql.soft_delete_faded(store, user_id, min_importance, now)
    purged = sql.purge(
        store,
        user_id,
        deleted_before=now - timedelta(days=retention_days),
        expired_before=now - EXPIRY_GRACE,
        now=now,
    )
    return CleanupResult(cleaned=cleaned, purge=purged)
