"""The activity log: recorded search and context calls of a user, newest first.

A call is one ``activity`` row (its columns say who, when and how; ``details`` holds the parameters,
the results and what a context included and left out) and one ``activity_hits`` row per memory it
returned, so a memory's page finds its retrievals through an index. Each write is one transaction
that also prunes the user's calls past the retention (by count and by age). :class:`ActivityLog` is
the store's facet for it (``store.activity_log``); its methods block: run them in a thread.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["ActivityFilters", "ActivityLog", "ActivityRow"]


@dataclass(frozen=True, slots=True)
class ActivityRow:
    """One recorded call as stored (``record`` is its JSON part)."""

    id: int
    user_id: str
    kind: str
    via: str
    key_id: str | None
    agent_id: str | None
    run_id: str | None
    conversation_id: str | None
    query: str
    took_ms: float | None
    created_at: datetime
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ActivityFilters:
    """Which of a user's calls to list (None: any)."""

    kind: str | None = None
    via: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    conversation_id: str | None = None
    after: datetime | None = None
    before: datetime | None = None


class ActivityLog(ABC):
    """The store's activity log (``store.activity_log``)."""

    @abstractmethod
    def write(self, calls: Sequence[Mapping[str, Any]], *, keep: int, since: datetime) -> int:
        """Insert ``calls`` (column dicts with ``hits``: (memory id, rank) pairs) and prune each of
        their users to the newest ``keep`` calls made at or after ``since``. One transaction; the
        number written."""

    @abstractmethod
    def page(self, user_id: str, filters: ActivityFilters, *, limit: int, before_id: int | None = None) -> list[ActivityRow]:
        """The user's calls newest first, ``limit`` of them, older than ``before_id`` when given."""

    @abstractmethod
    def count(self, user_id: str, filters: ActivityFilters) -> int:
        """The user's calls that pass ``filters``."""

    @abstractmethod
    def get(self, user_id: str, activity_id: int) -> ActivityRow | None:
        """One call of the user with its record, or None."""

    @abstractmethod
    def retrievals(self, user_id: str, memory_id: int, *, limit: int) -> list[tuple[ActivityRow, int]]:
        """The user's newest calls that returned the memory, with its rank in each."""
