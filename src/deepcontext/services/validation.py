"""Validation of public inputs: one clear ValidationError, raised before anything is written."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from deepcontext.clock import EARLIEST, LATEST, as_utc
from deepcontext.errors import ValidationError
from deepcontext.extract.interface import MessageIn
from deepcontext.ids import check_encodable as _check_encodable
from deepcontext.ids import check_id
from deepcontext.store import parse_metadata_filter
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import MemoryTier, MemoryType, Message

__all__ = [
    "ROLES",
    "TIME_RANGE",
    "check_flag",
    "check_fraction",
    "check_json",
    "check_id",
    "check_limit",
    "check_row_id",
    "check_number",
    "check_scope",
    "check_text",
    "check_time",
    "check_user_name",
    "parse_filters",
    "parse_messages",
    "parse_time",
]

ROLES = ("user", "assistant", "system", "tool")
#: metadata: nesting levels, and characters of its JSON form
MAX_JSON_DEPTH = 20
MAX_METADATA_CHARS = 65_536


def check_user_name(value: Any) -> str:
    """A display name: a non-empty string of at most 100 characters, one line, no control characters."""
    if not isinstance(value, str):
        raise ValidationError(f"name must be a string, got {type(value).__name__}", field="name")
    name = " ".join(value.split())
    if not name:
        raise ValidationError("name must not be empty", field="name")
    if len(name) > 100:
        raise ValidationError("name must be at most 100 characters", field="name")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValidationError("name must not contain control characters", field="name")
    _check_encodable(name, "name")
    return name


def check_text(value: Any, field: str, max_chars: int, setting: str | None = None) -> str:
    """A non-empty, storable string of at most ``max_chars``; ``setting`` names the setting that
    sets the limit, so the error says which one to raise."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string, got {type(value).__name__}", field=field)
    if not value.strip():
        raise ValidationError(f"{field} must not be empty", field=field)
    _check_encodable(value, field)
    if len(value) > max_chars:
        where = f" (setting {setting})" if setting else ""
        raise ValidationError(f"{field} has {len(value)} characters; the limit is {max_chars}{where}", field=field)
    return value


def _check_json(value: Any, field: str, depth: int = 0) -> None:
    """Metadata: JSON-compatible values whose strings are storable, finite numbers (strict JSON
    has no NaN or Infinity), at most ``MAX_JSON_DEPTH`` levels deep."""
    if depth > MAX_JSON_DEPTH:
        raise ValidationError(f"{field} is nested more than {MAX_JSON_DEPTH} levels deep", field=field)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError(f"{field} must be a finite number, got {value!r}", field=field)
    if isinstance(value, str):
        _check_encodable(value, field)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValidationError(f"{field} keys must be strings", field=field)
            _check_encodable(k, field)
            _check_json(v, f"{field}.{k}", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{field}[{i}]", depth + 1)
    elif value is not None and not isinstance(value, (bool, int, float)):
        raise ValidationError(f"{field} must hold JSON values, got {type(value).__name__}", field=field)


def check_number(value: Any, field: str, lo: float | None = None, hi: float | None = None) -> float:
    """A finite real number (not a bool, NaN or infinity; an int too large for a float neither)
    within [``lo``, ``hi``] when given."""
    where = " between {lo:g} and {hi:g}" if lo is not None and hi is not None else " >= {lo:g}" if lo is not None else ""
    what = f"{field} must be a finite number{where.format(lo=lo, hi=hi)}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(what, field=field)
    try:
        number = float(value)
    except OverflowError:
        raise ValidationError(what, field=field) from None
    if not math.isfinite(number) or (lo is not None and number < lo) or (hi is not None and number > hi):
        raise ValidationError(what, field=field)
    return number


def check_fraction(value: Any, field: str) -> float:
    """A number in [0, 1] (not a bool, not NaN)."""
    return check_number(value, field, 0.0, 1.0)


def check_row_id(value: Any, field: str) -> int:
    """A row id: a positive 64-bit integer (not a bool, not a string of digits)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer, got {type(value).__name__}", field=field)
    if not 0 < value < 2**63:
        raise ValidationError(f"{field} must be between 1 and {2**63 - 1}, got {value!r}", field=field)
    return value


def check_flag(value: Any, field: str, *, optional: bool = False) -> bool | None:
    """True or False (or None when ``optional``: the setting decides); not a truthy stand-in."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        also = " or None" if optional else ""
        raise ValidationError(f"{field} must be True or False{also}, got {value!r}", field=field)
    return value


def check_limit(value: Any, field: str = "limit", lo: int = 1, hi: int = 100) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{field} must be an integer, got {type(value).__name__}", field=field)
    if not lo <= value <= hi:
        raise ValidationError(f"{field} must be between {lo} and {hi}, got {value}", field=field)
    return value


#: a number written as text (query parameters carry no other kind): epoch seconds
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
#: what a refused time is told to hold to
TIME_RANGE = "years 1 to 9998 (UTC)"


def check_time(value: datetime, field: str) -> datetime:
    """An aware UTC datetime within ``EARLIEST`` .. ``LATEST``; naive times are taken as UTC. The
    one range every entry of a time holds to (Python, REST, CLI, bulk input, import)."""
    try:
        utc = as_utc(value)
    except (OverflowError, ValueError):  # an offset that moves it past datetime's first or last year
        raise ValidationError(f"{field} must lie in {TIME_RANGE}, got {value.isoformat()}", field=field) from None
    if not EARLIEST <= utc <= LATEST:
        raise ValidationError(f"{field} must lie in {TIME_RANGE}, got {value.isoformat()}", field=field)
    return utc


def parse_time(value: Any, field: str) -> datetime | None:
    """A datetime, an ISO 8601 string, or seconds since the Unix epoch (a number, or a string of
    one); naive times are taken as UTC; all within :data:`TIME_RANGE`."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return check_time(value, field)
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
        except ValueError:
            if not _NUMBER.fullmatch(text):
                raise ValidationError(
                    f"{field} must be a datetime, an ISO 8601 string or epoch seconds, got {value!r}", field=field
                ) from None
            value = float(text)
        else:
            return check_time(parsed, field)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            when = datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, ValueError, OSError):
            raise ValidationError(f"{field} must lie in {TIME_RANGE}, got epoch seconds {value!r}", field=field) from None
        return check_time(when, field)
    raise ValidationError(
        f"{field} must be a datetime, an ISO 8601 string or epoch seconds, got {type(value).__name__}", field=field
    )


def parse_messages(
    messages: Any,
    *,
    now: datetime,
    default_time: datetime | None,
    max_messages: int,
    max_chars: int,
) -> list[MessageIn]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise ValidationError("messages must be a list of {role, content} objects", field="messages")
    if not messages:
        raise ValidationError("messages must not be empty", field="messages")
    if len(messages) > max_messages:
        raise ValidationError(
            f"{len(messages)} messages in one add; the limit is {max_messages} (setting max_messages_per_add)",
            field="messages",
        )
    out: list[MessageIn] = []
    for i, raw in enumerate(messages):
        f = f"messages[{i}]"
        if isinstance(raw, Message):
            m: Mapping[str, Any] = raw.model_dump()
        elif isinstance(raw, Mapping):
            m = raw
        else:
            raise ValidationError(f"{f} must be an object with role and content, got {type(raw).__name__}", field=f)
        unknown = set(m) - {"role", "content", "name", "timestamp", "metadata"}
        if unknown:
            raise ValidationError(f"{f} has unknown keys {sorted(unknown)}", field=f)
        role = m.get("role")
        if not isinstance(role, str) or role.lower() not in ROLES:
            raise ValidationError(f"{f}.role must be one of {', '.join(ROLES)}; got {role!r}", field=f"{f}.role")
        content = check_text(m.get("content"), f"{f}.content", max_chars, "max_message_chars")
        name = m.get("name")
        if name is not None:
            name = check_id(name.strip() if isinstance(name, str) else name, f"{f}.name")
        said_at = parse_time(m.get("timestamp"), f"{f}.timestamp") or default_time or now
        metadata = m.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ValidationError(f"{f}.metadata must be an object", field=f"{f}.metadata")
        check_json(metadata, f"{f}.metadata")
        out.append(MessageIn(index=i, role=role.lower(), content=content, said_at=said_at, name=name, metadata=dict(metadata)))
    return out


def _enum_tuple(value: Any, enum: Any, field: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, enum)):
        items = [value]
    elif isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        items = list(value)
    else:
        raise ValidationError(f"{field} must be one of {[e.value for e in enum]} or a list of them, got {value!r}", field=field)
    if any(not isinstance(v, (str, enum)) for v in items):
        raise ValidationError(f"{field} must be one of {[e.value for e in enum]}, got {value!r}", field=field)
    try:
        return tuple(enum(v.value if isinstance(v, enum) else str(v)) for v in items)
    except ValueError:
        raise ValidationError(f"{field} must be one of {[e.value for e in enum]}, got {value!r}", field=field) from None


def _scope_ids(value: Any, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
    if not items:
        raise ValidationError(f"{field} must not be an empty list", field=field)
    return tuple(dict.fromkeys(check_id(v, field) for v in items))


def check_scope(value: Any, field: str) -> str | None:
    """An agent or run id of an add (None: none)."""
    return None if value is None else check_id(value, field)


def parse_filters(
    *,
    tier: Any = None,
    memory_type: Any = None,
    conversation_id: Any = None,
    after: Any = None,
    before: Any = None,
    metadata: Any = None,
    agent_id: Any = None,
    run_id: Any = None,
) -> MemoryFilters:
    conv = None
    if conversation_id is not None:
        many = isinstance(conversation_id, Iterable) and not isinstance(conversation_id, (str, bytes, Mapping))
        items = list(conversation_id) if many else [conversation_id]
        conv = tuple(check_id(c, "conversation_id") for c in items)
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ValidationError("metadata filter must be an object of key: condition", field="metadata")
    meta = parse_metadata_filter(metadata, "metadata")
    a, b = parse_time(after, "after"), parse_time(before, "before")
    if a and b and a >= b:
        raise ValidationError("after must be earlier than before", field="after")
    return MemoryFilters(
        tiers=_enum_tuple(tier, MemoryTier, "tier"),
        types=_enum_tuple(memory_type, MemoryType, "memory_type"),
        conversation_ids=conv,
        after=a,
        before=b,
        metadata=meta,
        agent_ids=_scope_ids(agent_id, "agent_id"),
        run_ids=_scope_ids(run_id, "run_id"),
    )


def expiry(now: datetime, expires_at: Any, ttl: Any) -> datetime | None:
    if expires_at is not None and ttl is not None:
        raise ValidationError("give expires_at or ttl, not both", field="ttl")
    if ttl is not None:
        if isinstance(ttl, timedelta):
            seconds = ttl.total_seconds()
        elif isinstance(ttl, (int, float)) and not isinstance(ttl, bool):
            seconds = check_number(ttl, "ttl")
        else:
            raise ValidationError("ttl must be seconds or a timedelta", field="ttl")
        if seconds <= 0:
            raise ValidationError(f"ttl must be a positive, finite number of seconds, got {ttl!r}", field="ttl")
        try:
            end: datetime | None = now + timedelta(seconds=seconds)
        except OverflowError:
            end = None
        if end is None or end > LATEST:
            raise ValidationError(f"ttl of {seconds:g} seconds ends outside {TIME_RANGE}", field="ttl")
        return end
    when = parse_time(expires_at, "expires_at")
    if when is not None and when <= now:
        raise ValidationError("expires_at is in the past", field="expires_at")
    return when


def check_json(value: Any, field: str) -> None:
    """Public form of the metadata check (JSON values, storable strings, finite numbers, bounded
    depth and size)."""
    _check_json(value, field)
    _check_size(value, field)


def _check_size(value: Any, field: str) -> None:
    if value is None:
        return
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if size > MAX_METADATA_CHARS:
        raise ValidationError(f"{field} has {size} characters as JSON; the limit is {MAX_METADATA_CHARS}", field=field)
