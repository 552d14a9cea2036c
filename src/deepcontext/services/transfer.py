"""Export and import: every row of a user as JSON lines, restorable into any database.

Format (one JSON object per line): a header ``{"record": "header", "format": "deepcontext-export",
"version": 1, "user_id", "exported_at", "embedder", "dimensions"}``, then one record per row
``{"record": "<table>", ...columns}`` for conversations, turns, turn_edges, entities, relations,
memories (embedding as base64 float32), memory_sources, memory_entities, memory_links,
memory_history and kv. Ids are the source database's; an import gives fresh ids and remaps every
reference, so memories come back with the same text, status, provenance and history.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import JSON

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import ValidationError
from deepcontext.services.validation import _check_json, check_json
from deepcontext.store.schema import is_time_column, is_vector_column
from deepcontext.store.interface import Store

__all__ = ["FORMAT", "VERSION", "export_records", "import_records"]

FORMAT = "deepcontext-export"
VERSION = 1


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


def _from_json(store: Any, table: str, rec: Mapping[str, Any]) -> dict[str, Any]:
    if table not in store.metadata.tables or table in ("users", "dc_meta", "locks", "api_keys"):
        raise ValidationError(f"unknown record type {table!r} in import", field="records")
    cols = store.metadata.tables[table].c
    out: dict[str, Any] = {}
    for k, v in rec.items():
        if k == "record":
            continue
        if k not in cols:
            raise ValidationError(f"unknown column {table}.{k} in import", field="records")
        col = cols[k]
        if v is not None and is_time_column(col):
            v = datetime.fromisoformat(v)
        elif v is not None and is_vector_column(col):
            v = np.frombuffer(base64.b64decode(v), dtype=np.float32)
        elif k == "metadata":  # as an add takes it: the same size and depth limits
            check_json(v, f"{table}.{k}")
        elif isinstance(col.type, JSON):
            _check_json(v, f"{table}.{k}")
        out[k] = v
    return out


async def import_records(
    store: Store,
    embedder: Embedder,
    records: Sequence[Mapping[str, Any]],
    user_id: str | None,
    now: datetime,
) -> dict[str, int]:
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
        rows.append((kind, _from_json(store, kind, rec)))
    same_model = header.get("embedder") == embedder.model_id and header.get("dimensions") == embedder.dimensions
    mems = [r for k, r in rows if k == "memories"]
    if mems and (not same_model or any(r.get("embedding") is None for r in mems)):
        vecs = await asyncio.to_thread(embedder.embed, [r["text"] for r in mems])
        for r, v in zip(mems, vecs, strict=True):
            if not same_model or r.get("embedding") is None:
                r["embedding"] = v
    # the records' content, not the header (two exports of the same rows are the same import)
    fingerprint = await asyncio.to_thread(_fingerprint, records[1:])
    return await asyncio.to_thread(store.import_rows, target, rows, now, fingerprint=fingerprint)


def _fingerprint(records: Sequence[Mapping[str, Any]]) -> str:
    digest = hashlib.sha256()
    for rec in records:
        digest.update(json.dumps(rec, sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:32]
