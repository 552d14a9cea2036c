"""Fusion and rescoring as small pure functions (tests call them directly)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from datetime import datetime

__all__ = ["access_factor", "recency_factor", "rescore", "rrf", "spread"]


def rrf(legs: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: int = 60) -> dict[int, float]:
    """Weighted Reciprocal Rank Fusion: score(d) = sum over legs of w_leg / (k + rank_leg(d)),
    ranks starting at 1. Legs with weight 0 contribute nothing."""
    scores: dict[int, float] = {}
    for leg, ids in legs.items():
        w = weights.get(leg, 0.0)
        if w <= 0:
            continue
        for rank, mid in enumerate(ids, start=1):
            scores[mid] = scores.get(mid, 0.0) + w / (k + rank)
    return scores


def recency_factor(when: datetime | None, now: datetime, half_life_days: float, floor: float) -> float:
    """floor + (1 - floor) * exp(-ln2 * age_days / half_life). floor=0 is the seed's pure curve.
    Future times count as age 0."""
    if when is None:
        return 1.0
    days = max(0.0, (now - when).total_seconds() / 86400.0)
    return floor + (1.0 - floor) * math.exp(-math.log(2) * days / half_life_days)


def access_factor(access_count: int, per_access: float = 0.01, cap: int = 50) -> float:
    return 1.0 + per_access * min(max(access_count, 0), cap)


def rescore(
    rrf_score: float,
    *,
    importance: float,
    confidence: float,
    recency: float,
    access: float,
    use_importance: bool = True,
    use_confidence: bool = True,
    importance_floor: float = 0.0,
    confidence_floor: float = 0.0,
) -> float:
    """The seed's final score: rrf x importance x recency x confidence x access boost.

    With floors, importance and confidence enter as ``floor + (1 - floor) x value``, so they
    reorder results of similar relevance without burying a much better match (floors of 0 give
    the seed's raw product)."""
    s = rrf_score * recency * access
    if use_importance:
        s *= importance_floor + (1.0 - importance_floor) * importance
    if use_confidence:
        s *= confidence_floor + (1.0 - confidence_floor) * confidence
    return max(0.0, s)


def spread(
    scores: Mapping[Hashable, float],
    turn_of: Mapping[Hashable, int],
    conversation_of: Mapping[Hashable, str],
    *,
    before: float = 0.0,
    after: float = 0.0,
    session: float = 0.0,
    session_top: int = 3,
) -> dict[Hashable, float]:
    """Relevance shared through the conversation: each candidate gains ``before`` x the score of the
    candidate from the turn just before its own (the question it answers) and ``after`` x that of
    the turn just after (the reply it got), in the same conversation, at most up to that neighbour's
    score (the better lent share counts), and ``session`` x the sum of the ``session_top`` best scores of its
    conversation (a conversation that matches in several places is about the question). Every
    candidate of a conversation gains the same session term, so it reorders across conversations
    only. Candidates missing from ``turn_of`` / ``conversation_of`` keep their score."""
    if before <= 0 and after <= 0 and session <= 0:
        return dict(scores)
    by_turn = {t: g for g, t in turn_of.items() if g in scores}
    context: dict[str, float] = {}
    if session > 0:
        per: dict[str, list[float]] = {}
        for g, s in scores.items():
            c = conversation_of.get(g)
            if c is not None:
                per.setdefault(c, []).append(s)
        context = {c: sum(sorted(v, reverse=True)[:session_top]) for c, v in per.items()}
    out: dict[Hashable, float] = {}
    for g, s in scores.items():
        conv = conversation_of.get(g)
        gain = session * context.get(conv, 0.0) if conv is not None else 0.0
        turn = turn_of.get(g)
        lifted = s
        if turn is not None and conv is not None:
            for t, w in ((turn - 1, before), (turn + 1, after)):
                n = by_turn.get(t) if w > 0 else None
                if n is not None and conversation_of.get(n) == conv:
                    # borrowed relevance lifts a turn up to its neighbour, never past it (exactly:
                    # a tie, not a rounding error above it)
                    lifted = max(lifted, min(s + w * scores[n], scores[n]))
        out[g] = lifted + gain
    return out
