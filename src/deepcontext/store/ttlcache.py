"""A small thread-safe cache whose entries expire after a fixed number of seconds.

The keyword legs keep document frequencies of query terms in one: counting them reads a term's
whole posting list, and they only steer
heuristics (which terms are too common to rank, idf weights), so counts a few seconds old are
harmless."""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["TTLCache"]

V = TypeVar("V")


class TTLCache(Generic[V]):
    def __init__(self, ttl_s: float, max_entries: int = 50_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._data: dict[Hashable, tuple[V, float]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        hit = self._data.get(key)
        if hit is None or time.monotonic() - hit[1] >= self.ttl_s:
            return None
        return hit[0]

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            if len(self._data) >= self.max_entries:
                self._data.clear()
            self._data[key] = (value, time.monotonic())

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
