"""Retrieval described as data: a typed search configuration with named presets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings

__all__ = ["PRESETS", "SearchConfig", "preset"]


class SearchConfig(BaseModel):
    """How a search runs: which legs, how deep, how they are fused and rescored.

    Leg sizes are multiples of the requested ``limit`` (the seed's 3x vector, 2x keyword).
    """

    model_config = ConfigDict(frozen=True)

    vector_weight: float = Field(0.6, ge=0)
    keyword_weight: float = Field(0.6, ge=0)
    graph_weight: float = Field(0.15, ge=0)
    rrf_k: int = Field(10, ge=1)
    # the vector leg reads deepest: what words miss at large limits, meaning still finds
    vector_k_factor: int = Field(6, ge=0)
    keyword_k_factor: int = Field(2, ge=0)
    graph_k_factor: int = Field(2, ge=0)
    # deep enough at small limits for a reply's question (or a question's reply) to be among the
    # candidates it can lift
    min_leg_k: int = Field(50, ge=0, description="Each enabled leg fetches at least this many")
    # the vector leg ranks the user's vectors in one pass whatever its depth, so at small limits it
    # reads deeper than the others (fitted, like the rest, by benchmarks/locomo_cv.py)
    vector_min_k: int = Field(100, ge=0, description="The vector leg fetches at least this many (with min_leg_k)")
    graph_depth: int = Field(2, ge=0, le=5)
    group_by_source: bool = Field(True, description="Memories citing the same turns (a turn and its facts) compete as one result")
    before_weight: float = Field(
        0.15, ge=0, description="Share of the score of the turn just before a candidate's turn (the question it answers) it gains"
    )
    after_weight: float = Field(
        0.15, ge=0, description="Share of the score of the turn just after a candidate's turn (the reply it got) it gains"
    )
    neighbour_turns: bool = Field(
        True,
        description="The turns next to the best results' own turns join as results when no leg found them, "
        "ranked by what the spreading lends them (legs: neighbour, fused)",
    )
    session_weight: float = Field(0.0, ge=0, description="Share of its conversation's best candidate scores a candidate gains")
    session_top: int = Field(3, ge=1, description="How many of the conversation's best candidates count")
    date_boost: float = Field(
        3.0, ge=0, description="Score x (1 + date_boost) for memories said or dated within a time the query names"
    )
    # rescoring: final = rrf x importance x recency x confidence x access boost
    use_importance: bool = True
    use_confidence: bool = True
    importance_floor: float = Field(
        0.5, ge=0, le=1, description="Importance factor = floor + (1 - floor) x importance; 0 is the seed's raw product"
    )
    confidence_floor: float = Field(0.5, ge=0, le=1, description="Same for confidence")
    recency_half_life_days: float = Field(7.0, gt=0)
    recency_floor: float = Field(0.5, ge=0, le=1)
    # being returned by earlier searches is no evidence of relevance to this one: access counts
    # strengthen a memory against decay (lifecycle), not its rank, unless asked for
    access_boost: float = Field(0.0, ge=0, description="Rank boost per access, up to access_cap (0: none)")
    access_cap: int = Field(50, ge=0)
    profile_weight: float = Field(
        1.0,
        ge=0,
        description="Weight of the profile leg (standing facts: allergies, diets, preferences...) for questions "
        "asking for a recommendation or a decision; 0 turns it off",
    )
    profile_hard_bonus: float = Field(
        0.4,
        ge=0,
        le=1,
        description="Added to the cosine of allergies, diets, constraints and instructions in the profile leg",
    )
    profile_time_bonus: float = Field(
        0.4,
        ge=0,
        le=1,
        description="Added in the profile leg to the cosine of standing facts bearing on when things can happen "
        "(sleep, shifts, parts of the day) for a request whose answer is a time",
    )
    profile_margin: float = Field(
        0.2,
        ge=0,
        le=2,
        description="The profile leg keeps the standing facts whose cosine (with bonuses) is within this of the "
        "best cosine of the vector leg: a request that memories answer directly yields to them",
    )
    slot_boost: float = Field(
        1.0,
        ge=0,
        description="For a question about a single-valued fact (where someone lives or works...), the memories "
        "holding its current value weigh 1 + slot_boost",
    )
    outdated_factor: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Weight of a memory whose content a later statement superseded (the turn that said the old "
        "value), unless the question is about the past",
    )

    @classmethod
    def from_settings(cls, settings: DeepContextSettings) -> SearchConfig:
        return cls(
            vector_weight=settings.vector_weight,
            keyword_weight=settings.keyword_weight,
            graph_weight=settings.graph_weight,
            rrf_k=settings.rrf_k,
            graph_depth=settings.graph_depth,
            recency_half_life_days=settings.effective_recency_half_life_days,
            recency_floor=settings.recency_floor,
            importance_floor=settings.importance_floor,
            profile_weight=settings.profile_weight,
            profile_hard_bonus=settings.profile_hard_bonus,
            profile_time_bonus=settings.profile_time_bonus,
            profile_margin=settings.profile_margin,
            outdated_factor=settings.outdated_factor,
            slot_boost=settings.slot_boost,
        )


PRESETS: dict[str, SearchConfig] = {
    # the default fusion and rescoring
    "hybrid": SearchConfig(),
    # pure relevance: no importance / recency / access rescoring
    "relevance": SearchConfig(use_importance=False, use_confidence=False, recency_floor=1.0, access_boost=0.0),
    # one leg alone: only what that leg finds (no neighbour turns joining it)
    "vector": SearchConfig(keyword_weight=0.0, graph_weight=0.0, neighbour_turns=False),
    "keyword": SearchConfig(vector_weight=0.0, graph_weight=0.0, neighbour_turns=False),
    "graph": SearchConfig(vector_weight=0.0, keyword_weight=0.0, neighbour_turns=False),
}


def preset(name: str) -> SearchConfig:
    from deepcontext.errors import ValidationError

    try:
        return PRESETS[name]
    except KeyError:
        raise ValidationError(f"unknown search preset {name!r}; choose one of {sorted(PRESETS)}", field="preset") from None
