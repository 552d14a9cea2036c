"""Getting JSON out of model answers: reasoning blocks, fences, prose; pydantic validation."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from deepcontext.errors import LLMResponseError, LLMValidationError
from deepcontext.llm.structured import extract_json, parse_answer, strip_fences, strip_reasoning


class Pair(BaseModel):
    a: int
    b: str


class Items(BaseModel):
    items: list[int]


def test_strip_reasoning_removes_think_blocks_of_any_case_and_kind() -> None:
    text = '<think>plan {"a": 0}</think>\n<THINKING>more</THINKING>{"a": 1, "b": "x"}'
    assert strip_reasoning(text) == '{"a": 1, "b": "x"}'


def test_strip_reasoning_handles_a_closing_tag_without_its_opening() -> None:
    # chat templates that open the block inside the prompt (DeepSeek-R1, Qwen3)
    assert strip_reasoning('thinking about {"a": 2} ...</think>{"a": 1, "b": "y"}') == '{"a": 1, "b": "y"}'


def test_strip_reasoning_drops_an_unclosed_block() -> None:
    assert strip_reasoning('{"a": 1}\n<think>I was cut off') == '{"a": 1}'


def test_strip_fences_returns_the_first_block() -> None:
    assert strip_fences('Here:\n```json\n{"a": 1}\n```\nbye') == '{"a": 1}'
    assert strip_fences("no fence") == "no fence"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": "x"}',
        '```json\n{"a": 1, "b": "x"}\n```',
        '```\n{"a": 1, "b": "x"}\n```',
        '<think>first {"a": 9} then</think>\n```json\n{"a": 1, "b": "x"}\n```',
        'Sure! Here is the JSON: {"a": 1, "b": "x"} Hope it helps.',
    ],
)
def test_parse_answer_finds_the_json(text: str) -> None:
    assert parse_answer(text, Pair) == Pair(a=1, b="x")


def test_parse_answer_accepts_a_bare_list_for_a_single_list_field() -> None:
    assert parse_answer("[1, 2, 3]", Items) == Items(items=[1, 2, 3])


def test_no_json_raises_response_error_with_the_text() -> None:
    with pytest.raises(LLMResponseError) as info:
        extract_json("I cannot help with that.")
    assert not isinstance(info.value, LLMValidationError)
    assert info.value.text == "I cannot help with that."


def test_only_reasoning_is_an_empty_answer() -> None:
    with pytest.raises(LLMResponseError, match="empty"):
        extract_json("<think>hmm</think>")


def test_schema_mismatch_raises_validation_error_listing_fields() -> None:
    with pytest.raises(LLMValidationError) as info:
        parse_answer('{"a": "not a number"}', Pair)
    assert any(e.startswith("a:") for e in info.value.errors)
    assert any(e.startswith("b:") for e in info.value.errors)


def test_a_truncated_answer_is_not_mistaken_for_a_nested_fragment() -> None:
    # the inner {"text": ...} object parses on its own; it must not be taken for the answer
    with pytest.raises(LLMResponseError):
        extract_json('{"facts": [{"text": "Ana lives in Berlin", "source_indices": [0]},')
