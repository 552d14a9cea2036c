"""The parameter types the typed requests (:mod:`deepcontext.services.requests`) are built from:
ids, queries, metadata, times, flags, fractions and the filters search and list share, each with
its validation and description once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BeforeValidator, Field, PlainValidator, SkipValidation, ValidationInfo

from deepcontext.errors import ValidationError
from deepcontext.services.validation import check_id, check_json, check_text, parse_time

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings

__all__ = [
    "MAX_MEMORY_ID",
    "Agents",
    "ConversationId",
    "Conversations",
    "Flag",
    "Fraction",
    "MemoryId",
    "Metadata",
    "MetadataConditions",
    "OptionalFlag",
    "OptionalFraction",
    "OptionalId",
    "Query",
    "Runs",
    "SaidAfter",
    "SaidBefore",
    "Tiers",
    "Time",
    "Types",
    "UserId",
    "When",
    "message_text",
    "settings_of",
    "time_value",
]

#: memory ids are positive 64-bit integers
MAX_MEMORY_ID = 2**63 - 1


def _id(value: Any, info: ValidationInfo) -> Any:
    return check_id(value, info.field_name or "id")


def _optional_id(value: Any, info: ValidationInfo) -> Any:
    return None if value is None else _id(value, info)


def _json(value: Any, info: ValidationInfo) -> Any:
    field = info.field_name or "metadata"
    if value is not None:
        if not isinstance(value, Mapping):
            raise ValidationError(f"{field} must be an object", field=field)
        check_json(value, field)
    return value


def time_value(value: Any, info: ValidationInfo) -> Any:
    return parse_time(value, info.field_name or "time")


def settings_of(info: ValidationInfo) -> DeepContextSettings:
    if not info.context or "settings" not in info.context:
        raise TypeError("requests are built with Request.of(settings, ...)")
    settings: DeepContextSettings = info.context["settings"]
    return settings


def _query(value: Any, info: ValidationInfo) -> Any:
    limit = settings_of(info).max_query_chars
    return check_text(value, info.field_name or "query", limit, "max_query_chars")


def message_text(value: Any, info: ValidationInfo) -> Any:
    limit = settings_of(info).max_message_chars
    return check_text(value, info.field_name or "text", limit, "max_message_chars").strip()


MemoryId = Annotated[int, Field(ge=1, le=MAX_MEMORY_ID, description="The memory")]
UserId = Annotated[str, BeforeValidator(_id), Field(description="The user whose memories these are")]
ConversationId = Annotated[str, BeforeValidator(_id)]
OptionalId = Annotated[str | None, BeforeValidator(_optional_id)]
Query = Annotated[str, BeforeValidator(_query), Field(description="What to look for")]
Metadata = Annotated[Mapping[str, Any] | None, PlainValidator(_json)]
Time = Annotated[datetime | None, PlainValidator(time_value)]
Flag = Annotated[bool, Field(strict=True)]
OptionalFlag = Annotated[bool | None, Field(strict=True)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, strict=True)]
OptionalFraction = Annotated[float | None, Field(ge=0, le=1, allow_inf_nan=False, strict=True)]
# the filters of search and list: checked together by parse_filters, which reads many forms
# (one value or several, enums or names, datetimes, ISO text or epoch seconds)
Many = Annotated[str | Iterable[str] | None, SkipValidation]
When = Annotated[datetime | str | float | None, SkipValidation]
MetadataFilter = Annotated[Mapping[str, Any] | None, SkipValidation]
# each filter once, with its description, for every request that takes it
Tiers = Annotated[Many, Field(description="Only these tiers: working, short_term, long_term")]
Types = Annotated[Many, Field(description="Only these types: semantic, episodic, procedural")]
Conversations = Annotated[Many, Field(description="Only memories of this conversation (or these)")]
SaidAfter = Annotated[When, Field(description="Said at or after")]
SaidBefore = Annotated[When, Field(description="Said before")]
MetadataConditions = Annotated[
    MetadataFilter,
    Field(
        description="Conditions on top-level metadata keys: {key: value} or {key: {op: value}} with op one of "
        "eq ne in nin gt gte lt lte contains icontains, {key: '*'}, combined with AND / OR / NOT"
    ),
]
Agents = Annotated[Many, Field(description="Memories of this agent (or these)")]
Runs = Annotated[Many, Field(description="Memories of this run (or these)")]
