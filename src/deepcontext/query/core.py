"""DeepCQ: five memory tiers queried by intent.

``query()`` scores each schema section against the query over all five tiers and returns the
sections that clear the threshold, plus the cache entries and history turns that are relevant on
their own. A turn is scored with the turn before it, so the answer to a relevant question comes
along. When nothing clears the thresholds and ``fallback_include_all`` is on, the full text is
returned.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from deepcontext.clock import Clock
from deepcontext.errors import ValidationError
from deepcontext.query.intent import Source, plan_for, schema_source, score_groups
from deepcontext.query.plan import content_pattern_string
from deepcontext.query.recency import Recency
from deepcontext.query.result import EntryMatch, OptimizationMetrics, QueryResult, ScoreExplanation
from deepcontext.query.schema import MemorySchema
from deepcontext.query.tiers import AppState, History, LongTermStore, ReferenceData, SessionCache, TierBackend
from deepcontext.query.tiers.tier import Tier

__all__ = ["DeepCQ"]

_STRUCTURED = ("state", "notes", "reference")
_FREE_TEXT = ("cache", "history")


class DeepCQ:
    """Deep Context Query: manages five memory tiers and filters them by the query's intent.

    ::

        cq = DeepCQ(schema=MemorySchema(sections=["status", "errors", "metrics"]))
        cq.state.set("metrics", "[metrics]\\nCPU: 78%\\nMemory: 4.2GB\\n")
        result = cq.query("any memory or cpu spikes?")

    ``store_path`` / ``reference_path`` keep the notes / reference tiers in JSON files, written
    atomically. ``backend`` keeps every tier in a :class:`TierBackend` under ``namespace_prefix + tier``
    namespaces (default: in memory). ``clock`` gives the time for recency when ``now`` is not passed.
    """

    def __init__(
        self,
        schema: MemorySchema,
        store_path: str | Path | None = None,
        reference_path: str | Path | None = None,
        *,
        backend: TierBackend | None = None,
        namespace_prefix: str = "",
        cache_size: int = 30,
        history_turns: int = 6,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(schema, MemorySchema):
            raise ValidationError("schema must be a MemorySchema", field="schema")
        self.schema = schema
        self.clock = clock

        def ns(tier: str) -> str:
            return f"{namespace_prefix}{tier}"

        self.state = AppState(backend, ns("state"))
        self.cache = SessionCache(cache_size, backend=backend, namespace=ns("cache"))
        self.history = History(history_turns, backend=backend, namespace=ns("history"))
        self.notes = LongTermStore(store_path, backend=None if store_path is not None else backend, namespace=ns("notes"))
        self.reference = ReferenceData(
            reference_path, backend=None if reference_path is not None else backend, namespace=ns("reference")
        )
        self._split_cache: dict[str, tuple[tuple[object, ...], dict[str, list[str]]]] = {}

    def tiers(self) -> dict[str, Tier]:
        """The five tiers by name, in query order."""
        return {
            "state": self.state,
            "cache": self.cache,
            "history": self.history,
            "notes": self.notes,
            "reference": self.reference,
        }

    def _sections_of(self, tier_name: str, tier: Tier) -> dict[str, list[str]]:
        """Section blocks of a tier, cached until the tier, the state keys or the schema change."""
        key = (tier.version, self.state.version, self.schema.schema_id())
        cached = self._split_cache.get(tier_name)
        if cached is not None and cached[0] == key:
            return cached[1]
        extra = self.state.sections()
        out: dict[str, list[str]] = {}
        for entry_key, text in tier.entries():
            default = entry_key if tier_name == "state" else None
            for section, blocks in self.schema.split_sections(text, extra, default_section=default).items():
                out.setdefault(section, []).extend(blocks)
        self._split_cache[tier_name] = (key, out)
        return out

    def query(
        self,
        query: str,
        recency: Mapping[str, Recency] | None = None,
        now: float | datetime | None = None,
    ) -> QueryResult:
        """Query all tiers and return only the content relevant to ``query``.

        ``recency`` maps a section name to a :class:`Recency` that time-weights its score;
        ``now`` pins the reference time (default: the clock's, else the system time).
        """
        schema = self.schema
        plan = plan_for(query, schema)
        tiers = self.tiers()
        tier_texts = {name: tier.as_text() for name, tier in tiers.items()}
        full_text = "\n".join(v for v in tier_texts.values() if v)
        original_chars = len(full_text)
        weights = schema.tier_weights or {}

        per_tier = {name: self._sections_of(name, tier) for name, tier in tiers.items()}
        groups: dict[str, list[Source]] = {}
        for section in schema.sections:
            sources = [schema_source(section, schema)]
            for tier_name in tiers:
                blocks = per_tier[tier_name].get(section)
                if blocks:
                    sources.append(Source(tier_name, weights.get(tier_name, 1.0), "\n".join(blocks)))
            groups[section] = sources
        entry_ids: list[tuple[str, str, str, str]] = []  # group id, tier, key, rendered text
        entry_groups: dict[str, list[Source]] = {}
        for tier_name in _FREE_TEXT:
            tier = tiers[tier_name]
            raw = self._raw_entries(tier_name)
            for (key, rendered), body in zip(tier.entries(), raw, strict=True):
                gid = f"{tier_name}:{key}"
                entry_ids.append((gid, tier_name, key, rendered))
                entry_groups[gid] = [Source(tier_name, weights.get(tier_name, 1.0), body)]

        scored = score_groups(plan, groups, schema, recency=recency, now=now, clock=self.clock)
        if entry_groups:
            scored_entries = score_groups(plan, entry_groups, schema, now=now, clock=self.clock)
        else:
            scored_entries = {}
        explanations: dict[str, ScoreExplanation] = {s: scored[s] for s in schema.sections}
        intent = {s: e.score for s, e in explanations.items()}
        threshold = schema.confidence_threshold
        ft_threshold = schema.free_text_threshold if schema.free_text_threshold is not None else threshold
        included = [s for s in schema.sections if intent[s] >= threshold]
        excluded = [s for s in schema.sections if intent[s] < threshold]
        entries = [
            EntryMatch(
                tier,
                key,
                rendered,
                scored_entries[gid].score,
                scored_entries[gid].score >= ft_threshold,
                scored_entries[gid],
            )
            for gid, tier, key, rendered in entry_ids
        ]
        pattern = content_pattern_string(query)

        if not included and not any(e.included for e in entries) and schema.fallback_include_all:
            for e in entries:
                e.included = True
            return QueryResult(
                content=full_text,
                intent=intent,
                sections_included=list(schema.sections),
                sections_excluded=[],
                content_pattern=pattern,
                metrics=OptimizationMetrics(original_chars, original_chars, 0.0),
                explanations=explanations,
                entries=entries,
                fallback=True,
            )

        parts: list[str] = []
        for section in included:
            for tier_name in _STRUCTURED:
                parts.extend(per_tier[tier_name].get(section, []))
        parts.extend(e.text.strip() for e in entries if e.included)
        content = "\n\n".join(p for p in parts if p)
        filtered = len(content)
        reduction = round((1.0 - filtered / original_chars) * 100, 1) if original_chars else 0.0
        return QueryResult(
            content=content,
            intent=intent,
            sections_included=included,
            sections_excluded=excluded,
            content_pattern=pattern,
            metrics=OptimizationMetrics(original_chars, filtered, reduction),
            explanations=explanations,
            entries=entries,
            fallback=False,
        )

    def _raw_entries(self, tier_name: str) -> list[str]:
        """What a free-text entry is scored on: a cache entry's key and value; a history turn's
        text together with the turn before it (a reply is read with the message it answers)."""
        if tier_name == "cache":
            return [f"{k}\n{v}" for k, v in self.cache.items()]
        turns = self.history.turns()
        return [(f"{turns[i - 1].text}\n" if i else "") + t.text for i, t in enumerate(turns)]

    def __repr__(self) -> str:
        return f"DeepCQ(sections={list(self.schema.sections)!r})"
