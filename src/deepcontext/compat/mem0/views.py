"""How deepcontext's memories look to a mem0 user: mem0's item keys, the memory text as mem0 would
hold it (a turn's content, not ``Speaker: content``), metadata without the engine's own keys, and
scores on mem0's scale."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

from deepcontext.errors import ValidationError
from deepcontext.retrieve.calibration import FEATURES, default_calibration
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import HistoryEntry, HistoryEvent, MemoryStatus
from deepcontext.types import Memory as StoredMemory

__all__ = ["View", "relevance_from_score", "score_from_relevance"]

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
#: the conversation ``add(..., infer=False)`` writes to: its messages are memories as given, and
#: they are not the context of later extractions (as in mem0, which keeps no raw add as context)
RAW_CONVERSATION = "mem0-raw"
#: where mem0 keeps a memory's expiry (a payload key, shown as a top-level item key)
EXPIRATION_KEY = "expiration_date"
#: metadata keys the engine writes beside the caller's (standing facts, single-valued slots, the
#: speaker, what extracted a fact and how it read its time)
_ENGINE_KEYS = frozenset(
    {
        "standing", "slots", "speaker", "role", "extractor", "hedged", "reported_by",
        "occurred_at_precision", "occurred_at_text", "time_expression", "time_granularity",
    }
)  # fmt: skip
_ENGINE_PREFIXES = ("slot:",)


# --- scores -----------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _scale() -> tuple[float, float]:
    cal = default_calibration()
    return cal.intercept, cal.weights[FEATURES.index("similarity")]


def score_from_relevance(relevance: float) -> float:
    """mem0's score for a calibrated relevance ``p``: the cosine similarity ``s`` at which the
    calibration, with no other evidence, gives ``p`` (``p = 1 / (1 + exp(-(a + b * s)))``, ``a``
    and ``b`` its intercept and similarity weight), clipped to [0, 1]. Monotone in ``p``."""
    a, b = _scale()
    p = min(max(relevance, 1e-12), 1 - 1e-12)
    return min(1.0, max(0.0, (math.log(p / (1 - p)) - a) / b))


def relevance_from_score(score: float) -> float:
    """The calibrated relevance a mem0 score (or threshold) stands for; the inverse of
    :func:`score_from_relevance` inside (0, 1)."""
    a, b = _scale()
    return 1.0 / (1.0 + math.exp(-(a + b * score)))


# --- the memories as mem0 shows them ------------------------------------------------------------------
@dataclass(slots=True)
class View:
    """A stored memory and what a mem0 user sees of it."""

    memory: StoredMemory
    text: str
    role: str | None = None  # the message's role, for a message kept as given
    actor_id: str | None = None
    attributed_to: str | None = None  # whom an extracted memory is about ("user" / "assistant")

    @property
    def id(self) -> int:
        return self.memory.id


def shown_text(text: str, content: str | None) -> str:
    """A turn memory's text as mem0 holds it: the message's content without ``Speaker: ``."""
    if content is None:
        return text
    body = content.strip()
    if text != body and text.endswith(": " + body) and "\n" not in text[: len(text) - len(body) - 2]:
        return body
    return text


def visible_metadata(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    out = {
        k: v for k, v in metadata.items() if k not in _ENGINE_KEYS and k != EXPIRATION_KEY and not k.startswith(_ENGINE_PREFIXES)
    }
    return out or None


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def item(v: View) -> dict[str, Any]:
    """mem0's memory item (``get`` / ``get_all``): id, memory, hash, metadata, times, then the
    entity ids, actor, role and expiry where the memory has them."""
    m = v.memory
    out: dict[str, Any] = {
        "id": str(m.id),
        "memory": v.text,
        "hash": hashlib.md5(v.text.encode()).hexdigest(),
        "metadata": visible_metadata(m.metadata),
        "created_at": _iso(m.created_at),
        "updated_at": _iso(m.updated_at),
        "user_id": m.user_id,
    }
    if m.agent_id is not None:
        out["agent_id"] = m.agent_id
    if m.run_id is not None:
        out["run_id"] = m.run_id
    if v.actor_id is not None:
        out["actor_id"] = v.actor_id
    if v.role is not None:
        out["role"] = v.role
    if v.attributed_to is not None:
        out["attributed_to"] = v.attributed_to
    if m.metadata.get(EXPIRATION_KEY) is not None:
        out[EXPIRATION_KEY] = m.metadata[EXPIRATION_KEY]
    return out


def history_item(h: HistoryEntry, v: View, turn_content: str | None) -> dict[str, Any]:
    """mem0's history row. mem0 stamps each row with the memory's creation time (``created_at``)
    and the time of the change (``updated_at``), and the actor and role of the memory's message."""
    if h.event is HistoryEvent.REPLACE:
        event = "UPDATE"
    else:
        event = h.event.value
    return {
        "id": str(h.id),
        "memory_id": str(h.memory_id),
        "old_memory": shown_text(h.old_text, turn_content) if h.old_text is not None else None,
        "new_memory": shown_text(h.new_text, turn_content) if h.new_text is not None else None,
        "event": event,
        "created_at": _iso(v.memory.created_at),
        "updated_at": _iso(h.created_at),
        "is_deleted": h.event is HistoryEvent.DELETE,
        "actor_id": v.actor_id,
        "role": v.role,
    }


def views_of(
    store: Any, user_id: str, memories: Sequence[StoredMemory], now: datetime, scope: MemoryFilters | None = None
) -> tuple[list[View | None], dict[int, list[View]]]:
    """Each memory's view, or None where mem0 would show nothing: a verbatim turn that a memory was
    derived from (that memory shows it), or an assistant turn of an inferred add (mem0 extracts
    from it or forgets it). With ``scope``, also the memories (passing ``scope``) that stand for
    each hidden turn, by the turn memory's id: a search that found the turn found them. Runs in a
    worker thread: it reads the store."""
    turns = {m.id: m.sources[0].turn_id for m in memories if m.source == "turn" and m.sources}
    contents: dict[int, Any] = {}
    covered: set[int] = set()
    if turns:
        tids = sorted(set(turns.values()))
        contents = {t.id: t for t in store.get_turns(user_id, tids)}
        every = MemoryFilters(statuses=tuple(MemoryStatus), include_expired=True)
        citing = [i for i in store.rank_fields_citing(user_id, tids, every, now) if i not in turns]
        for m in store.get_memories(user_id, citing, details=True):
            if m.source != "turn":
                covered.update(p.turn_id for p in m.sources)
    out: list[View | None] = []
    hidden: dict[int, int] = {}
    for m in memories:
        tid = turns.get(m.id)
        if tid is None:
            out.append(View(m, m.text, attributed_to=_role(m)))
            continue
        turn = contents.get(tid)
        if tid in covered or turn is None or (turn.role != "user" and m.conversation_id != RAW_CONVERSATION):
            out.append(None)
            if tid in covered:
                hidden[m.id] = tid
            continue
        out.append(View(m, shown_text(m.text, turn.content), role=turn.role, actor_id=turn.name))
    standing_in: dict[int, list[View]] = {}
    if scope is not None and hidden:
        ids = [i for i in store.rank_fields_citing(user_id, sorted(set(hidden.values())), scope, now) if i not in turns]
        facts = [m for m in store.get_memories(user_id, ids, details=True) if m.source != "turn"]
        for mid, tid in hidden.items():
            standing_in[mid] = [
                View(f, f.text, attributed_to=_role(f)) for f in facts if any(p.turn_id == tid for p in f.sources)
            ]
    return out, standing_in


def _role(m: StoredMemory) -> str | None:
    """Whom an extracted memory is about, as mem0's ``attributed_to``: the role of the message it
    was derived from."""
    role = m.sources[0].role if m.sources else m.metadata.get("role")
    return role if role in ("user", "assistant") else None


def turn_content(store: Any, user_id: str, m: StoredMemory) -> str | None:
    if m.source != "turn" or not m.sources:
        return None
    found = store.get_turns(user_id, [m.sources[0].turn_id])
    return found[0].content if found else None


# --- inputs -------------------------------------------------------------------------------------------
def entity_id(value: Any, field: str) -> str | None:
    """An entity id as mem0 takes it: any value made a string, trimmed; empty or spaced ids refused."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError(f"{field} must be an id, got {value!r}", field=field)
    text = str(value).strip()
    if not text:
        raise ValidationError(f"{field} cannot be empty or whitespace-only", field=field)
    if any(c.isspace() for c in text):
        raise ValidationError(f"{field} cannot contain whitespace", field=field)
    return text


def split_filters(filters: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The entity ids of a mem0 filter (top-level keys, or one-key conditions of a top-level AND)
    and the metadata filter that remains."""
    if filters is None:
        return {}, None
    if not isinstance(filters, Mapping):
        raise ValidationError("filters must be an object", field="filters")
    ids: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in filters.items():
        if key in ENTITY_KEYS:
            ids[key] = _entity_value(key, value)
        elif key == "AND" and isinstance(value, (list, tuple)):
            kept = []
            for cond in value:
                if isinstance(cond, Mapping) and len(cond) == 1 and next(iter(cond)) in ENTITY_KEYS:
                    k, v = next(iter(cond.items()))
                    ids[k] = _entity_value(k, v)
                else:
                    kept.append(cond)
            if kept:
                rest[key] = kept
        else:
            rest[key] = value
    return ids, (rest or None)


def _entity_value(key: str, value: Any) -> Any:
    """``"id"``, ``{"eq": "id"}``, ``{"in": [ids]}`` or ``"*"`` (any) of an entity key."""
    if isinstance(value, Mapping) and len(value) == 1:
        op, operand = next(iter(value.items()))
        if op == "eq":
            return entity_id(operand, f"filters.{key}")
        if op == "in" and isinstance(operand, (list, tuple)) and key != "user_id":
            return [entity_id(v, f"filters.{key}") for v in operand]
    if value == "*":
        return value
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return entity_id(value, f"filters.{key}")
    raise ValidationError(
        f"{key} in filters takes an id{'' if key == 'user_id' else ', {in: [ids]} or *'}", field=f"filters.{key}"
    )


def unexpired(meta: dict[str, Any] | None, today: date) -> dict[str, Any]:
    """``meta`` and "not past its mem0 expiration date" (a memory expires after that day, UTC)."""
    live = {"OR": [{"NOT": [{EXPIRATION_KEY: "*"}]}, {EXPIRATION_KEY: {"gte": today.isoformat()}}]}
    return {"AND": [meta, live]} if meta else live


def threshold_of(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValidationError(f"threshold must be a number between 0 and 1, got {value!r}", field="threshold")
    return float(value)


def count_of(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{field} must be a non-negative integer, got {value!r}", field=field)
    return value


def expiration_of(value: Any) -> str | None:
    """mem0's expiration date (YYYY-MM-DD) of a date, datetime or ISO date string."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat() if value.tzinfo else value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise ValidationError(f"expiration_date must be a date (YYYY-MM-DD), got {value!r}", field="expiration_date")
