"""What ``DeepContext.context(...)`` returns: the text for the next prompt and its breakdown."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from deepcontext.services.requests import (  # the context's defaults and shares live with its request
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_CONVERSATION_NODES,
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_MIN_SIMILARITY,
    MAX_BUDGET_TOKENS,
    PARTS,
    TOKENS_PER_RESULT,
    ContextShares,
    PartName,
)

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "DEFAULT_CONVERSATION_NODES",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_MIN_SIMILARITY",
    "MAX_BUDGET_TOKENS",
    "PARTS",
    "TOKENS_PER_RESULT",
    "ContextItem",
    "ContextPart",
    "ContextResult",
    "ContextShares",
    "LeftOutItem",
    "PartName",
]


class ContextItem(BaseModel):
    """One thing in the context: a memory, a tier section, a node of the conversation."""

    part: PartName
    #: stable id: ``memory:12``, ``state:errors`` (tier:key), ``node:34``
    id: str
    #: exactly as it appears in the text
    text: str
    #: what it costs (its text and line break, counted alone)
    tokens: int
    #: search score (memories), importance (pinned), intent score (tiers); None for the conversation
    score: float | None = None
    #: why it is there
    why: str
    #: cut to fit the budget (the first item of a part larger than the part's share)
    clipped: bool = False
    memory_id: int | None = None
    said_at: datetime | None = None
    occurred_at: datetime | None = None
    #: tier name and key (tier sections)
    tier: str | None = None
    key: str | None = None
    #: conversation node and its turns
    node_id: int | None = None
    turn_ids: list[int] = Field(default_factory=list)


class LeftOutItem(BaseModel):
    """Something that was considered and left out, and why."""

    part: PartName
    id: str
    #: the first 200 characters of its text
    preview: str
    #: what it would have cost; None when it was never considered for the budget (relevance)
    tokens: int | None = None
    score: float | None = None
    #: ``budget`` (did not fit), ``relevance`` (below the relevance bar), ``duplicate`` (shown already)
    cause: Literal["budget", "relevance", "duplicate"]
    why: str
    memory_id: int | None = None
    tier: str | None = None
    key: str | None = None
    node_id: int | None = None


class ContextPart(BaseModel):
    """One part of the context and what it used."""

    name: PartName
    #: its header line in the text
    title: str
    #: its normalised share of the budget
    share: float
    #: tokens it could use before the others took theirs (``share`` x budget)
    allotted_tokens: int
    #: tokens it uses: its header (when it has items) plus its items
    tokens: int
    header_tokens: int
    items: list[ContextItem] = Field(default_factory=list)
    #: how many candidates were left out, by cause
    left_out: dict[str, int] = Field(default_factory=dict)


class ContextResult(BaseModel):
    """The context for the next prompt: ``text`` and how it was put together.

    ``total_tokens`` is the sum of the parts' tokens and never exceeds ``budget_tokens``;
    ``text_tokens`` counts ``text`` at once (equal to ``total_tokens`` with a real tokenizer,
    at most it with the estimate).
    """

    query: str
    user_id: str
    conversation_id: str | None = None
    budget_tokens: int
    total_tokens: int
    text_tokens: int
    #: how tokens were counted
    token_counter: str
    text: str
    parts: list[ContextPart]
    left_out: list[LeftOutItem] = Field(default_factory=list)
    took_ms: float | None = None

    def part(self, name: str) -> ContextPart:
        """The part called ``name`` (KeyError for an unknown one)."""
        for p in self.parts:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def items(self) -> list[ContextItem]:
        """Every included item, in text order."""
        return [i for p in self.parts for i in p.items]

    def summary(self) -> dict[str, Any]:
        """``{part: tokens}`` plus ``total`` and ``budget``."""
        return {**{p.name: p.tokens for p in self.parts}, "total": self.total_tokens, "budget": self.budget_tokens}
