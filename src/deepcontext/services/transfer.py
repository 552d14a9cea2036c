"""Export and import: every row of a user as JSON lines, restorable into any database.

Format (one JSON object per line): a header ``{"record": "header", "format": "deepcontext-export",
"version": 1, "user_id", "exported_at", "embedder", "dimensions"}``, then one record per row
``{"record": "<table>", ...columns}`` for conversations, turns, turn_edges, entities, relations,
memories (embedding as base64 float32), memory_sources, memory_entities, memory_links,
memory_history, kv and the activity log (left out by an import). Ids are the source database's; an import gives fresh ids and remaps every
reference, so memories come back with the same text, status, provenance and history.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import ValidationError
from deepcontext.services.validation import _check_json, check_json, parse_time
from deepcontext.store import IMPORTS_NAMESPACE, Store

__all__ = ["FORMAT", "VERSION", "export_records", "import_records"]

FORMAT = "deepcontext-export"
VERSION = 1
#: exported for the record, never imported: the activity log speaks of the source database's memory
#: ids and of calls made there
LOG_RECORDS = frozenset({"activity", "activity_hits"})


def _to_json(table: Any, row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, datetime):
            out[k] = v.isoformat()
        elif isinstance(v, np.ndarray):
            out[k] = base64.b64encode(np.asarray(v, dtype=np.float32).tobytes()).decode()
        else:
            out[k] = _strict(v)
    return out


def _strict(value: Any) -> Any:
    """A value strict JSON can hold: NaN and Infinity (stored before metadata was checked for
    them) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


async def export_records(store: Store, embedder: Embedder, user_id: str, now: datetime) -> AsyncIterator[dict[str, Any]]:
    yield {
        "record": "header",
        "format": FORMAT,
        "version": VERSION,
        "user_id": user_id,
        "exported_at": now.isoformat(),
        "embedder": embedder.model_id,
        "dimensions": embedder.dimensions,
    }
    rows = await asyncio.to_thread(lambda: list(store.export_rows(user_id)))
    for table, row in rows:
        yield {"record": table, **_to_json(table, row)}


def _from_json(store: Store, table: str, rec: Mapping[str, Any]) -> dict[str, Any]:
    kinds = store.import_columns(table)
    if kinds is None:
        raise ValidationError(f"unknown record type {table!r} in import", field="records")
    out: dict[str, Any] = {}
    for k, v in rec.items():
        if k == "record":
            continue
        kind = kinds.get(k)
        if kind is None:
            raise ValidationError(f"unknown column {table}.{k} in import", field="records")
        if v is not None and kind == "time":  # held to the range every other entry holds to
            v = parse_time(v, f"{table}.{k}")
        elif v is not None and kind == "vector":
            v = np.frombuffer(base64.b64decode(v), dtype=np.float32)
        elif k == "metadata":  # as an add takes it: the same size and depth limits
            check_json(v, f"{table}.{k}")
        elif kind == "json":
            _check_json(v, f"{table}.{k}")
        out[k] = v
    return out


async def import_records(
    store: Store,
    embedder: Embedder,
    records: Sequence[Mapping[str, Any]],
    user_id: str | None,
    now: datetime,
    *,
    part_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Restore an export: one transaction, or with ``part_size`` one per that many records, where a
    run after an interruption continues after the last committed part and never writes a part
    twice (the counts are then this run's, with ``resumed_parts``). ``progress(done, total)``
    counts records."""
    if not records or records[0].get("record") != "header" or records[0].get("format") != FORMAT:
        raise ValidationError("not a deepcontext export: the first record must be its header", field="records")
    header = records[0]
    if header.get("version") != VERSION:
        raise ValidationError(f"unsupported export version {header.get('version')!r}", field="records")
    target = user_id or header.get("user_id")
    if not isinstance(target, str) or not target:
        raise ValidationError("no user id to import into", field="user_id")
    rows: list[tuple[str, dict[str, Any]]] = []
    for i, rec in enumerate(records[1:], start=1):
        kind = rec.get("record")
        if not isinstance(kind, str):
            raise ValidationError(f"record {i} names no table (key 'record')", field="records")
        if kind in LOG_RECORDS:
            continue
        rows.append((kind, _from_json(store, kind, rec)))
    same_model = header.get("embedder") == embedder.model_id and header.get("dimensions") == embedder.dimensions
    # the records' content, not the header (two exports of the same rows are the same import)
    content = [r for r in records[1:] if r.get("record") not in LOG_RECORDS]
    fingerprint = await asyncio.to_thread(_fingerprint, content)
    if part_size is None or len(rows) <= part_size:
        await _embed_missing(embedder, rows, same_model)
        counts = await asyncio.to_thread(store.import_rows, target, rows, now, fingerprint=fingerprint)
        if progress:
            progress(len(rows), len(rows))
        return counts
    return await _import_parts(store, embedder, rows, target, now, fingerprint, part_size, same_model, progress)


async def _embed_missing(embedder: Embedder, rows: Sequence[tuple[str, dict[str, Any]]], same_model: bool) -> None:
    mems = [r for k, r in rows if k == "memories"]
    if mems and (not same_model or any(r.get("embedding") is None for r in mems)):
        vecs = await asyncio.to_thread(embedder.embed, [r["text"] for r in mems])
        for r, v in zip(mems, vecs, strict=True):
            if not same_model or r.get("embedding") is None:
                r["embedding"] = v


#: per kind of row, the fields that may point at a row further on in the export (resolved at the end)
_FORWARD = {
    "conversations": ("tip_turn_id", "summary_turn_id"),
    "turns": ("summarized_by", "summary_of"),
    "memories": ("superseded_by", "consolidated_from"),
}


async def _import_parts(
    store: Store,
    embedder: Embedder,
    rows: list[tuple[str, dict[str, Any]]],
    target: str,
    now: datetime,
    fingerprint: str,
    size: int,
    same_model: bool,
    progress: Callable[[int, int], None] | None,
) -> dict[str, int]:
    parts = [rows[i : i + size] for i in range(0, len(rows), size)]
    key = f"{fingerprint}/{size}/{len(parts)}"
    maps: dict[str, dict[int, int]] = {}
    totals: dict[str, int] = {}
    done = 0
    for i in range(len(parts)):  # the parts an earlier run committed, and the ids they gave
        mark = await asyncio.to_thread(store.kv_get, target, IMPORTS_NAMESPACE, f"{key}/{i}")
        if mark is None:
            break
        for kind, ids in mark["maps"].items():
            maps.setdefault(kind, {}).update({int(k): int(v) for k, v in ids.items()})
        _add_counts(totals, mark["counts"])
        done = i + 1
    if progress:
        progress(sum(len(p) for p in parts[:done]), len(rows))
    if done == len(parts):
        return {**totals, "already_imported": 1}
    totals = {}  # from here: what this run writes
    earlier = [(k, r) for k, r in rows[: (len(parts) - 1) * size] if any(r.get(f) for f in _FORWARD.get(k, ()))]
    for i in range(done, len(parts)):
        last = i == len(parts) - 1
        await _embed_missing(embedder, parts[i], same_model)
        counts = await asyncio.to_thread(
            store.import_rows, target, parts[i], now, fingerprint=fingerprint if last else None, maps=maps,
            fixups=earlier if last else (), part=f"{key}/{i}",
        )  # fmt: skip
        _add_counts(totals, {k: v for k, v in counts.items() if k != "already_imported"})
        if progress:
            progress(sum(len(p) for p in parts[: i + 1]), len(rows))
    return {**totals, **({"resumed_parts": done} if done else {})}


def _add_counts(into: dict[str, int], counts: Mapping[str, int]) -> None:
    for k, v in counts.items():
        into[k] = into.get(k, 0) + int(v)


def _fingerprint(records: Sequence[Mapping[str, Any]]) -> str:
    digest = hashlib.sha256()
    for rec in records:
        digest.update(json.dumps(rec, sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:32]
