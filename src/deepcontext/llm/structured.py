"""Getting JSON out of what a model wrote: reasoning blocks and markdown fences removed, then parsed
and validated with pydantic. Pure functions, tested directly."""

from __future__ import annotations

import json
import re
import typing
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from deepcontext.errors import LLMResponseError, LLMValidationError

__all__ = [
    "extract_json",
    "format_validation_errors",
    "parse_answer",
    "schema_for",
    "shorten",
    "strip_fences",
    "strip_reasoning",
]

T = TypeVar("T", bound=BaseModel)

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "analysis")
_BLOCK = re.compile(r"<(?P<tag>" + "|".join(_REASONING_TAGS) + r")\b[^>]*>.*?</(?P=tag)\s*>", re.IGNORECASE | re.DOTALL)
_CLOSE = re.compile(r"</(?:" + "|".join(_REASONING_TAGS) + r")\s*>", re.IGNORECASE)
_OPEN = re.compile(r"<(?:" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)(?:\r?\n)?[ \t]*```", re.DOTALL)


def strip_reasoning(text: str) -> str:
    """Remove reasoning blocks (``<think>...</think>`` and the like) from a model's answer.

    A closing tag without its opening tag (chat templates that open the block in the prompt) drops
    everything before it; an opening tag never closed (the answer was cut during reasoning) drops
    everything after it.
    """
    out = _BLOCK.sub("", text)
    closes = list(_CLOSE.finditer(out))
    if closes:
        out = out[closes[-1].end() :]
    opened = _OPEN.search(out)
    if opened:
        out = out[: opened.start()]
    return out.strip()


def strip_fences(text: str) -> str:
    """The content of the first markdown code block, or the text itself when there is none."""
    m = _FENCE.search(text)
    return m.group(2).strip() if m else text.strip()


def extract_json(text: str) -> Any:
    """Parse the JSON value a model wrote, ignoring reasoning blocks, fences and prose around it.

    Raises :class:`LLMResponseError` when no JSON value can be found.
    """
    body = strip_reasoning(text)
    candidates = [m.group(2).strip() for m in _FENCE.finditer(body)]
    candidates.append(body.strip())
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        # prose around the JSON: decode from the first "{" and from the first "[" only; digging into
        # nested objects of a broken answer would return a fragment that may validate by accident
        decoder = json.JSONDecoder()
        starts = sorted(p for p in (candidate.find("{"), candidate.find("[")) if p >= 0)
        for start in starts:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    if not body.strip():
        raise LLMResponseError("the answer is empty (after removing reasoning blocks)", text=shorten(text))
    raise LLMResponseError("no JSON value found in the answer", text=shorten(text))


def _single_list_field(schema: type[BaseModel]) -> str | None:
    fields = schema.model_fields
    if len(fields) != 1:
        return None
    name, info = next(iter(fields.items()))
    origin = typing.get_origin(info.annotation)
    return name if origin is list else None


def parse_answer(text: str, schema: type[T]) -> T:
    """Extract the JSON of ``text`` and validate it against ``schema``.

    A bare list is accepted for a schema whose only field is a list (local models often drop the
    wrapping object). Raises :class:`LLMResponseError` (no JSON) or :class:`LLMValidationError`.
    """
    value = extract_json(text)
    if isinstance(value, list):
        field = _single_list_field(schema)
        if field is not None:
            value = {field: value}
    try:
        return schema.model_validate(value)
    except PydanticValidationError as exc:
        errors = format_validation_errors(exc)
        raise LLMValidationError(
            f"the answer does not fit {schema.__name__}: " + "; ".join(errors[:5]),
            text=shorten(text),
            errors=errors,
        ) from None


def format_validation_errors(exc: PydanticValidationError, limit: int = 20) -> list[str]:
    """pydantic's errors as short ``location: message`` lines (the input values are left out)."""
    out = []
    for err in exc.errors(include_url=False, include_input=False)[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        out.append(f"{loc}: {err.get('msg', 'invalid')}")
    return out


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema sent to the backend for ``model``."""
    return model.model_json_schema()


def shorten(text: str | None, limit: int = 300) -> str | None:
    """``text`` cut to ``limit`` characters, for error messages."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... ({len(text)} chars)"
