"""The deepcq README examples, unchanged except the import line, and the API names and defaults."""

from __future__ import annotations

import inspect

import pytest

# --- example 1: "Core idea" -------------------------------------------------------------------


def test_core_idea_example_returns_only_the_metrics_section() -> None:
    from deepcontext.query import DeepCQ, MemorySchema

    schema = MemorySchema(sections=["status", "errors", "metrics"])
    cq = DeepCQ(schema=schema)

    cq.state.set("errors", "[errors]\n- OOM at 02:15\n")
    cq.state.set("metrics", "[metrics]\nCPU: 78%\nMemory: 4.2GB\n")
    cq.state.set("status", "[status]\nAll services running\n")

    result = cq.query("any memory or cpu spikes?")
    assert result.content == "[metrics]\nCPU: 78%\nMemory: 4.2GB"  # only the metrics section
    assert result.sections_included == ["metrics"]
    assert f"{result.metrics.reduction_pct:.1f}% smaller" == "64.0% smaller"
    assert result.sections_excluded == ["status", "errors"]
    assert set(result.intent) == {"status", "errors", "metrics"}
    assert result.explanations["metrics"].matched_tokens == ["cpu", "memory"]


# --- example 2: locate() ----------------------------------------------------------------------


def test_locate_example_finds_the_rate_limiting_chunk() -> None:
    from deepcontext.query import locate

    doc = (
        "The authentication service validates tokens on every request.\n\n"
        "Rate limiting is enforced per API key using a sliding window counter.\n\n"
        "The database migration tool applies schema changes in order."
    )

    found = list(locate(doc, "how does rate limiting work?"))
    assert [(c.index, c.text) for c in found] == [(1, "Rate limiting is enforced per API key using a sliding window counter.")]
    assert found[0].score >= 0.3
    assert found[0].text in doc  # verbatim


# --- example 3: integrations ------------------------------------------------------------------


def test_tool_context_provider_example_runs() -> None:
    from deepcontext.query import DeepCQ, MemorySchema
    from deepcontext.query.integrations import ToolContextProvider

    cq = DeepCQ(schema=MemorySchema(sections=["research", "risk-management"]))
    provider = ToolContextProvider(cq)
    context = provider.get_context("what is my portfolio concentration risk?")
    assert context == ""  # empty memory, nothing to return

    cq.state.set("risk-management", "[risk-management]\nConcentration: 35% in one name, above the 25% limit\n")
    cq.state.set("research", "[research]\nReading list: three papers on retrieval\n")
    context = provider.get_context("what is my portfolio concentration risk?")
    assert "Concentration: 35%" in context and "Reading list" not in context


# --- example 4: synonym vocabularies (0.3.0 README) --------------------------------------------


def test_synonym_example_matches_eps_with_earnings_per_share() -> None:
    from deepcontext.query import DeepCQ, MemorySchema, SynonymMap, load_pack

    vocab = load_pack("finance") | SynonymMap.from_dict({"arr": ["annual recurring revenue"]})
    schema = MemorySchema(sections=["fundamentals", "news"], vocabulary=vocab)
    cq = DeepCQ(schema)
    cq.state.set("fundamentals", "[fundamentals]\nEarnings per share rose to 4.10; annual recurring revenue 12m\n")
    cq.state.set("news", "[news]\nCEO interview on Tuesday\n")
    assert cq.query("eps?").sections_included == ["fundamentals"]
    assert cq.query("what is our ARR").sections_included == ["fundamentals"]


# --- example 5: calibration (0.3.0 README) -----------------------------------------------------


def test_calibration_example_sets_a_threshold() -> None:
    from deepcontext.query import DeepCQ, LabeledExample, MemorySchema, calibrate

    schema = MemorySchema(sections=["metrics", "errors"])

    def build():  # one populated DeepCQ per case
        cq = DeepCQ(schema)
        cq.state.set("metrics", "[metrics]\nCPU: 78%\n")
        cq.state.set("errors", "[errors]\n- disk full on db-2\n")
        return cq

    report = calibrate([LabeledExample(build, "cpu load?", {"metrics"}), LabeledExample(build, "disk errors", {"errors"})])
    assert "threshold | precision | recall" in report.summary()
    schema.confidence_threshold = report.best.threshold
    assert report.best.f1 == 1.0


# --- names and defaults ------------------------------------------------------------------------

PUBLIC = [
    "DeepCQ", "MemorySchema", "QueryResult", "OptimizationMetrics", "AppState", "SessionCache", "History",
    "LongTermStore", "ReferenceData", "locate", "Candidate", "ScoreExplanation", "Recency", "no_decay",
    "exponential_decay", "linear_decay", "SynonymMap", "load_pack", "LabeledExample", "ThresholdStats",
    "CalibrationReport", "calibrate", "TIER_NAMES",
]  # fmt: skip


def test_every_deepcq_name_is_exported() -> None:
    import deepcontext.query as q

    for name in [*PUBLIC, "available_packs", "ToolContextProvider", "LangChainMemoryAdapter", "PromptLibrary"]:
        assert getattr(q, name) is not None
        assert name in q.__all__
    assert q.TIER_NAMES == ("state", "cache", "history", "notes", "reference")


def test_signatures_and_defaults() -> None:
    from deepcontext.query import DeepCQ, MemorySchema, QueryResult, locate

    schema = MemorySchema(sections=["a"])
    assert (schema.keywords, schema.section_header_format, schema.confidence_threshold) == ({}, "[{name}]", 0.3)
    assert (schema.fallback_include_all, schema.anchor_patterns, schema.vocabulary) == (True, None, None)
    assert (schema.phrase_sizes, schema.phrase_boost, schema.tier_weights, schema.schema_weight) == (
        (),
        0.25,
        None,
        1.0,
    )
    params = inspect.signature(locate).parameters
    assert [p for p in params][:8] == [
        "text", "query", "chunk_on", "confidence_threshold", "max_candidates", "anchor_patterns", "recency", "now"
    ]  # fmt: skip
    assert (params["chunk_on"].default, params["confidence_threshold"].default) == ("\n\n", 0.3)
    assert list(inspect.signature(DeepCQ).parameters)[:3] == ["schema", "store_path", "reference_path"]
    assert list(inspect.signature(DeepCQ.query).parameters) == ["self", "query", "recency", "now"]
    fields = list(QueryResult.__dataclass_fields__)
    assert fields[:7] == [
        "content", "intent", "sections_included", "sections_excluded", "content_pattern", "metrics", "explanations"
    ]  # fmt: skip
    cq = DeepCQ(schema)
    assert cq.cache.max_entries == 30 and cq.history.max_turns == 6


def test_same_parameters_as_deepcq_when_installed() -> None:
    deepcq = pytest.importorskip("deepcq")
    import deepcontext.query as q

    for name in ("locate", "calibrate", "exponential_decay", "linear_decay", "load_pack"):
        theirs = list(inspect.signature(getattr(deepcq, name)).parameters)
        ours = list(inspect.signature(getattr(q, name)).parameters)
        assert ours[: len(theirs)] == theirs, name
    theirs_fields = list(deepcq.MemorySchema.__dataclass_fields__)
    assert list(q.MemorySchema.__dataclass_fields__)[: len(theirs_fields)] == theirs_fields
    for cls in ("QueryResult", "ScoreExplanation", "OptimizationMetrics", "Candidate", "ThresholdStats"):
        theirs_fields = list(getattr(deepcq, cls).__dataclass_fields__)
        assert list(getattr(q, cls).__dataclass_fields__)[: len(theirs_fields)] == theirs_fields, cls
