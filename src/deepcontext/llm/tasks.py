"""LLM tasks besides extraction: running conversation summaries and merges for consolidation."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from deepcontext.errors import LLMResponseError, ValidationError
from deepcontext.llm import prompts
from deepcontext.llm.client import LLM
from deepcontext.llm.structured import shorten, strip_fences, strip_reasoning

__all__ = ["MergedFact", "format_turn", "merge_memories", "summarize_conversation"]

logger = logging.getLogger("deepcontext.llm")


def _get(item: Any, *names: str) -> Any:
    for name in names:
        if isinstance(item, Mapping):
            if item.get(name) is not None:
                return item[name]
        elif getattr(item, name, None) is not None:
            return getattr(item, name)
    return None


def format_turn(turn: Any, index: int | None = None) -> str:
    """One turn as the prompts show it: ``[3] (2024-05-03 14:00 UTC, Friday) Caroline (user): text``.

    ``turn`` may be a :class:`~deepcontext.extract.interface.MessageIn`, a stored ``Turn``, a ``Message`` or a
    mapping with ``role`` and ``content`` (and optionally ``name``, ``said_at`` or ``timestamp``).
    """
    role = str(_get(turn, "role") or "user")
    content = _get(turn, "content")
    if not isinstance(content, str):
        raise ValidationError("every turn needs a string content", field="turns")
    name = _get(turn, "name")
    when = _get(turn, "said_at", "timestamp")
    speaker = f"{name} ({role})" if name else role.capitalize()
    stamp = prompts.format_time(when) if isinstance(when, datetime) else None
    head = f"[{index}] " if index is not None else ""
    if stamp:
        head += f"({stamp}) "
    return f"{head}{speaker}: {content}"


async def summarize_conversation(
    llm: LLM,
    turns: Sequence[Any],
    previous_summary: str | None = None,
    *,
    max_words: int = 200,
    max_chars: int = 24_000,
    timeout: float | None = None,
) -> str:
    """The conversation's updated running summary: ``previous_summary`` merged with ``turns``.

    Turns beyond ``max_chars`` of text are cut from the oldest end (the previous summary covers what
    came before). Returns the previous summary unchanged when there are no turns. Raises
    :class:`LLMResponseError` when the answer is empty after removing reasoning blocks.
    """
    if max_words < 10:
        raise ValidationError("max_words must be at least 10", field="max_words")
    if not turns:
        if previous_summary is None:
            raise ValidationError("nothing to summarize: no turns and no previous summary", field="turns")
        return previous_summary
    lines = [format_turn(t) for t in turns]
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        if kept and size + len(line) > max_chars:
            break
        kept.append(line)
        size += len(line)
    kept.reverse()
    user = []
    if previous_summary:
        user.append(f"Previous summary:\n{previous_summary}")
    user.append("New messages:\n" + "\n".join(kept))
    messages = [
        {"role": "system", "content": prompts.SUMMARY_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": "\n\n".join(user)},
    ]
    completion = await llm.chat(messages, temperature=0.0, timeout=timeout)
    text = strip_fences(strip_reasoning(completion.text)).strip()
    if not text:
        raise LLMResponseError("the summary answer is empty", backend=completion.backend, text=shorten(completion.text))
    return text


class MergedFact(BaseModel):
    """A consolidated fact and the input memories (positions in ``texts``) it covers."""

    text: str
    sources: list[int]


class _MergeItem(BaseModel):
    text: str
    sources: list[int] = Field(default_factory=list)

    @field_validator("sources", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, (int, str)) else v


class MergeAnswer(BaseModel):
    """What the merge prompt asks for."""

    facts: list[_MergeItem]


async def merge_memories(llm: LLM, texts: Sequence[str], *, timeout: float | None = None) -> list[MergedFact]:
    """Merge memories into fewer facts without losing any: for consolidation.

    The LLM is told to keep contradicting memories as separate facts. Whatever it answers, no input
    is lost: output facts citing no valid input are dropped, and every input that no kept fact covers
    comes back unchanged as its own fact. One text is returned as is, without a call.
    """
    items = list(texts)
    for i, t in enumerate(items):
        if not isinstance(t, str) or not t.strip():
            raise ValidationError(f"texts[{i}] must be a non-empty string", field=f"texts[{i}]")
    if not items:
        return []
    if len(items) == 1:
        return [MergedFact(text=items[0], sources=[0])]
    numbered = "\n".join(f"[{i}] {t}" for i, t in enumerate(items))
    messages = [
        {"role": "system", "content": prompts.MERGE_SYSTEM},
        {"role": "user", "content": f"Memories:\n{numbered}"},
    ]
    answer = await llm.complete_json(messages, MergeAnswer, timeout=timeout)
    out: list[MergedFact] = []
    covered: set[int] = set()
    dropped = 0
    for item in answer.facts:
        text = item.text.strip()
        sources = sorted({s for s in item.sources if 0 <= s < len(items)})
        if not text or not sources:
            dropped += 1
            continue
        out.append(MergedFact(text=text, sources=sources))
        covered.update(sources)
    missing = [i for i in range(len(items)) if i not in covered]
    if dropped or missing:
        logger.warning(
            "merge: %d LLM fact(s) dropped (no valid source), %d input(s) kept unchanged (not covered)",
            dropped,
            len(missing),
        )
    out.extend(MergedFact(text=items[i], sources=[i]) for i in missing)
    return out
