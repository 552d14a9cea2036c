"""T4 LongTermStore (append-only notes) and T5 ReferenceData (static reference values).

Given a ``path`` each is kept in that JSON file in deepcq's format (notes: ``{key: [entries]}``;
reference: ``{key: value}``), written atomically. Given a ``backend`` instead, the same values are
kept under the tier's namespace. Keys are rendered in the order the backend lists them (for files
and memory: insertion order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepcontext.errors import ValidationError
from deepcontext.query.tiers.backend import JsonFileBackend, TierBackend, check_json
from deepcontext.query.tiers.tier import Tier, check_text

__all__ = ["LongTermStore", "ReferenceData"]


class _FileTier(Tier):
    """A tier kept in one JSON file (``path``, deepcq's signature) or in a ``backend``."""

    def __init__(
        self, path: str | Path | None = None, *, backend: TierBackend | None = None, namespace: str | None = None
    ) -> None:
        if path is not None and backend is not None:
            raise ValidationError("give a path or a backend, not both", field="path")
        ns = namespace or self.NAMESPACE
        super().__init__(JsonFileBackend(files={ns: Path(path)}) if path is not None else backend, ns)
        self._path = Path(path) if path is not None else None

    @property
    def path(self) -> Path | None:
        return self._path


class LongTermStore(_FileTier):
    """T4: persistent, append-only notes grouped by key."""

    NAMESPACE = "notes"

    def __init__(
        self, path: str | Path | None = None, *, backend: TierBackend | None = None, namespace: str | None = None
    ) -> None:
        super().__init__(path, backend=backend, namespace=namespace)
        self._data: dict[str, list[str]] = {}
        for key, value in self._backend.list(self._namespace).items():
            if isinstance(value, list):
                self._data[key] = [str(v) for v in value]

    def append(self, key: str, text: str) -> None:
        """Add a note under ``key``."""
        check_text(key, "key")
        check_text(text, "text")
        with self._lock:
            entries = [*self._data.get(key, []), text]
            self._backend.put(self._namespace, key, entries)
            self._data[key] = entries
            self._bump()

    def get(self, key: str) -> list[str]:
        return list(self._data.get(key, []))

    def keys(self) -> list[str]:
        return list(self._data)

    def delete(self, key: str) -> None:
        """Remove every note under ``key`` (absent keys are ignored)."""
        with self._lock:
            if key in self._data:
                self._backend.delete(self._namespace, key)
                del self._data[key]
            self._bump()

    def entries(self) -> list[tuple[str, str]]:
        return [(k, "\n".join([f"[notes:{k}]", *v])) for k, v in self._data.items()]

    def as_text(self) -> str:
        return "\n".join(text for _, text in self.entries())

    def clear(self) -> None:
        with self._lock:
            for key in list(self._data):
                self._backend.delete(self._namespace, key)
            self._data.clear()
            self._bump()


class ReferenceData(_FileTier):
    """T5: reference / configuration values, loaded on first use.

    Change values through :meth:`set`; editing a value returned by :meth:`get` in place does not
    change the stored data (``get`` returns the stored value, a copy when read from a backend).
    """

    NAMESPACE = "reference"

    def __init__(
        self, path: str | Path | None = None, *, backend: TierBackend | None = None, namespace: str | None = None
    ) -> None:
        super().__init__(path, backend=backend, namespace=namespace)
        self._data: dict[str, Any] | None = None

    def _ensure_loaded(self) -> dict[str, Any]:
        if self._data is None:
            self._data = dict(self._backend.list(self._namespace))
        return self._data

    def get(self, key: str, default: Any = None) -> Any:
        return self._ensure_loaded().get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Create or replace a JSON value."""
        check_text(key, "key")
        check_json(value, "value")
        with self._lock:
            data = self._ensure_loaded()
            self._backend.put(self._namespace, key, value)
            data[key] = self._backend.get(self._namespace, key)
            self._bump()

    def keys(self) -> list[str]:
        return list(self._ensure_loaded())

    def delete(self, key: str) -> None:
        with self._lock:
            data = self._ensure_loaded()
            if key in data:
                self._backend.delete(self._namespace, key)
                del data[key]
            self._bump()

    def entries(self) -> list[tuple[str, str]]:
        text = self.as_text()
        return [("reference", text)] if text else []

    def as_text(self) -> str:
        data = self._ensure_loaded()
        if not data:
            return ""
        return "\n".join(["[reference]", *(f"{k}: {v}" for k, v in data.items())])

    def clear(self) -> None:
        with self._lock:
            for key in list(self._ensure_loaded()):
                self._backend.delete(self._namespace, key)
            self._data = {}
            self._bump()
