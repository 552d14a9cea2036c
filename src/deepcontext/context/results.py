"""What ``DeepContext.context(...)`` returns: the text for the next prompt and its breakdown."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from deepcontext.errors import ValidationError
from deepcontext.services.requests import (  # the context's defaults live with its request
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_CONVERSATION_NODES,
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_MIN_SIMILARITY,
    MAX_BUDGET_TOKENS,
    TOKENS_PER_RESULT,
)
from deepcontext.services.validation import check_number

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

PartName = Literal["pinned", "memories", "tiers", "conversation"]
#: the parts, in the order they appear in the text
PARTS: tuple[str, ...] = ("pinned", "memories", "tiers", "conversation")


class ContextShares(BaseModel):
    """The share of the budget each part may use before the others have taken theirs.

    Defaults: pinned 0.15, memories 0.35, tiers 0.20, conversation 0.30. Shares are normalised
    to sum to 1; a share of 0 turns its part off. Budget a part leaves unused goes to the others
    (see :mod:`deepcontext.context.packing`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pinned: float = Field(default=0.15, ge=0, le=1_000)
    memories: float = Field(default=0.35, ge=0, le=1_000)
    tiers: float = Field(default=0.20, ge=0, le=1_000)
    conversation: float = Field(default=0.30, ge=0, le=1_000)

    @classmethod
    def coerce(cls, value: ContextShares | Mapping[str, float] | None) -> ContextShares:
        """Shares from None (the defaults), a ContextShares, or a mapping overriding some parts."""
        if value is None:
            return cls()
        if isinstance(value, ContextShares):
            shares = value
        elif isinstance(value, Mapping):
            unknown = set(value) - set(PARTS)
            if unknown:
                raise ValidationError(f"unknown part(s) in shares: {sorted(unknown)}; parts are {list(PARTS)}", field="shares")
            for name, share in value.items():
                check_number(share, f"shares.{name}", 0.0)
            shares = cls(**{**cls().model_dump(), **{k: float(v) for k, v in value.items()}})
        else:
            raise ValidationError("shares must be a ContextShares or a mapping {part: share}", field="shares")
        if sum(shares.as_dict().values()) <= 0:
            raise ValidationError("at least one share must be positive", field="shares")
        return shares

    def as_dict(self) -> dict[str, float]:
        return {p: float(getattr(self, p)) for p in PARTS}

    def normalised(self) -> dict[str, float]:
        """``{part: share}`` summing to 1."""
        raw = self.as_dict()
        total = sum(raw.values())
        return {p: v / total for p, v in raw.items()}


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
