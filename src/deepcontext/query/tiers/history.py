"""T3 History: the last N conversation turns."""

from __future__ import annotations

from typing import NamedTuple

from deepcontext.query.tiers.backend import TierBackend
from deepcontext.query.tiers.tier import Tier, check_size, check_text, seq_of

__all__ = ["History", "Turn"]


class Turn(NamedTuple):
    role: str
    text: str


class History(Tier):
    """T3: sliding window of the last ``max_turns`` conversation turns.
    Backend values: ``{"role": str, "text": str, "seq": int}`` under zero-padded ``seq`` keys."""

    NAMESPACE = "history"

    def __init__(self, max_turns: int = 6, *, backend: TierBackend | None = None, namespace: str | None = None) -> None:
        super().__init__(backend, namespace)
        self._max = check_size(max_turns, "max_turns")
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
