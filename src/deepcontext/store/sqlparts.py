"""Small helpers the SQL repositories share: id chunks, the "no limit" value, page cursors, limits per entity."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import Any

from deepcontext.errors import ValidationError

__all__ = ["NO_LIMIT", "chunks", "decode_cursor", "encode_cursor", "entity_limits"]

#: "no limit" for a LIMIT parameter (both backends take a 64-bit integer; SQLite has no NULL limit)
NO_LIMIT = 2**62


def chunks(seq: Sequence[Any], n: int = 500) -> Iterator[Sequence[Any]]:
    """``seq`` in slices of ``n`` (bound parameter lists stay under the drivers' limits)."""
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def encode_cursor(last_id: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{last_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, value = raw.split(":", 1)
        if version != "v1":
            raise ValueError(version)
        last = int(value)
        if not 1 <= last <= 2**63 - 1:
            raise ValueError(value)
        return last
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValidationError("invalid cursor: pass back the next_cursor of a previous page", field="cursor") from exc


def entity_limits(entity_ids: Sequence[int], limit: int | Sequence[int]) -> list[tuple[int, int]]:
    """``(entity_id, limit)`` pairs for :meth:`Store.memories_for_entities`, first occurrence of an id
    kept. Raises ValueError when a per-entity list does not match the ids."""
    limits = [int(limit)] * len(entity_ids) if isinstance(limit, int) else [int(x) for x in limit]
    if len(limits) != len(entity_ids):
        raise ValueError(f"{len(limits)} limits for {len(entity_ids)} entities")
    out: dict[int, int] = {}
    for eid, lim in zip(entity_ids, limits, strict=True):
        out.setdefault(int(eid), lim)
    return list(out.items())
