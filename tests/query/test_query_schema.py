"""MemorySchema: validation, section extraction, header formats."""

from __future__ import annotations

import pytest

from deepcontext.errors import ValidationError
from deepcontext.query import MemorySchema
from deepcontext.query.schema import UnknownSectionError

TEXT = (
    "[status]\nall good\n"
    "[errors]\n- OOM at 02:15\n[docs](https://example.com) explains it\n[x] paged on-call\nroot cause: leak\n"
    "[metrics]\nCPU: 78%\n"
)


def test_extraction_pattern_runs_to_the_next_schema_header() -> None:
    schema = MemorySchema(sections=["status", "errors", "metrics"])
    m = schema.extraction_pattern("errors").search(TEXT)
    assert m is not None
    assert (
        m.group(0).rstrip()
        == "[errors]\n- OOM at 02:15\n[docs](https://example.com) explains it\n[x] paged on-call\nroot cause: leak"
    )
    last = schema.extraction_pattern("metrics").search(TEXT)
    assert last is not None and last.group(0) == "[metrics]\nCPU: 78%\n"


def test_extraction_pattern_of_an_unknown_section() -> None:
    schema = MemorySchema(sections=["a"])
    with pytest.raises(UnknownSectionError) as err:
        schema.extraction_pattern("b")
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValidationError)
    assert str(err.value) == "unknown section 'b'"


def test_split_sections_ends_at_known_headers_only() -> None:
    schema = MemorySchema(sections=["status", "errors", "metrics"])
    blocks = schema.split_sections(TEXT)
    assert blocks["errors"][0].endswith("root cause: leak")
    assert blocks["metrics"] == ["[metrics]\nCPU: 78%"]
    text = "[errors]\nbad\n[misc]\nunrelated\n"
    assert schema.split_sections(text)["errors"] == ["[errors]\nbad\n[misc]\nunrelated"]
    assert schema.split_sections(text, extra_names=["misc"])["errors"] == ["[errors]\nbad"]


def test_tier_headers_end_a_section() -> None:
    schema = MemorySchema(sections=["errors"])
    text = "[notes:ops]\n[errors]\ndisk full\n[notes:people]\nAnna likes tea\n[reference]\nregion: eu"
    assert schema.split_sections(text) == {"errors": ["[errors]\ndisk full"]}


def test_headers_are_case_insensitive_indentable_and_repeatable() -> None:
    schema = MemorySchema(sections=["errors"])
    text = "  [Errors]\nfirst\n[status]\nx\n[errors]\nsecond"
    assert schema.split_sections(text, extra_names=["status"]) == {"errors": ["[Errors]\nfirst", "[errors]\nsecond"]}


def test_custom_header_format() -> None:
    schema = MemorySchema(sections=["errors", "metrics"], section_header_format="## {name}")
    text = "## errors\n- timeout\n### details\n[link](http://x)\n## metrics\nCPU 50%"
    blocks = schema.split_sections(text)
    assert blocks["errors"] == ["## errors\n- timeout\n### details\n[link](http://x)"]
    assert blocks["metrics"] == ["## metrics\nCPU 50%"]
    assert schema.header("errors") == "## errors"


def test_default_section_takes_text_without_a_header() -> None:
    schema = MemorySchema(sections=["errors", "metrics"])
    assert schema.split_sections("- OOM at 02:15", default_section="errors") == {"errors": ["- OOM at 02:15"]}
    assert schema.split_sections("lead\n[metrics]\nCPU", default_section="errors") == {
        "errors": ["lead"],
        "metrics": ["[metrics]\nCPU"],
    }
    assert schema.split_sections("no header", default_section="unknown") == {}


def test_changing_sections_after_construction_is_seen() -> None:
    schema = MemorySchema(sections=["a"])
    first = schema.schema_id()
    schema.sections = ["a", "b"]
    assert schema.schema_id() != first
    assert schema.split_sections("[a]\nx\n[b]\ny") == {"a": ["[a]\nx"], "b": ["[b]\ny"]}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sections": "errors"}, "sections"),
        ({"sections": ["a", "A"]}, "sections"),
        ({"sections": ["a", ""]}, "sections[1]"),
        ({"sections": ["a"], "keywords": {"b": ["x"]}}, "keywords"),
        ({"sections": ["a"], "keywords": {"a": "x"}}, "keywords.a"),
        ({"sections": ["a"], "section_header_format": "[name]"}, "section_header_format"),
        ({"sections": ["a"], "confidence_threshold": 1.5}, "confidence_threshold"),
        ({"sections": ["a"], "free_text_threshold": -0.1}, "free_text_threshold"),
        ({"sections": ["a"], "tier_weights": {"memory": 1.0}}, "tier_weights"),
        ({"sections": ["a"], "tier_weights": {"history": -1.0}}, "tier_weights.history"),
        ({"sections": ["a"], "schema_weight": -1}, "schema_weight"),
        ({"sections": ["a"], "phrase_sizes": (1,)}, "phrase_sizes"),
        ({"sections": ["a"], "phrase_boost": -0.5}, "phrase_boost"),
    ],
)
def test_invalid_schemas_are_rejected(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        MemorySchema(**kwargs)  # type: ignore[arg-type]
    assert err.value.field == field
    assert isinstance(err.value, ValueError)  # deepcq raised ValueError


def test_a_history_turn_naming_a_section_belongs_to_it() -> None:
    from deepcontext.query import score_sections_detailed

    schema = MemorySchema(sections=["deploy"], tier_weights={"history": 0.4})
    texts = {"state": "[deploy]\nrollout healthy\n", "history": "USER: [deploy] build v2.3.1 failed"}
    exp = score_sections_detailed("anything on v2.3.1?", schema, texts)["deploy"]
    assert exp.literal_hit is True and exp.score == 0.4  # found in history, at history's weight
    # only a turn's role (upper case, at the start of the line) may precede a header
    blocks = schema.split_sections("see the [deploy] notes\nUSER: [deploy] it failed\n- [deploy] box")
    assert blocks == {"deploy": ["[deploy] it failed\n- [deploy] box"]}
    assert schema.extraction_pattern("deploy").search("ASSISTANT: [deploy] rolled back") is not None


def test_extract_phrases_gives_stemmed_content_word_ngrams() -> None:
    from deepcontext.query.plan import extract_phrases

    assert extract_phrases("cost of goods sold") == {"cost good", "good sold"}
    assert extract_phrases("moving average crossover", (2, 3)) >= {"move averag", "move averag crossov"}
    assert extract_phrases("anything", ()) == set()
