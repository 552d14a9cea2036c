"""Request and response bodies of the REST API, with field size limits.

Strings refuse NUL characters and lone surrogates (neither survives a database), times are ISO
8601 strings or epoch seconds within years 1 to 9998 (UTC) as everywhere else, metadata must be
JSON with finite numbers and 64-bit integers.
The engine validates again against the settings (``max_message_chars``...).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    WithJsonSchema,
    model_validator,
)

from deepcontext.errors import ValidationError
from deepcontext.server.tenancy import MAX_EXTERNAL_USER_CHARS
from deepcontext.services.validation import parse_time
from deepcontext.types import MemoryTier, MemoryType

__all__ = [
    "MAX_QUERY",
    "MAX_TEXT",
    "AddBody",
    "ConversationId",
    "DeleteBody",
    "DeletedMemory",
    "GraphBody",
    "GraphNeighbour",
    "GraphResult",
    "Health",
    "LifecycleBody",
    "MessageBody",
    "Metadata",
    "Readiness",
    "ScopeId",
    "SearchBody",
    "SeedSearchBody",
    "Timestamp",
    "UpdateBody",
    "UserDeleted",
    "UserBody",
    "UserId",
    "UserList",
]

MAX_TEXT = 32_000
MAX_QUERY = 4_000
MAX_MESSAGES = 2_000
MAX_INT64 = 2**63 - 1


def _clean(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no lone surrogates)") from None
    return value


def _instant(value: Any) -> datetime:
    # the library's rule, not pydantic's (which reads a number above 2e10 as milliseconds): an ISO
    # 8601 string or epoch seconds, within years 1 to 9998 (UTC)
    try:
        when = parse_time(value, "time")
    except ValidationError as exc:
        raise ValueError(str(exc).removeprefix("time ")) from None
    assert when is not None
    return when


def _json_value(value: Any, depth: int = 0) -> Any:
    if depth > 32:
        raise ValueError("nested too deeply")
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not -MAX_INT64 - 1 <= value <= MAX_INT64:
            raise ValueError("integers must fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite")
        return value
    if isinstance(value, list):
        return [_json_value(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_clean(str(k)): _json_value(v, depth + 1) for k, v in value.items()}
    raise ValueError(f"unsupported JSON value of type {type(value).__name__}")


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    out = _json_value(value)
    assert isinstance(out, dict)
    return out


#: the patterns of ids and texts, which say what the engine enforces (ids: no whitespace around
#: them; texts: not blank, no NUL), and what an error says of a value that does not match one
#: what str.strip() strips, spelled out: regex engines disagree on what \s matches
_WS = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
USER_ID_PATTERN = rf"^[^/{_WS}\x00-\x1f\x7f](?:[^/\x00-\x1f\x7f]*[^/{_WS}\x00-\x1f\x7f])?$"
ID_PATTERN = rf"^[^{_WS}\x00-\x1f\x7f](?:[^\x00-\x1f\x7f]*[^{_WS}\x00-\x1f\x7f])?$"
TEXT_PATTERN = rf"^[{_WS}]*[^{_WS}\x00][^\x00]*$"
NAME_PATTERN = rf"^[{_WS}]*[^{_WS}\x00-\x08\x0e-\x1b\x7f][^\x00-\x08\x0e-\x1b\x7f]*$"
PATTERN_HINTS = {
    USER_ID_PATTERN: "must not contain '/' or control characters, nor start or end with whitespace",
    ID_PATTERN: "must not contain control characters, nor start or end with whitespace",
    TEXT_PATTERN: "must not be blank or contain NUL characters",
    NAME_PATTERN: "must not be blank or contain control characters",
}

#: a string without NUL or lone surrogates
SafeStr = Annotated[str, AfterValidator(_clean)]
UserId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_EXTERNAL_USER_CHARS, pattern=USER_ID_PATTERN, description="The user (no '/')"),
    AfterValidator(_clean),
]
ConversationId = Annotated[
    str, Field(min_length=1, max_length=255, pattern=ID_PATTERN, description="A conversation id"), AfterValidator(_clean)
]
#: an agent or run id: scopes a memory inside its user
ScopeId = Annotated[
    str,
    Field(min_length=1, max_length=255, pattern=ID_PATTERN, description="An agent or run id"),
    AfterValidator(_clean),
]
#: an ISO 8601 time or a number of seconds since the epoch
Timestamp = Annotated[
    datetime,
    BeforeValidator(_instant),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "number", "minimum": -62_135_596_800, "maximum": 253_370_764_799},
            ]
        }
    ),
]
Metadata = Annotated[
    dict[str, Any],
    Field(
        max_length=256,
        description="JSON: strings without NUL characters, integers within 64 bits, finite numbers, at most 32 levels deep",
    ),
    AfterValidator(_metadata),
]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT, pattern=TEXT_PATTERN), AfterValidator(_clean)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, pattern=TEXT_PATTERN), AfterValidator(_clean)]
EntityName = Annotated[str, Field(min_length=1, max_length=512, pattern=TEXT_PATTERN), AfterValidator(_clean)]


def _number(value: Any) -> Any:
    if isinstance(value, (str, bool)):
        raise ValueError("must be a number")
    return value


#: numbers and booleans of a JSON body as the schema says: never a string, a boolean for a number
#: or a number for a boolean. An integer may be written 5 or 5.0 (JSON Schema's integers); put its
#: bounds before NumberOnly, so that the schema shows them: Annotated[int, Field(ge=1), NumberOnly]
NumberOnly = BeforeValidator(_number)
JsonFloat = Annotated[float, Strict()]
JsonBool = Annotated[bool, Strict()]
MemoryId = Annotated[int, Field(ge=1, le=MAX_INT64), NumberOnly]
#: agent or run ids of a filter: one, or a non-empty list
ScopeIds = ScopeId | Annotated[list[ScopeId], Field(min_length=1, max_length=100)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageBody(_Body):
    """One message of a conversation."""

    role: Literal["user", "assistant", "system", "tool"]
    content: Text
    name: Annotated[str, Field(min_length=1, max_length=255, pattern=ID_PATTERN), AfterValidator(_clean)] | None = Field(
        default=None, description="The speaker's name"
    )
    timestamp: Timestamp | None = Field(default=None, description="When it was said")
    metadata: Metadata | None = None

    def as_message(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


Messages = Annotated[list[MessageBody], Field(min_length=1, max_length=MAX_MESSAGES)]


# --- seed-compatible bodies (DeepContext 0.1's REST API) ---------------------------------------------


class SeedAddBody(_Body):
    messages: Messages
    user_id: UserId
    conversation_id: ConversationId = "default"


class SeedSearchBody(_Body):
    query: Query
    user_id: UserId
    limit: Annotated[int, Field(ge=1, le=100), NumberOnly] = 10
    tier: MemoryTier | None = None
    memory_type: MemoryType | None = None
    include_graph: JsonBool = True
    min_score: JsonFloat | None = Field(
        default=None, ge=0, le=1, allow_inf_nan=False, description="Leave out results whose calibrated relevance is below this"
    )


class UpdateBody(_Body):
    memory_id: MemoryId
    text: Text
    user_id: UserId


class DeleteBody(_Body):
    memory_id: MemoryId
    user_id: UserId


class GraphBody(_Body):
    user_id: UserId
    entity_name: EntityName
    depth: Annotated[int, Field(ge=1, le=5), NumberOnly] = 2


class LifecycleBody(_Body):
    user_id: UserId


# --- /v1 bodies -----------------------------------------------------------------------------------


class AddBody(_Body):
    """Messages to store verbatim and derive memories from (``expires_at`` or ``ttl``, not both)."""

    model_config = ConfigDict(
        json_schema_extra={
            "not": {
                "required": ["expires_at", "ttl"],
                "properties": {"expires_at": {"not": {"type": "null"}}, "ttl": {"not": {"type": "null"}}},
            }
        }
    )

    user_id: UserId
    messages: Messages
    conversation_id: ConversationId = "default"
    timestamp: Timestamp | None = Field(default=None, description="Time of messages that carry none")
    metadata: Metadata | None = Field(default=None, description="Attached to every derived memory")
    expires_at: Timestamp | None = Field(default=None, description="The derived memories expire then")
    ttl: JsonFloat | None = Field(default=None, gt=0, le=100 * 365 * 86400, description="Seconds until they expire")
    infer: JsonBool = Field(default=True, description="False: store the turns without extraction")
    agent_id: ScopeId | None = Field(default=None, description="The agent the turns and memories belong to")
    run_id: ScopeId | None = Field(default=None, description="The run (session) they belong to")

    @model_validator(mode="after")
    def _one_expiry(self) -> AddBody:
        if self.expires_at is not None and self.ttl is not None:
            raise ValueError("give expires_at or ttl, not both")
        return self


class SearchBody(_Body):
    """A hybrid search over one user's memories."""

    user_id: UserId
    query: Query
    limit: Annotated[int, Field(ge=1, le=100), NumberOnly] = 10
    tier: list[MemoryTier] | None = Field(default=None, max_length=3)
    memory_type: list[MemoryType] | None = Field(default=None, max_length=3)
    conversation_id: list[ConversationId] | None = Field(default=None, max_length=100)
    after: Timestamp | None = None
    before: Timestamp | None = None
    metadata: Metadata | None = Field(
        default=None,
        description="Conditions on top-level metadata keys: {key: value} or {key: {op: value}} with op one of "
        "eq ne in nin gt gte lt lte contains icontains, {key: '*'}, combined with AND / OR / NOT",
    )
    agent_id: ScopeIds | None = Field(default=None, description="Memories of this agent (or these)")
    run_id: ScopeIds | None = Field(default=None, description="Memories of this run (or these)")
    include_graph: JsonBool = True
    include_superseded: JsonBool = Field(
        default=False, description="Also older values a later statement changed, each after its replacement"
    )
    config: Literal["hybrid", "relevance", "vector", "keyword", "graph"] | None = Field(
        default=None, description="A retrieval preset (default hybrid)"
    )
    min_score: JsonFloat | None = Field(
        default=None, ge=0, le=1, allow_inf_nan=False, description="Leave out results whose calibrated relevance is below this"
    )


class UserBody(_Body):
    """The user an action on one of their things is for."""

    user_id: UserId


class PatchMemoryBody(_Body):
    """What to change in a memory: any of its text, metadata, pin and expiry (none: nothing changes)."""

    user_id: UserId
    # absent or a text, never null (the schema says so: no "null" branch)
    text: Text = Field(default=None, description="New text (re-embedded; the old text stays in the history)")  # type: ignore[assignment]
    metadata: Metadata | None = Field(default=None, description="Replaces the memory's metadata")
    pinned: JsonBool | None = Field(default=None, description="Pinned: never forgotten, always in the context")
    expires_at: Timestamp | None = Field(default=None, description="When it expires; null clears the expiry")


# --- responses -------------------------------------------------------------------------------------


class Health(BaseModel):
    status: str
    version: str


class Readiness(BaseModel):
    status: str
    database: str
    schema_version: int
    read_only: bool = Field(default=False, description="The database is read-only: reads are served, writes answer 503")


class DeletedMemory(BaseModel):
    memory_id: int
    status: str


class GraphNeighbour(BaseModel):
    entity: str
    entity_type: str
    relation: str | None = None
    depth: int
    strength: float | None = None
    via: str | None = None


class GraphResult(BaseModel):
    entity: str
    depth: int
    neighbours: list[GraphNeighbour]


class UserList(BaseModel):
    users: list[str]
    next_cursor: str | None = Field(default=None, description="Pass back as cursor for the next page; null at the end")


class UserProfileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        description="Display name used in memory text instead of 'the user' (whitespace runs become one space)",
        min_length=1,
        max_length=100,
        pattern=NAME_PATTERN,
    )


class UserProfile(BaseModel):
    user_id: str
    name: str | None = Field(default=None, description="Display name; null while none is set or seen on the user's turns")


class UserDeleted(BaseModel):
    user_id: str
    deleted: dict[str, int]
