"""DeepCQ.query(): inclusion, fallback, tiers, weights, phrases, anchors, recency, explanations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from deepcontext.clock import ManualClock
from deepcontext.errors import ValidationError
from deepcontext.query import DeepCQ, MemorySchema, Recency, exponential_decay, select_sections


def fill(cq: Any, sections: dict[str, str]) -> None:
    """Store ``{name: body}`` as ``[name]`` sections in the state tier."""
    for name, body in sections.items():
        cq.state.set(name, f"[{name}]\n{body}\n")


SECTIONS = {
    "status": "All services running",
    "errors": "- OOM at 02:15 on billing-worker\n- deploy of v2.14.3 failed health checks",
    "metrics": "CPU: 78%\nMemory: 4.2GB",
}


def make(**schema_kwargs: object) -> DeepCQ:
    cq = DeepCQ(MemorySchema(sections=list(SECTIONS), **schema_kwargs))  # type: ignore[arg-type]
    fill(cq, SECTIONS)
    return cq


def test_fallback_returns_everything_when_nothing_clears_the_threshold() -> None:
    cq = make()
    result = cq.query("hello there")
    assert result.fallback is True
    assert result.content == cq.state.as_text()
    assert result.sections_included == list(SECTIONS) and result.sections_excluded == []
    assert result.metrics.reduction_pct == 0.0


def test_without_fallback_nothing_is_returned() -> None:
    result = make(fallback_include_all=False).query("hello there")
    assert (result.content, result.sections_included, result.fallback) == ("", [], False)
    assert result.metrics.filtered_chars == 0 and result.metrics.reduction_pct == 100.0


def test_anchors_version_and_clock_time() -> None:
    cq = make()
    r = cq.query("what broke in v2.14.3?")
    assert r.sections_included == ["errors"]
    assert r.explanations["errors"].literal_hit and r.explanations["errors"].matched_anchors == ["v2.14.3"]
    r = cq.query("what happened at 02:15")
    assert r.sections_included == ["errors"] and r.explanations["errors"].matched_anchors == ["02:15"]


def test_keywords_and_tier_contributions() -> None:
    cq = DeepCQ(MemorySchema(sections=["db", "web"], keywords={"db": ["postgres", "database"]}))
    cq.state.set("db", "[db]\nreplica lag 3s\n")
    cq.state.set("web", "[web]\nnginx reload at noon\n")
    r = cq.query("postgres replica lag")
    assert r.sections_included == ["db"]
    assert r.explanations["db"].tier_contributions == {"schema": 0.3333, "state": 0.6667}


def test_tier_weights_discount_a_stale_tier() -> None:
    cq = DeepCQ(MemorySchema(sections=["deploys"], tier_weights={"notes": 0.5}, fallback_include_all=False))
    cq.notes.append("ops", "[deploys]\nrollback of release 41 on friday")
    r = cq.query("rollback friday")
    assert r.intent["deploys"] == 0.5
    assert r.explanations["deploys"].tier_contributions == {"notes": 0.5}
    assert r.sections_included == ["deploys"] and "rollback of release 41" in r.content


def test_phrase_matching_adds_a_bonus() -> None:
    plain = make(fallback_include_all=False).query("memory leak in billing worker cpu")
    phrased = make(phrase_sizes=(2,), fallback_include_all=False).query("memory leak in billing worker cpu")
    assert phrased.explanations["errors"].matched_phrases == ["bill worker"]
    assert phrased.intent["errors"] == round(plain.intent["errors"] + 0.25, 4)


def test_sections_come_from_every_structured_tier_in_order() -> None:
    cq = DeepCQ(MemorySchema(sections=["errors", "reference"], fallback_include_all=False))
    cq.state.set("errors", "- disk full on db-2")  # keyed by the section: no header needed
    cq.notes.append("incidents", "[errors]\n- disk full again on db-3")
    cq.reference.set("alert_threshold", "90%")
    r = cq.query("disk full")
    assert r.sections_included == ["errors"]
    assert r.content == "- disk full on db-2\n\n[errors]\n- disk full again on db-3"
    r = cq.query("alert threshold")
    assert r.sections_included == ["reference"] and r.content == "[reference]\nalert_threshold: 90%"


def test_entries_carry_scores_and_a_separate_threshold() -> None:
    cq = make(fallback_include_all=False, free_text_threshold=0.9)
    cq.history.add("user", "cpu is high again")
    cq.history.add("assistant", "cpu and memory both spiked at noon")
    r = cq.query("cpu memory")
    by_text = {e.text: e for e in r.entries}
    assert by_text["ASSISTANT: cpu and memory both spiked at noon"].included
    assert not by_text["USER: cpu is high again"].included
    assert by_text["USER: cpu is high again"].score == 0.5
    assert r.entries[0].tier == "history" and r.entries[0].explanation.matched_tokens == ["cpu"]


def test_a_relevant_history_turn_alone_prevents_the_fallback() -> None:
    cq = make()
    cq.history.add("user", "remember the wifi password is hunter2")
    r = cq.query("wifi password")
    assert not r.fallback and r.sections_included == []
    assert r.content == "USER: remember the wifi password is hunter2"


def test_recency_uses_the_clock_when_now_is_not_given() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    clock = ManualClock(start)
    cq = DeepCQ(MemorySchema(sections=list(SECTIONS)), clock=clock)
    fill(cq, SECTIONS)
    recency = {"metrics": Recency(start, exponential_decay(3600))}
    assert cq.query("cpu memory", recency=recency).intent["metrics"] == 1.0
    clock.advance(timedelta(hours=1))
    r = cq.query("cpu memory", recency=recency)
    assert r.intent["metrics"] == 0.5 and r.explanations["metrics"].recency_multiplier == 0.5
    assert cq.query("cpu memory", recency=recency, now=start.timestamp() + 7200).intent["metrics"] == 0.25


def test_changes_between_queries_are_seen() -> None:
    cq = make(fallback_include_all=False)
    assert cq.query("disk").sections_included == []
    cq.state.set("status", "[status]\ndisk almost full\n")
    assert cq.query("disk").sections_included == ["status"]
    cq.schema.sections = [*SECTIONS, "capacity"]
    cq.state.set("capacity", "[capacity]\nadd a disk next week\n")
    assert cq.query("disk").sections_included == ["status", "capacity"]


def test_query_must_be_a_string() -> None:
    with pytest.raises(ValidationError):
        make().query(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        DeepCQ(schema={"sections": ["a"]})  # type: ignore[arg-type]


def test_select_sections_for_the_context_builder() -> None:
    matches = select_sections("cpu spikes", {"metrics": "CPU: 78%", "people": "Anna likes tea"}, threshold=0.5)
    assert [(m.name, m.included) for m in matches] == [("metrics", True), ("people", False)]
    assert matches[0].score == 0.5 and matches[0].explanation.matched_tokens == ["cpu"]
    assert matches[0].text == "CPU: 78%"
    with pytest.raises(ValidationError):
        select_sections("x", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_score_sections_detailed_takes_plain_tier_texts() -> None:
    from deepcontext.query import score_sections, score_sections_detailed

    schema = MemorySchema(sections=["errors", "metrics"])
    texts = {
        "state": "[errors]\ndisk full\n[metrics]\ncpu 80%",
        "notes": "[notes:ops]\n[errors]\nbackup failed\n[notes:people]\ndisk jockey Anna",
        "history": "",
    }
    detailed = score_sections_detailed("backup disk", schema, texts)
    assert detailed["errors"].score == 1.0 and detailed["errors"].tier_contributions == {"state": 0.5, "notes": 0.5}
    assert detailed["metrics"].score == 0.0  # "disk jockey" is in another note, not in a section
    assert score_sections("backup disk", schema, texts) == {"errors": 1.0, "metrics": 0.0}
