"""Reading what ``deepcontext add`` is given: message files cut into batches, and where an interrupted
run of the same input stopped."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC
from typing import Any

from deepcontext.cli.common import fail, read_input

#: messages per add() when a file holds more (progress shows between chunks)
ADD_CHUNK = 100


#: the turn metadata key that records a message's place in a bulk input (what resuming reads)
IMPORT_KEY = "import"


#: recent turns per conversation read to find where an interrupted input stopped
RESUME_SCAN = 1000


def read_batches(path: str, conversation: str, timestamp: str | None) -> list[dict[str, Any]]:
    """Messages from a JSON / JSONL file or stdin ('-'), as batches for add().

    Accepted: a JSON list of messages; a JSON object {"messages": [...], "conversation_id"?,
    "timestamp"?}; a list of such objects; JSONL with one message or one batch object per line.
    """
    raw = read_input(path).strip()
    if not raw:
        fail("no input: expected JSON or JSONL messages")
    try:
        data: Any = json.loads(raw)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        items = []
        for n, line in enumerate(raw.splitlines(), start=1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    fail(f"line {n}: not JSON ({exc.msg})")
    batches: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    for it in items:
        if isinstance(it, dict) and "messages" in it:
            batches.append(
                {
                    "messages": it["messages"],
                    "conversation_id": it.get("conversation_id", conversation),
                    "timestamp": it.get("timestamp", timestamp),
                }
            )
        else:
            loose.append(it)
    if loose:
        batches.insert(0, {"messages": loose, "conversation_id": conversation, "timestamp": timestamp})
    return batches


def source_key(path: str, batches: list[dict[str, Any]]) -> str:
    """What identifies one input across runs: a digest of its messages (the same file read again,
    or a copy of it, has the same key; an edited one has another)."""
    body = json.dumps(batches, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def mark_positions(msgs: Any, source: str, start: int) -> Any:
    """Each message tagged with its place in the input (stored in its turn's metadata, so the
    checkpoint is written in the same transaction as the batch); anything else add() refuses."""
    if not isinstance(msgs, list):
        return msgs
    out = []
    for i, m in enumerate(msgs):
        meta = m.get("metadata", {}) if isinstance(m, dict) else None
        if not isinstance(meta, dict):
            out.append(m)
            continue
        out.append({**m, "metadata": {**meta, IMPORT_KEY: {"source": source, "position": start + i}}})
    return out


async def committed_count(ctx: Any, user: str, conversations: list[str], source: str) -> int:
    """How many messages of ``source`` are stored already: one past the highest position among
    the recent turns of the conversations it writes to (batches commit in order)."""
    done = 0
    for conv in conversations:
        for turn in await ctx.turns(user, conv, limit=RESUME_SCAN):
            mark = turn.metadata.get(IMPORT_KEY)
            if isinstance(mark, dict) and mark.get("source") == source and isinstance(mark.get("position"), int):
                done = max(done, mark["position"] + 1)
    return done


def turn_texts(ctx: Any, msgs: Any, user_name: str | None) -> list[str]:
    """The texts add() will embed for these messages' own memories (none if they do not parse:
    add() then reports the error)."""
    from datetime import datetime

    from deepcontext.errors import ValidationError
    from deepcontext.services.ingest import turn_memory_text
    from deepcontext.services.validation import parse_messages

    if not ctx.settings.store_turn_memories:
        return []
    try:
        parsed = parse_messages(
            msgs, now=datetime.now(UTC), default_time=None,
            max_messages=ctx.settings.max_messages_per_add, max_chars=ctx.settings.max_message_chars,
        )  # fmt: skip
    except ValidationError:
        return []
    return [turn_memory_text(m, user_name) for m in parsed if m.role in ("user", "assistant")]
