"""What the five tiers share: a backend, a namespace, a version bumped by every change."""

from __future__ import annotations

import threading

from deepcontext.errors import ValidationError
from deepcontext.query.tiers.backend import MemoryBackend, TierBackend

__all__ = ["Tier", "check_size", "check_text", "seq_of"]


def check_text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    return value


def seq_of(value: object) -> int:
    """The ``seq`` of a stored ``{"seq": n, ...}`` value (0 when missing or malformed)."""
    if isinstance(value, dict):
        seq = value.get("seq", 0)
        if isinstance(seq, int) and not isinstance(seq, bool):
            return seq
    return 0


class Tier:
    """Base of the tiers. In memory unless given a :class:`TierBackend`.

    A tier reads its backend once, when it is constructed, keeps a copy and writes every change
    through to the backend. Two tier objects over the same backend do not see each other's later
    writes: build the tiers (or the DeepCQ) per request when several processes share a store.
    """

    #: default namespace of the tier in its backend
    NAMESPACE = "tier"

    def __init__(self, backend: TierBackend | None = None, namespace: str | None = None) -> None:
        if backend is not None and not isinstance(backend, TierBackend):
            raise ValidationError("backend must implement get/put/delete/list", field="backend")
        self._backend: TierBackend = backend if backend is not None else MemoryBackend()
        self._namespace = namespace or self.NAMESPACE
        self._version = 0
        self._lock = threading.RLock()

    @property
    def version(self) -> int:
        """Bumped by every change (lets callers cache what they derive from the text)."""
        return self._version

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def backend(self) -> TierBackend:
        return self._backend

    def _bump(self) -> None:
        self._version += 1

    def entries(self) -> list[tuple[str, str]]:
        """The tier as ``(key, rendered text)`` entries; ``as_text()`` joins them."""
        raise NotImplementedError

    def as_text(self) -> str:
        raise NotImplementedError


def check_size(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(f"{field} must be a positive integer, got {value!r}", field=field)
    return value
