"""T2 SessionCache: bounded key/value scratch space."""

from __future__ import annotations

from deepcontext.query.tiers.backend import TierBackend
from deepcontext.query.tiers.tier import Tier, check_size, check_text, seq_of

__all__ = ["SessionCache"]


class SessionCache(Tier):
    """T2: per-session key/value cache, least recently *put* entries evicted beyond
    ``max_entries``; putting an unchanged value is a no-op. Rendered oldest first.
    Backend values: ``{"value": str, "seq": int}``."""

    NAMESPACE = "cache"

    def __init__(self, max_entries: int = 30, *, backend: TierBackend | None = None, namespace: str | None = None) -> None:
        super().__init__(backend, namespace)
        self._max = check_size(max_entries, "max_entries")
        self._entries: dict[str, str] = {}
        self._seqs: dict[str, int] = {}
        stored = self._backend.list(self._namespace)
        ordered = sorted(
            ((k, v) for k, v in stored.items() if isinstance(v, dict) and isinstance(v.get("value"), str)),
            key=lambda kv: seq_of(kv[1]),
        )
        for key, value in ordered:
            self._entries[key] = value["value"]
            self._seqs[key] = seq_of(value)
        self._evict()

    @property
    def max_entries(self) -> int:
        return self._max

    def _evict(self) -> None:
        while len(self._entries) > self._max:
            oldest = next(iter(self._entries))
            self._backend.delete(self._namespace, oldest)
            self._entries.pop(oldest)
            self._seqs.pop(oldest, None)

    def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (most recent); unchanged values are skipped."""
        check_text(key, "key")
        check_text(value, "value")
        with self._lock:
            if self._entries.get(key) == value:
                return
            seq = max(self._seqs.values(), default=0) + 1
            self._backend.put(self._namespace, key, {"value": value, "seq": seq})
            self._entries.pop(key, None)
            self._entries[key] = value
            self._seqs[key] = seq
            self._evict()
            self._bump()

    def get(self, key: str) -> str | None:
        return self._entries.get(key)

    def keys(self) -> list[str]:
        return list(self._entries)

    def items(self) -> list[tuple[str, str]]:
        """``(key, value)`` pairs, oldest first."""
        return list(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[tuple[str, str]]:
        return [(k, f"[cache:{k}]\n{v}") for k, v in self._entries.items()]

    def as_text(self) -> str:
        return "\n".join(text for _, text in self.entries())

    def clear(self) -> None:
        with self._lock:
            for key in list(self._entries):
                self._backend.delete(self._namespace, key)
            self._entries.clear()
            self._seqs.clear()
            self._bump()
