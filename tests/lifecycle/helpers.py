"""Helpers of the lifecycle tests: a scripted extractor (the documented extractor seam, so tests choose
exactly which short-term memories an add derives), row counting, formula checks."""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from sqlalchemy import text

from deepcontext import DeepContext
from deepcontext.extract.interface import (
    ExtractedEntity,
    ExtractedFact,
    ExtractionContext,
    ExtractionResult,
    Extractor,
    MessageIn,
)
from deepcontext.types import EntityType, MemoryType

_NAME = re.compile(r"\b[A-Z][a-z]+\b")


class ScriptedExtractor(Extractor):
    """Every user message is one fact, verbatim. Message metadata may set ``type`` (semantic),
    ``importance`` (0.5) and ``entities`` (default: the capitalised words of the text)."""

    name = "scripted"

    async def extract(self, messages: list[MessageIn], context: ExtractionContext) -> ExtractionResult:
        facts, entities = [], {}
        for m in messages:
            if m.role != "user":
                continue
            names = m.metadata.get("entities")
            if names is None:
                names = list(dict.fromkeys(_NAME.findall(m.content)))
            facts.append(
                ExtractedFact(
                    text=m.content,
                    memory_type=MemoryType(m.metadata.get("type", "semantic")),
                    importance=float(m.metadata.get("importance", 0.5)),
                    entities=names,
                    source_indices=[m.index],
                )
            )
            for n in names:
                entities.setdefault(n, ExtractedEntity(name=n, entity_type=EntityType.OTHER, source_indices=[]))
                entities[n].source_indices.append(m.index)
        return ExtractionResult(facts=facts, entities=list(entities.values()))


async def say(
    ctx: DeepContext,
    user: str,
    content: str,
    *,
    type: str = "semantic",
    importance: float = 0.5,
    entities: list[str] | None = None,
    conversation: str = "c",
    **kw: Any,
) -> int:
    """Add one user message; return the id of the short-term memory derived from it."""
    meta: dict[str, Any] = {"type": type, "importance": importance}
    if entities is not None:
        meta["entities"] = entities
    r = await ctx.add([{"role": "user", "name": "Maya", "content": content, "metadata": meta}], user, conversation, **kw)
    page = await ctx.list(user, tier="short_term", limit=1000, include_inactive=True)
    found = [m.id for m in page.memories if m.text == content]
    assert found, f"no short-term memory for {content!r} (add: {r})"
    return found[0]


def expected_importance(base: float, days: float, half_life: float, accesses: int = 0) -> float:
    """The forgetting curve written out independently of deepcontext.lifecycle.decay."""
    return base * math.exp(-math.log(2) * days / (half_life * (1 + 0.1 * accesses)))


#: tables (and the keyword index) holding rows that belong to one memory, with the column naming it
MEMORY_COLUMNS = {
    "memories": "id",
    "memory_sources": "memory_id",
    "memory_entities": "memory_id",
    "memory_links": "memory_id",
    "memory_history": "memory_id",
}


def residue(ctx: DeepContext, memory_id: int) -> dict[str, int]:
    """Rows anywhere that still refer to a memory (every table, both link directions, the keyword
    index, superseded_by and consolidated_from of other memories)."""
    store: Any = ctx.store
    out: dict[str, int] = {}
    with store.engine.connect() as conn:
        for table, col in MEMORY_COLUMNS.items():
            out[table] = conn.execute(text(f"SELECT count(*) FROM {table} WHERE {col} = :i"), {"i": memory_id}).scalar_one()
        out["memory_links.other_id"] = conn.execute(
            text("SELECT count(*) FROM memory_links WHERE other_id = :i"), {"i": memory_id}
        ).scalar_one()
        # SQLite keeps superseded memories' rows in a table of their own
        fts = {"memory_fts": "rowid", "memory_fts_past": "rowid"} if store.backend == "sqlite" else {"memory_fts": "memory_id"}
        out["memory_fts"] = sum(
            conn.execute(text(f"SELECT count(*) FROM {table} WHERE {col} = :i"), {"i": memory_id}).scalar_one()
            for table, col in fts.items()
        )
        out["superseded_by"] = conn.execute(
            text("SELECT count(*) FROM memories WHERE superseded_by = :i"), {"i": memory_id}
        ).scalar_one()
        cf = [r[0] for r in conn.execute(text("SELECT consolidated_from FROM memories"))]
    out["consolidated_from"] = sum(
        1 for v in cf if memory_id in (v if isinstance(v, list) else __import__("json").loads(v or "[]"))
    )
    return out


def when(m: Any) -> datetime:
    return m.valid_from
