"""Where tiers keep their data: JSON values by ``(namespace, key)``.

:class:`TierBackend` is four methods (``get``, ``put``, ``delete``, ``list``), so a per-user
database adapter is a few lines over a key-value store. Values are JSON; a backend need not keep
insertion order (tiers keep their own ordering inside the values). :class:`MemoryBackend` (the
default) keeps a dict; :class:`JsonFileBackend` keeps one JSON object per namespace in a file,
rewritten atomically (a reader or a crash sees the old file or the new one, never half of one).
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from deepcontext.errors import StorageError, ValidationError

__all__ = ["JsonFileBackend", "JsonValue", "MemoryBackend", "TierBackend", "atomic_write_json", "check_json"]

JsonValue = Any  # dict | list | str | int | float | bool | None, nested


@runtime_checkable
class TierBackend(Protocol):
    """Storage of JSON values by ``(namespace, key)``."""

    def get(self, namespace: str, key: str) -> JsonValue | None:
        """The value, or None when absent."""
        ...

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        """Create or replace a value."""
        ...

    def delete(self, namespace: str, key: str) -> None:
        """Remove a value; absent keys are ignored."""
        ...

    def list(self, namespace: str) -> Mapping[str, JsonValue]:
        """Every ``{key: value}`` of a namespace (any order)."""
        ...


def check_json(value: JsonValue, field: str = "value") -> None:
    """Raise a ValidationError unless ``value`` is plain JSON (dict with str keys, list, str,
    int, finite float, bool, None). Walks the structure, not the text: big strings cost nothing."""
    stack: list[tuple[JsonValue, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > 200:
            raise ValidationError(f"{field} is nested too deeply", field=field)
        if v is None or isinstance(v, str | bool | int):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise ValidationError(f"{field} holds a non-finite number ({v!r}), which JSON cannot store", field=field)
            continue
        if isinstance(v, dict):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise ValidationError(f"{field} has a non-string key {k!r}", field=field)
                stack.append((item, depth + 1))
            continue
        if isinstance(v, list | tuple):
            stack.extend((item, depth + 1) for item in v)
            continue
        raise ValidationError(f"{field} holds a {type(v).__name__}, which is not JSON", field=field)


def _plain(value: JsonValue) -> JsonValue:
    """A detached copy with tuples turned into lists (what a JSON round trip gives)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _check_names(namespace: str, key: str | None = None) -> None:
    if not isinstance(namespace, str) or not namespace:
        raise ValidationError("namespace must be a non-empty string", field="namespace")
    if key is not None and not isinstance(key, str):
        raise ValidationError("key must be a string", field="key")


class MemoryBackend:
    """In-process storage (the default): nothing survives the process."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, JsonValue]] = {}
        self._lock = threading.Lock()

    def get(self, namespace: str, key: str) -> JsonValue | None:
        _check_names(namespace, key)
        with self._lock:
            return copy.deepcopy(self._data.get(namespace, {}).get(key))

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        _check_names(namespace, key)
        check_json(value)
        with self._lock:
            self._data.setdefault(namespace, {})[key] = _plain(value)

    def delete(self, namespace: str, key: str) -> None:
        _check_names(namespace, key)
        with self._lock:
            self._data.get(namespace, {}).pop(key, None)

    def list(self, namespace: str) -> dict[str, JsonValue]:
        _check_names(namespace)
        with self._lock:
            return copy.deepcopy(self._data.get(namespace, {}))


def atomic_write_json(path: str | Path, value: JsonValue) -> None:
    """Write ``value`` as JSON to ``path`` atomically (temp file, fsync, ``os.replace``)."""
    target = Path(path)
    check_json(value)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        try:  # make the rename itself durable
            dfd = os.open(target.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)
    except OSError as exc:
        raise StorageError(f"could not write {target}: {exc}") from exc


def _read_json_object(path: Path) -> dict[str, JsonValue]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StorageError(f"could not read {path}: {exc}") from exc
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        # refuse rather than start over and overwrite what may be the only copy
        raise StorageError(f"{path} is not valid JSON ({exc}); fix or move it, nothing was overwritten") from exc
    if not isinstance(data, dict):
        raise StorageError(f"{path} must hold a JSON object, found {type(data).__name__}")
    return data


class JsonFileBackend:
    """One JSON file per namespace, ``{key: value}``, rewritten atomically on each change.

    ``directory``: namespace ``ns`` lives in ``directory/ns.json``. ``files``: explicit paths for
    some namespaces (deepcq's ``store_path`` / ``reference_path`` files keep their format: the
    notes file is ``{key: [entries]}``, the reference file ``{key: value}``).
    """

    def __init__(self, directory: str | Path | None = None, *, files: Mapping[str, str | Path] | None = None) -> None:
        if directory is None and not files:
            raise ValidationError("JsonFileBackend needs a directory or files={namespace: path}", field="directory")
        self._dir = Path(directory) if directory is not None else None
        self._files = {ns: Path(p) for ns, p in (files or {}).items()}
        self._cache: dict[str, dict[str, JsonValue]] = {}
        self._lock = threading.RLock()

    def path(self, namespace: str) -> Path:
        """The file of a namespace."""
        _check_names(namespace)
        if namespace in self._files:
            return self._files[namespace]
        if self._dir is None:
            raise ValidationError(f"no file configured for namespace {namespace!r}", field="namespace")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in namespace)
        return self._dir / f"{safe}.json"

    def _load(self, namespace: str) -> dict[str, JsonValue]:
        data = self._cache.get(namespace)
        if data is None:
            data = _read_json_object(self.path(namespace))
            self._cache[namespace] = data
        return data

    def get(self, namespace: str, key: str) -> JsonValue | None:
        _check_names(namespace, key)
        with self._lock:
            return copy.deepcopy(self._load(namespace).get(key))

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        _check_names(namespace, key)
        check_json(value)
        with self._lock:
            new = dict(self._load(namespace))
            new[key] = _plain(value)
            atomic_write_json(self.path(namespace), new)
            self._cache[namespace] = new

    def delete(self, namespace: str, key: str) -> None:
        _check_names(namespace, key)
        with self._lock:
            data = self._load(namespace)
            if key not in data:
                return
            new = {k: v for k, v in data.items() if k != key}
            atomic_write_json(self.path(namespace), new)
            self._cache[namespace] = new

    def list(self, namespace: str) -> dict[str, JsonValue]:
        _check_names(namespace)
        with self._lock:
            return copy.deepcopy(self._load(namespace))

    def reload(self) -> None:
        """Forget cached file contents (another process may have written them)."""
        with self._lock:
            self._cache.clear()
