"""Optional semantic blending (deterministic HashEmbedder: no model needed)."""

from __future__ import annotations

import pytest

from deepcontext.embed.hashing import HashEmbedder
from deepcontext.errors import ValidationError
from deepcontext.query import DeepCQ, MemorySchema, SemanticScoring, select_sections
from deepcontext.query.semantic import split_pieces

SECTIONS = {
    "database": "postgresql replica lag 3s on the standby",
    "weather": "sunny in Lisbon, light wind",
}


def _cq(semantic: SemanticScoring | None) -> DeepCQ:
    cq = DeepCQ(MemorySchema(sections=list(SECTIONS), semantic=semantic, fallback_include_all=False))
    for name, body in SECTIONS.items():
        cq.state.set(name, f"[{name}]\n{body}\n")
    return cq


def test_off_by_default() -> None:
    assert MemorySchema(sections=["a"]).semantic is None
    r = _cq(None).query("postgres")
    assert r.sections_included == [] and r.explanations["database"].semantic_score is None


def test_similarity_lifts_a_section_without_shared_words() -> None:
    sem = SemanticScoring(HashEmbedder(256), floor=0.0)  # hashed features give low cosines
    r = _cq(sem).query("postgres")  # shares no stem with "postgresql", but most of its character trigrams
    exp = r.explanations["database"]
    assert exp.lexical_score == 0.0 and exp.semantic_score == 1.0
    assert r.sections_included == ["database"] and exp.score == pytest.approx(sem.weight)
    assert r.explanations["weather"].semantic_score < 1.0


def test_blend_and_relative_scores() -> None:
    sem = SemanticScoring(HashEmbedder(64), weight=0.5, floor=0.1)
    assert sem.blend(1.0, 0.0) == 0.5 and sem.blend(0.2, 1.0) == 0.6
    assert sem.relative([0.6, 0.35, 0.05]) == [1.0, 0.5, 0.0]
    assert sem.relative([0.05, 0.01]) == [0.0, 0.0]  # nothing above the floor
    assert sem.relative([]) == []


def test_select_sections_uses_the_schema_settings() -> None:
    schema = MemorySchema(sections=["x"], semantic=SemanticScoring(HashEmbedder(256), floor=0.0))
    matches = select_sections("postgres", SECTIONS, schema=schema)
    assert [m.name for m in matches if m.included] == ["database"]


def test_pieces() -> None:
    text = "line one\nline two\n\n" + "word " * 100
    pieces = split_pieces(text, 60)
    assert pieces[0] == "line one line two"
    assert all(len(p) <= 60 for p in pieces) and len(pieces) > 2


@pytest.mark.parametrize(
    "kwargs", [{"embedder": "minilm"}, {"weight": 1.5}, {"floor": 1.0}, {"max_piece_chars": 5}, {"weight": "high"}]
)
def test_invalid_settings(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"embedder": HashEmbedder(32), **kwargs}
    with pytest.raises(ValidationError):
        SemanticScoring(**args)  # type: ignore[arg-type]
