"""DeepContext 0.1 databases: recognised before migrating, and imported.

0.1 kept ``memories`` (with ``is_active``, ``source_entities``, ``connections``), ``entities``,
``relationships`` and ``conversation_summaries`` in a SQLite file (by default the same
``~/.deepcontext/memory.db``). An import reads that file read-only and writes each user's rows
through :meth:`DeepContext.import_records` (one transaction per user, fresh ids, an IMPORT entry in
every memory's history); the memories are embedded again with the configured embedder, since 0.1's
OpenAI vectors cannot be compared with it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepcontext.errors import ValidationError
from deepcontext.services.requests import ImportRequest
from deepcontext.services.transfer import FORMAT, VERSION
from deepcontext.store import V01_TABLES, is_v01_database, is_v01_schema
from deepcontext.store import open_read_only as _open
from deepcontext.store import table_names as _tables
from deepcontext.text import content_hash, entity_norm
from deepcontext.types import EntityType, MemoryTier, MemoryType

if TYPE_CHECKING:
    from deepcontext.services.memories import MemoryService
    from deepcontext.types import RowCounts

__all__ = ["V01_TABLES", "import_v01", "is_v01_database", "read_v01"]

_TIERS = {t.value for t in MemoryTier}
_TYPES = {t.value for t in MemoryType}
_ENTITY_TYPES = {t.value for t in EntityType}


def _time(value: Any, default: datetime) -> datetime:
    if not value:
        return default
    try:
        t = datetime.fromisoformat(str(value))
    except ValueError:
        return default
    return t if t.tzinfo else t.replace(tzinfo=UTC)  # 0.1 wrote UTC without an offset


def _json(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if not isinstance(value, str):
        return value
    try:
        out = json.loads(value)
    except json.JSONDecodeError:
        return default
    return out if isinstance(out, type(default)) else default


def read_v01(path: str | Path, now: datetime) -> dict[str, list[dict[str, Any]]]:
    """Each user's rows of a 0.1 database as deepcontext export records (header first)."""
    path = Path(path).expanduser()
    with _open(path) as conn:
        names = _tables(conn)
        if not is_v01_schema(names):
            raise ValidationError(f"{str(path)!r} is not a DeepContext 0.1 database", field="path")
        entities = list(conn.execute("SELECT * FROM entities ORDER BY id")) if "entities" in names else []
        relations = list(conn.execute("SELECT * FROM relationships ORDER BY id"))
        memories = list(conn.execute("SELECT * FROM memories ORDER BY id"))
        summaries = (
            list(conn.execute("SELECT * FROM conversation_summaries ORDER BY id")) if "conversation_summaries" in names else []
        )
    users = sorted({r["user_id"] for r in [*entities, *relations, *memories, *summaries]})
    out: dict[str, list[dict[str, Any]]] = {}
    for user in users:
        recs: list[dict[str, Any]] = [
            # another embedder than any of ours: the import embeds every memory again
            {"record": "header", "format": FORMAT, "version": VERSION, "user_id": user, "exported_at": now.isoformat(),
             "embedder": "deepcontext-0.1", "dimensions": 0},
        ]  # fmt: skip
        by_name: dict[str, int] = {}
        for e in (e for e in entities if e["user_id"] == user):
            first = _time(e["created_at"], now)
            etype = e["entity_type"] if e["entity_type"] in _ENTITY_TYPES else EntityType.OTHER.value
            by_name[e["name"]] = e["id"]
            recs.append(
                {"record": "entities", "id": e["id"], "name": e["name"], "norm_name": entity_norm(e["name"]) or e["name"].casefold(),
                 "entity_type": etype, "mention_count": max(int(e["mention_count"] or 1), 1), "first_seen_at": first.isoformat(),
                 "last_seen_at": _time(e["updated_at"], first).isoformat(), "attributes": _json(e["attributes"], {})}
            )  # fmt: skip
        for r in (r for r in relations if r["user_id"] == user):
            at = _time(r["created_at"], now).isoformat()
            recs.append(
                {"record": "relations", "id": r["id"], "source_id": r["source_entity_id"], "target_id": r["target_entity_id"],
                 "relation": r["relation"], "strength": float(r["strength"] or 1.0), "created_at": at, "updated_at": at,
                 "properties": _json(r["properties"], {})}
            )  # fmt: skip
        for s in (s for s in summaries if s["user_id"] == user):
            at = _time(s["updated_at"], now).isoformat()
            recs.append(
                {"record": "conversations", "conversation_id": s["conversation_id"], "summary": s["summary_text"],
                 "summary_updated_at": at, "turn_count": 0, "created_at": _time(s["created_at"], now).isoformat(),
                 "updated_at": at, "metadata": {}}
            )  # fmt: skip
        mine = [m for m in memories if m["user_id"] == user]
        ids = {m["id"] for m in mine}
        for m in mine:
            created = _time(m["created_at"], now)
            updated = _time(m["updated_at"], created)
            active = bool(m["is_active"])
            importance = float(m["importance"] if m["importance"] is not None else 0.5)
            recs.append(
                {"record": "memories", "id": m["id"], "text": m["text"], "content_hash": content_hash(m["text"]),
                 "memory_type": m["memory_type"] if m["memory_type"] in _TYPES else MemoryType.SEMANTIC.value,
                 "tier": m["tier"] if m["tier"] in _TIERS else MemoryTier.SHORT_TERM.value,
                 # 0.1 had one flag for deleted and faded memories: both stay in the history as deleted
                 "status": "active" if active else "deleted", "deleted_at": None if active else updated.isoformat(),
                 "importance": importance, "base_importance": importance,
                 "confidence": float(m["confidence"] if m["confidence"] is not None else 0.8),
                 "access_count": int(m["access_count"] or 0),
                 "last_accessed_at": _time(m["last_accessed_at"], created).isoformat() if m["last_accessed_at"] else None,
                 "reinforced_at": updated.isoformat(), "created_at": created.isoformat(), "updated_at": updated.isoformat(),
                 "said_at": created.isoformat(),
                 "occurred_at": _time(m["occurred_at"], created).isoformat() if m["occurred_at"] else None,
                 "conversation_id": m["conversation_id"], "source": "import",
                 "consolidated_from": [i for i in _json(m["consolidated_from"], []) if i in ids],
                 "metadata": _json(m["metadata"], {}), "embedding": None}
            )  # fmt: skip
            for name in dict.fromkeys(_json(m["source_entities"], [])):
                if isinstance(name, str) and name in by_name:
                    recs.append({"record": "memory_entities", "memory_id": m["id"], "entity_id": by_name[name]})
            links = _json(m["connections"], {})
            scores = links.get("scores") if isinstance(links.get("scores"), dict) else {}
            for other in dict.fromkeys(links.get("memory_ids") or []):
                if other in ids and other != m["id"]:
                    sim = scores.get(str(other), 0.0)
                    recs.append(
                        {"record": "memory_links", "memory_id": m["id"], "other_id": other,
                         "similarity": float(sim) if isinstance(sim, (int, float)) else 0.0}
                    )  # fmt: skip
        out[user] = recs
    return out


async def import_v01(memories: MemoryService, path: str | Path) -> dict[str, RowCounts]:
    """Import every user of a 0.1 database: ``{user_id: rows per table}``."""
    users = read_v01(path, memories.clock.now())
    return {
        user: await memories.import_records(ImportRequest.of(memories.settings, records=recs, user_id=user))
        for user, recs in users.items()
    }
