"""The deepcq tiers of a user, kept in the DeepContext database (the ``kv`` table).

:class:`StoreTierBackend` implements :class:`deepcontext.query.TierBackend` over a store's ``kv_*``
methods for one user: every ``put`` and ``delete`` is one transaction, reads go to the database each
time. Values are stored as JSON text in an envelope (``{"deepcq": 1, "json": "..."}``) so they come
back exactly as put on every backend (PostgreSQL's JSONB reorders keys and refuses NUL); values
without the envelope are returned as they are. The tiers live under :data:`TIER_PREFIX` + tier
name; ``delete_user`` removes them and ``export`` / ``import_records`` carry them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from deepcontext.clock import Clock, SystemClock
from deepcontext.errors import ValidationError
from deepcontext.ids import check_encodable
from deepcontext.query.schema import TIER_NAMES
from deepcontext.query.tiers.backend import JsonValue, MemoryBackend, check_json
from deepcontext.services.validation import check_id

__all__ = ["MAX_KEY_CHARS", "MAX_NAMESPACE_CHARS", "TIER_PREFIX", "StoreTierBackend", "load_tier_snapshot"]

#: namespace prefix of the deepcq tiers in the ``kv`` table
TIER_PREFIX = "deepcq."
#: column sizes of the ``kv`` table (checked on every backend, so SQLite and PostgreSQL agree)
MAX_NAMESPACE_CHARS = 64
MAX_KEY_CHARS = 512
_ENVELOPE = "deepcq"
_VERSION = 1


def _check_string(value: Any, field: str, max_chars: int, *, empty_ok: bool) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value and not empty_ok:
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    if len(value) > max_chars:
        raise ValidationError(f"{field} is longer than {max_chars} characters", field=field)
    check_encodable(value, field)
    return value


def encode(value: JsonValue) -> dict[str, Any]:
    """The stored form of a JSON value: its JSON text in an envelope."""
    check_json(value)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("value must be valid Unicode (no lone surrogates)", field="value") from None
    return {_ENVELOPE: _VERSION, "json": text}


def decode(stored: Any) -> JsonValue:
    """A value read back from the store (values without the envelope are returned as they are)."""
    if (
        isinstance(stored, dict)
        and len(stored) == 2
        and stored.get(_ENVELOPE) == _VERSION
        and isinstance(stored.get("json"), str)
    ):
        return json.loads(stored["json"])
    return stored


class StoreTierBackend:
    """A :class:`~deepcontext.query.TierBackend` over a store's key/value rows of one user.

    ``store``: a :class:`deepcontext.store.interface.Store` (``ctx.store``). ``clock`` stamps
    ``updated_at`` (default: the system clock). Namespaces are used as given: pass
    ``namespace_prefix=TIER_PREFIX`` to :class:`~deepcontext.query.DeepCQ` (``ctx.tiers`` does)
    to keep the tiers apart from other per-user state.
    """

    def __init__(self, store: Any, user_id: str, *, clock: Clock | None = None) -> None:
        for name in ("kv_get", "kv_put", "kv_delete", "kv_list"):
            if not callable(getattr(store, name, None)):
                raise ValidationError("store must be a deepcontext Store (kv_get/kv_put/kv_delete/kv_list)", field="store")
        self.store = store
        self.user_id = check_id(user_id, "user_id")
        self._now: Callable[[], datetime] = (clock or SystemClock()).now

    @staticmethod
    def _names(namespace: str, key: str | None = None) -> None:
        _check_string(namespace, "namespace", MAX_NAMESPACE_CHARS, empty_ok=False)
        if key is not None:
            _check_string(key, "key", MAX_KEY_CHARS, empty_ok=True)

    def get(self, namespace: str, key: str) -> JsonValue | None:
        """The value, or None when absent."""
        self._names(namespace, key)
        return decode(self.store.kv_get(self.user_id, namespace, key))

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        """Create or replace a value (one transaction)."""
        self._names(namespace, key)
        self.store.kv_put(self.user_id, namespace, key, encode(value), self._now())

    def delete(self, namespace: str, key: str) -> None:
        """Remove a value (one transaction); absent keys are ignored."""
        self._names(namespace, key)
        self.store.kv_delete(self.user_id, namespace, key)

    def list(self, namespace: str) -> dict[str, JsonValue]:
        """Every ``{key: value}`` of the namespace, by key."""
        self._names(namespace)
        return {k: decode(v) for k, v in self.store.kv_list(self.user_id, namespace).items()}

    def __repr__(self) -> str:
        return f"StoreTierBackend(user_id={self.user_id!r})"


def load_tier_snapshot(store: Any, user_id: str, prefix: str = TIER_PREFIX) -> MemoryBackend:
    """A read-only copy of the user's five tiers (namespaces ``prefix + tier``) in memory: what
    the context builder reads, so building a context never writes to the tiers."""
    source = StoreTierBackend(store, user_id)
    snap = MemoryBackend()
    for tier in TIER_NAMES:
        ns = prefix + tier
        for key, value in source.list(ns).items():
            snap.put(ns, key, value)
    return snap
