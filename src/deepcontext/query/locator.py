"""Find the chunks of a text blob that answer a query (deepcq's ``locate()``).

The chunks are searched together by a :class:`~deepcontext.query.matcher.UnitIndex`, so the work
grows with the size of the text times the number of query terms, and only chunks that contain
something are scored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from deepcontext.clock import Clock
from deepcontext.errors import ValidationError
from deepcontext.query.matcher import UnitIndex
from deepcontext.query.plan import plan_query
from deepcontext.query.recency import Recency, current_time

__all__ = ["Candidate", "LocateStats", "locate", "locate_with_stats"]


@dataclass
class Candidate:
    """A chunk at or above the threshold; ``text`` is the chunk exactly as in the input
    (stripped of surrounding whitespace), ``index`` its position among the non-empty chunks."""

    index: int
    text: str
    score: float
    matched_tokens: list[str] = field(default_factory=list)
    matched_anchors: list[str] = field(default_factory=list)
    literal_hit: bool = False


@dataclass
class LocateStats:
    """Work done by one ``locate()`` call (counts, not time: they grow linearly with the text)."""

    chunks: int = 0
    chars: int = 0
    needle_passes: int = 0
    candidates: int = 0
    words_checked: int = 0
    chunks_scored: int = 0


def _validate(text: object, query: object, chunk_on: object, threshold: object, max_candidates: object) -> None:
    if not isinstance(text, str):
        raise ValidationError(f"text must be a string, got {type(text).__name__}", field="text")
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string, got {type(query).__name__}", field="query")
    if not isinstance(chunk_on, str) or not chunk_on:
        raise ValidationError("chunk_on must be a non-empty string", field="chunk_on")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise ValidationError("confidence_threshold must be a number", field="confidence_threshold")
    if max_candidates is not None and (
        isinstance(max_candidates, bool) or not isinstance(max_candidates, int) or max_candidates < 0
    ):
        raise ValidationError("max_candidates must be None or an integer >= 0", field="max_candidates")


def locate_with_stats(
    text: str,
    query: str,
    chunk_on: str = "\n\n",
    confidence_threshold: float = 0.3,
    max_candidates: int | None = None,
    anchor_patterns: Sequence[re.Pattern[str]] | None = None,
    recency: Mapping[int, Recency] | None = None,
    now: float | datetime | None = None,
    *,
    clock: Clock | None = None,
) -> tuple[list[Candidate], LocateStats]:
    """:func:`locate` plus the work it did."""
    _validate(text, query, chunk_on, confidence_threshold, max_candidates)
    chunks = [c for c in (p.strip() for p in text.split(chunk_on)) if c]
    stats = LocateStats(chunks=len(chunks))
    if not chunks:
        return [], stats
    plan = plan_query(query, anchor_patterns=anchor_patterns)
    index = UnitIndex(chunks)

    credit: dict[int, float] = {}
    matched: dict[int, list[str]] = {}
    for term in plan.terms:
        share = 1.0 / len(term.components)
        term_hits: set[int] = set()
        for comp in term.components:
            hits: set[int] = set()
            for p in comp:
                hits |= index.find(p)
            for c in hits:
                credit[c] = credit.get(c, 0.0) + share
            term_hits |= hits
        for c in term_hits:
            matched.setdefault(c, []).append(term.surface)
    anchors: dict[int, list[str]] = {}
    for a in plan.anchors:
        for c in index.find_verbatim(a):
            anchors.setdefault(c, []).append(a)

    n_terms = len(plan.terms)
    moment = current_time(now, clock) if recency else 0.0
    scope = range(len(chunks)) if confidence_threshold <= 0 else sorted(set(credit) | set(anchors))
    out: list[Candidate] = []
    for c in scope:
        score = round(credit.get(c, 0.0) / n_terms, 4) if n_terms else 0.0
        literal = c in anchors
        if literal:
            score = 1.0
        if recency and c in recency:
            score = round(score * recency[c].multiplier(moment), 4)
        if score >= confidence_threshold:
            out.append(
                Candidate(
                    index=c,
                    text=chunks[c],
                    score=score,
                    matched_tokens=sorted(matched.get(c, [])),
                    matched_anchors=anchors.get(c, []),
                    literal_hit=literal,
                )
            )
    stats.chunks_scored = len(scope)
    if max_candidates is not None and len(out) > max_candidates:
        out = sorted(out, key=lambda cand: -cand.score)[:max_candidates]
        out.sort(key=lambda cand: cand.index)
    s = index.stats
    stats.chars, stats.needle_passes, stats.candidates, stats.words_checked = (
        s.chars,
        s.needle_passes,
        s.candidates,
        s.words_checked,
    )
    return out, stats


def locate(
    text: str,
    query: str,
    chunk_on: str = "\n\n",
    confidence_threshold: float = 0.3,
    max_candidates: int | None = None,
    anchor_patterns: Sequence[re.Pattern[str]] | None = None,
    recency: Mapping[int, Recency] | None = None,
    now: float | datetime | None = None,
    *,
    clock: Clock | None = None,
) -> list[Candidate]:
    """Chunks of ``text`` (split on ``chunk_on``) relevant to ``query``, in text order.

    A chunk's score is the share of the query's terms it contains (stems compared, CJK by
    bigrams); a literal anchor of the query found verbatim raises it to 1.0; ``recency`` maps a
    chunk *index* to a :class:`Recency` that multiplies it. Chunks at or above
    ``confidence_threshold`` are returned; ``max_candidates`` keeps the best-scoring ones.
    """
    found, _ = locate_with_stats(
        text, query, chunk_on, confidence_threshold, max_candidates, anchor_patterns, recency, now, clock=clock
    )
    return found
