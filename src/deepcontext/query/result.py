"""Result types of ``DeepCQ.query()`` (deepcq's ``result.py``, plus entry-level detail)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["EntryMatch", "OptimizationMetrics", "QueryResult", "ScoreExplanation", "SectionMatch"]


@dataclass
class ScoreExplanation:
    """Why a section (or entry) scored the way it did."""

    score: float
    matched_tokens: list[str]
    matched_anchors: list[str]
    literal_hit: bool
    matched_phrases: list[str] = field(default_factory=list)
    #: source -> share of the token score it supplied; sources are tier names plus "schema"
    tier_contributions: dict[str, float] = field(default_factory=dict)
    #: token + phrase score before anchors, blending and recency
    lexical_score: float = 0.0
    #: rescaled embedding similarity in [0, 1]; None when semantic scoring is off
    semantic_score: float | None = None
    #: recency multiplier applied last (1.0 without recency)
    recency_multiplier: float = 1.0


@dataclass
class OptimizationMetrics:
    original_chars: int
    filtered_chars: int
    reduction_pct: float


@dataclass
class EntryMatch:
    """One entry of a free-text tier (a cache entry, a history turn) and its relevance."""

    tier: str
    key: str
    text: str
    score: float
    included: bool
    explanation: ScoreExplanation


@dataclass
class SectionMatch:
    """A section scored by :func:`~deepcontext.query.intent.select_sections`."""

    name: str
    text: str
    score: float
    included: bool
    explanation: ScoreExplanation


@dataclass
class QueryResult:
    content: str
    intent: dict[str, float]
    sections_included: list[str]
    sections_excluded: list[str]
    #: regex of the query's words and stems (informational; inclusion uses the scores)
    content_pattern: str
    metrics: OptimizationMetrics
    explanations: dict[str, ScoreExplanation] = field(default_factory=dict)
    #: every cache entry and history turn with its score; ``included`` ones are in ``content``
    entries: list[EntryMatch] = field(default_factory=list)
    #: True when nothing cleared the thresholds and the full text was returned
    fallback: bool = False
