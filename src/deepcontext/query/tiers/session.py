"""T2 SessionCache (bounded key/value scratch space) and T3 History (last N turns)."""

from __future__ import annotations

from typing import NamedTuple

from deepcontext.errors import ValidationError
from deepcontext.query.tiers.backend import TierBackend
from deepcontext.query.tiers.base import Tier, check_text, seq_of

__all__ = ["History", "SessionCache", "Turn"]


def _check_size(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{field} must be a positive integer, got {value!r}", field=field)
    return value


class SessionCache(Tier):
    """T2: per-session key/value cache, least recently *put* entries evicted beyond
    ``max_entries``; putting an unchanged value is a no-op. Rendered oldest first.
    Backend values: ``{"value": str, "seq": int}``."""

    NAMESPACE = "cache"

    def __init__(
        self, max_entries: int = 30, *, backend: TierBackend | None = None, namespace: str | None = None
    ) -> None:
        super().__init__(backend, namespace)
        self._max = _check_size(max_entries, "max_entries")
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


class Turn(NamedTuple):
    role: str
    text: str


class History(Tier):
    """T3: sliding window of the last ``max_turns`` conversation turns.
    Backend values: ``{"role": str, "text": str, "seq": int}`` under zero-padded ``seq`` keys."""

    NAMESPACE = "history"

    def __init__(self, max_turns: int = 6, *, backend: TierBackend | None = None, namespace: str | None = None) -> None:
        super().__init__(backend, namespace)
        self._max = _check_size(max_turns, "max_turns")
        self._turns: list[tuple[int, Turn]] = []
        stored = self._backend.list(self._namespace)
        for _key, value in sorted(stored.items(), key=lambda kv: seq_of(kv[1])):
            if isinstance(value, dict) and isinstance(value.get("role"), str) and isinstance(value.get("text"), str):
                self._turns.append((seq_of(value), Turn(value["role"], value["text"])))
        self._trim()

    @property
    def max_turns(self) -> int:
        return self._max

    @staticmethod
    def _key(seq: int) -> str:
        return f"{seq:012d}"

    def _trim(self) -> None:
        while len(self._turns) > self._max:
            seq, _ = self._turns.pop(0)
            self._backend.delete(self._namespace, self._key(seq))

    def add(self, role: str, text: str) -> None:
        """Append a turn; the oldest turn beyond ``max_turns`` is dropped."""
        check_text(role, "role")
        check_text(text, "text")
        with self._lock:
            seq = (self._turns[-1][0] if self._turns else 0) + 1
            self._backend.put(self._namespace, self._key(seq), {"role": role, "text": text, "seq": seq})
            self._turns.append((seq, Turn(role, text)))
            self._trim()
            self._bump()

    def turns(self) -> list[Turn]:
        return [t for _, t in self._turns]

    def __len__(self) -> int:
        return len(self._turns)

    def entries(self) -> list[tuple[str, str]]:
        return [(str(seq), f"{t.role.upper()}: {t.text}") for seq, t in self._turns]

    def as_text(self) -> str:
        return "\n\n".join(text for _, text in self.entries())

    def clear(self) -> None:
        with self._lock:
            for seq, _ in self._turns:
                self._backend.delete(self._namespace, self._key(seq))
            self._turns.clear()
            self._bump()
