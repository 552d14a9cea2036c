"""Section relevance: how much of the query each section's vocabulary covers (deepcq's ``intent.py``).

A section's *sources* are its name and keywords (source ``"schema"``) and its text in each tier.
For every query term, the best weight among the sources that contain it is its credit (a CJK run
earns the share of its bigrams found); the token score is the mean credit over the query's
terms. Phrase matches add a bonus, literal anchors found verbatim raise the score to their
source's weight, optional embedding similarity is blended in, and recency multiplies last.

:func:`select_sections` is the entry point for callers that already have their sections as
``{name: text}`` (the context builder); :func:`score_sections_detailed` keeps deepcq's signature.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from deepcontext.clock import Clock
from deepcontext.errors import ValidationError
from deepcontext.query.matcher import UnitIndex
from deepcontext.query.plan import QueryPlan, plan_query
from deepcontext.query.recency import Recency, current_time
from deepcontext.query.result import ScoreExplanation, SectionMatch
from deepcontext.query.schema import MemorySchema

__all__ = [
    "SCHEMA_SOURCE",
    "Source",
    "plan_for",
    "schema_source",
    "score_groups",
    "score_sections",
    "score_sections_detailed",
    "select_sections",
    "split_tier_sections",
]

SCHEMA_SOURCE = "schema"  # tier_contributions key for name/keyword matches


@dataclass(frozen=True, slots=True)
class Source:
    """One place a section's vocabulary comes from."""

    name: str
    weight: float
    text: str


def plan_for(query: str, schema: MemorySchema) -> QueryPlan:
    """The query plan under a schema's vocabulary, phrase sizes and anchor patterns."""
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string, got {type(query).__name__}", field="query")
    return plan_query(
        query, vocabulary=schema.vocabulary, phrase_sizes=schema.phrase_sizes, anchor_patterns=schema.anchor_patterns
    )


def score_groups(
    plan: QueryPlan,
    groups: Mapping[str, Sequence[Source]],
    schema: MemorySchema,
    *,
    recency: Mapping[str, Recency] | None = None,
    now: float | datetime | None = None,
    clock: Clock | None = None,
) -> dict[str, ScoreExplanation]:
    """Score each group (a section, an entry) of sources against a query plan."""
    names = list(groups)
    sources: list[Source] = []
    owner: list[int] = []
    for gi, name in enumerate(names):
        for src in groups[name]:
            sources.append(src)
            owner.append(gi)
    index = UnitIndex([s.text for s in sources])
    found = {p: index.find(p) for p in plan.patterns()}
    anchor_units = {a: index.find_verbatim(a) for a in plan.anchors}
    units_of: list[list[int]] = [[] for _ in names]
    for u, gi in enumerate(owner):
        units_of[gi].append(u)

    semantic = schema.semantic
    sims: list[float] | None = None
    if semantic is not None and plan.query.strip() and (semantic.cjk_queries or not plan.has_cjk):
        sims = semantic.scores(plan.query, [[sources[u].text for u in units] for units in units_of])
    moment = current_time(now, clock) if recency else 0.0

    n_terms = len(plan.terms)
    out: dict[str, ScoreExplanation] = {}
    for gi, name in enumerate(names):
        units = units_of[gi]
        total = 0.0
        contributions: dict[str, float] = {}
        matched: list[str] = []
        for term in plan.terms:
            share = 1.0 / len(term.components)
            credit = 0.0
            for comp in term.components:
                best_w, best_src = 0.0, ""
                for u in units:
                    w = min(1.0, sources[u].weight)
                    if w > best_w and any(u in found[p] for p in comp):
                        best_w, best_src = w, sources[u].name
                if best_w > 0:
                    credit += best_w * share
                    contributions[best_src] = contributions.get(best_src, 0.0) + best_w * share
            if credit > 0:
                matched.append(term.surface)
                total += credit
        token_score = round(total / n_terms, 4) if n_terms else 0.0
        lexical = token_score

        matched_phrases: list[str] = []
        if plan.phrases:
            bonus_weights = 0.0
            for label, pat in plan.phrases:
                ws = [min(1.0, sources[u].weight) for u in units if u in found[pat]]
                if ws and max(ws) > 0:
                    matched_phrases.append(label)
                    bonus_weights += max(ws)
            bonus = min(1.0, schema.phrase_boost * bonus_weights)
            if bonus > 0:
                lexical = round(min(1.0, lexical + bonus), 4)

        score = lexical
        semantic_score = None
        if sims is not None and semantic is not None:
            semantic_score = sims[gi]
            score = round(semantic.blend(lexical, semantic_score), 4)

        matched_anchors: list[str] = []
        anchor_weight = 0.0
        for anchor in plan.anchors:
            ws = [min(1.0, sources[u].weight) for u in units if sources[u].name != SCHEMA_SOURCE and u in anchor_units[anchor]]
            if ws:
                matched_anchors.append(anchor)
                anchor_weight = max(anchor_weight, *ws)
        if matched_anchors:
            score = max(score, anchor_weight)

        multiplier = 1.0
        if recency and name in recency:
            multiplier = recency[name].multiplier(moment)
            score = round(score * multiplier, 4)

        out[name] = ScoreExplanation(
            score=round(score, 4),
            matched_tokens=sorted(matched),
            matched_anchors=matched_anchors,
            literal_hit=bool(matched_anchors),
            matched_phrases=sorted(matched_phrases),
            tier_contributions={k: round(v / n_terms, 4) for k, v in contributions.items() if v > 0} if n_terms else {},
            lexical_score=lexical,
            semantic_score=semantic_score,
            recency_multiplier=round(multiplier, 6),
        )
    return out


def schema_source(section: str, schema: MemorySchema) -> Source:
    """The source made of a section's name and declared keywords."""
    text = "\n".join([section, *schema.keywords.get(section, [])])
    return Source(SCHEMA_SOURCE, schema.schema_weight, text)


def split_tier_sections(
    schema: MemorySchema,
    tier_texts: Mapping[str, str | Sequence[str] | Sequence[tuple[str | None, str]]],
    extra_names: Sequence[str] = (),
) -> dict[str, dict[str, list[str]]]:
    """``{section: {tier: [blocks]}}`` cut out of each tier's text.

    A tier is given as one string, as a list of strings (its entries: a section never runs from
    one entry into the next), or as a list of ``(key, text)`` entries, where an entry keyed by a
    section's name needs no header line.
    """
    out: dict[str, dict[str, list[str]]] = {s: {} for s in schema.sections}
    for tier, value in tier_texts.items():
        if not value:
            continue
        entries: list[tuple[str | None, str]]
        if isinstance(value, str):
            entries = [(None, value)]
        else:
            entries = [(e[0], e[1]) if isinstance(e, tuple) else (None, e) for e in value]
        for key, text in entries:
            if not text:
                continue
            for section, blocks in schema.split_sections(text, extra_names, default_section=key).items():
                out[section].setdefault(tier, []).extend(blocks)
    return out


def score_sections_detailed(
    query: str,
    schema: MemorySchema,
    tier_texts: Mapping[str, str | Sequence[str] | Sequence[tuple[str | None, str]]],
    recency: Mapping[str, Recency] | None = None,
    now: float | datetime | None = None,
    tiers: object = None,
    *,
    clock: Clock | None = None,
    extra_names: Sequence[str] = (),
) -> dict[str, ScoreExplanation]:
    """Score every schema section for ``query`` with an explanation (deepcq's signature;
    ``tiers`` is accepted for compatibility and unused: no per-tier cache is needed)."""
    plan = plan_for(query, schema)
    weights = schema.tier_weights or {}
    blocks = split_tier_sections(schema, tier_texts, extra_names)
    groups = {
        section: [
            schema_source(section, schema),
            *(Source(tier, weights.get(tier, 1.0), "\n".join(texts)) for tier, texts in blocks[section].items()),
        ]
        for section in schema.sections
    }
    return score_groups(plan, groups, schema, recency=recency, now=now, clock=clock)


def score_sections(
    query: str,
    schema: MemorySchema,
    tier_texts: Mapping[str, str | Sequence[str]],
    recency: Mapping[str, Recency] | None = None,
    now: float | datetime | None = None,
) -> dict[str, float]:
    """Scores only (see :func:`score_sections_detailed`)."""
    detailed = score_sections_detailed(query, schema, tier_texts, recency=recency, now=now)
    return {section: e.score for section, e in detailed.items()}


def select_sections(
    query: str,
    sections: Mapping[str, str],
    *,
    schema: MemorySchema | None = None,
    threshold: float | None = None,
    keywords: Mapping[str, list[str]] | None = None,
    recency: Mapping[str, Recency] | None = None,
    now: float | datetime | None = None,
    clock: Clock | None = None,
) -> list[SectionMatch]:
    """Score named section texts for ``query``; one :class:`SectionMatch` per section, in order.

    ``sections`` maps a name to its text (no header line needed). Settings (vocabulary, phrases,
    semantic blending, anchor patterns, weights) come from ``schema`` when given; its sections
    need not list these names. ``threshold`` defaults to the schema's ``confidence_threshold``.
    A match is ``included`` when its score reaches the threshold; nothing falls back.
    """
    if not isinstance(sections, Mapping):
        raise ValidationError("sections must be a mapping {name: text}", field="sections")
    names = list(sections)
    base = schema or MemorySchema(sections=names or ["_"])
    settings = MemorySchema(
        sections=names or ["_"],
        keywords={k: list(v) for k, v in (keywords or {}).items() if k in sections},
        section_header_format=base.section_header_format,
        confidence_threshold=base.confidence_threshold if threshold is None else threshold,
        anchor_patterns=base.anchor_patterns,
        vocabulary=base.vocabulary,
        phrase_sizes=base.phrase_sizes,
        phrase_boost=base.phrase_boost,
        schema_weight=base.schema_weight,
        semantic=base.semantic,
    )
    plan = plan_for(query, settings)
    groups = {name: [schema_source(name, settings), Source("text", 1.0, text)] for name, text in sections.items()}
    scored = score_groups(plan, groups, settings, recency=recency, now=now, clock=clock)
    t = settings.confidence_threshold
    return [
        SectionMatch(name=n, text=sections[n], score=scored[n].score, included=scored[n].score >= t, explanation=scored[n])
        for n in names
    ]
