"""One typed request per operation: its parameters, their defaults, limits and validation, once.

``DeepContext.add``, ``search``, ``context``, ``list`` and ``edit`` build one of these from their
arguments and hand it to the service that runs the operation; the REST bodies, MCP tools, CLI
options and the sync shell are checked against these models by ``tests/test_requests.py`` (a
parameter added here and nowhere else fails it until every layer takes it or says why not).

A bad value raises :class:`~deepcontext.errors.ValidationError` naming the field, never pydantic's
own error. Limits that come from settings (a query's or a message's length) are read from the
settings passed to :meth:`Request.of`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

import annotated_types
import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, PrivateAttr, SkipValidation, ValidationInfo

from deepcontext.errors import ValidationError
from deepcontext.extract.interface import MessageIn
from deepcontext.retrieve.config import SearchConfig, preset
from deepcontext.services.request_fields import (
    MAX_MEMORY_ID,
    Agents,
    ConversationId,
    Conversations,
    Flag,
    Fraction,
    MemoryId,
    Metadata,
    MetadataConditions,
    OptionalFlag,
    OptionalFraction,
    OptionalId,
    Query,
    Runs,
    SaidAfter,
    SaidBefore,
    Tiers,
    Time,
    Types,
    UserId,
    message_text,
)
from deepcontext.services.validation import (
    check_number,
    check_text,
    expiry,
    parse_filters,
    parse_messages,
)
from deepcontext.store.interface import MemoryFilters
from deepcontext.types import MemoryStatus

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings

__all__ = [
    "DEFAULT_BUDGET_TOKENS",
    "DEFAULT_CONVERSATION_NODES",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_MIN_SIMILARITY",
    "MAX_BUDGET_TOKENS",
    "MAX_MEMORY_ID",
    "PARTS",
    "TOKENS_PER_RESULT",
    "AddRequest",
    "ContextShares",
    "ContextRequest",
    "EditRequest",
    "ImportRequest",
    "ListRequest",
    "Request",
    "SearchRequest",
    "UpdateRequest",
    "bounds",
]

#: the default ``budget_tokens`` of a context, and the largest accepted
DEFAULT_BUDGET_TOKENS = 2000
MAX_BUDGET_TOKENS = 1_000_000
#: without a ``memory_limit`` a context considers one search result per ``TOKENS_PER_RESULT``
#: tokens of budget, at least ``DEFAULT_MEMORY_LIMIT`` (a larger budget has room for more), at most 100
DEFAULT_MEMORY_LIMIT = 20
TOKENS_PER_RESULT = 40
DEFAULT_MIN_SIMILARITY = 0.3
DEFAULT_CONVERSATION_NODES = 12


def bounds(model: type[BaseModel], name: str) -> tuple[float | None, float | None]:
    """The ``(lowest, highest)`` a field of ``model`` accepts (``None``: no bound)."""
    lo = hi = None
    for m in model.model_fields[name].metadata:
        if isinstance(m, annotated_types.Ge):
            lo = m.ge
        elif isinstance(m, annotated_types.Le):
            hi = m.le
    return lo, hi  # type: ignore[return-value]


def _shown(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


_KINDS = {
    "int_type": "an integer",
    "bool_type": "True or False",
    "float_type": "a number",
    "string_type": "a string",
}


class Request(BaseModel):
    """The parameters of one call: validated when built, read by the service that runs it."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, strict=True)

    #: the facade method whose parameters these are (checked by the tests)
    operation: ClassVar[str]

    @classmethod
    def of(cls, settings: DeepContextSettings, **values: Any) -> Self:
        """The request from a call's arguments; a bad one raises ValidationError naming the field."""
        context = {"settings": settings, **values.pop("_context", {})}
        try:
            return cls.model_validate(values, context=context)
        except pydantic.ValidationError as exc:
            raise cls._error(exc) from None

    def params(self, *, leave_out: Iterable[str] = ()) -> dict[str, Any]:
        """The parameters as given (by field name), for a record of the call."""
        skip = set(leave_out)
        return {name: getattr(self, name) for name in type(self).model_fields if name not in skip}

    @classmethod
    def _error(cls, exc: pydantic.ValidationError) -> ValidationError:
        first = exc.errors()[0]
        cause = (first.get("ctx") or {}).get("error")
        if isinstance(cause, ValidationError):
            return cause
        field = ".".join(str(p) for p in first["loc"]) or None
        name = str(first["loc"][0]) if first["loc"] else ""
        value = first.get("input")
        if first["type"] == "missing":
            return ValidationError(f"{field} is required", field=field)
        if first["type"] == "extra_forbidden":
            return ValidationError(f"{cls.operation} takes no argument {field}", field=field)
        kind = _KINDS.get(first["type"], "a finite number")
        if name in cls.model_fields:
            lo, hi = bounds(cls, name)
            whole = "int" in str(cls.model_fields[name].annotation)
            if lo is not None and hi is not None:
                kind = f"{'an integer' if whole else 'a number'} between {_shown(lo)} and {_shown(hi)}"
            elif lo is not None:
                kind = f"{'an integer' if whole else 'a number'} of at least {_shown(lo)}"
        shown = repr(value)
        shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({type(value).__name__})"  # a 10 MB string stays out
        return ValidationError(f"{field} must be {kind}, got {shown}", field=field)


class SearchRequest(Request):
    """``DeepContext.search``: a hybrid search over one user's memories."""

    operation: ClassVar[str] = "search"

    query: Query
    user_id: UserId
    limit: Annotated[int, Field(ge=1, le=100, description="Results (1-100)")] = 10
    tier: Tiers = None
    memory_type: Types = None
    include_graph: Flag = Field(default=True, description="Run the knowledge-graph leg")
    conversation_id: Conversations = None
    after: SaidAfter = None
    before: SaidBefore = None
    metadata: MetadataConditions = None
    config: Annotated[SearchConfig | str | None, SkipValidation] = Field(
        default=None, description="A SearchConfig or a preset: hybrid (default), relevance, vector, keyword, graph"
    )
    track_access: OptionalFlag = Field(default=None, description="Count the results as accessed (None: the setting)")
    include_superseded: Flag = Field(
        default=False, description="Also older values a later statement changed, each after its replacement"
    )
    min_score: OptionalFraction = Field(default=None, description="Leave out results whose calibrated relevance is below this")
    agent_id: Agents = None
    run_id: Runs = None

    _filters: MemoryFilters = PrivateAttr()
    _config: SearchConfig = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._filters = parse_filters(
            tier=self.tier, memory_type=self.memory_type, conversation_id=self.conversation_id, after=self.after,
            before=self.before, metadata=self.metadata, agent_id=self.agent_id, run_id=self.run_id,
        )  # fmt: skip
        self._config = self._search_config((context or {}).get("settings"))

    def _search_config(self, settings: DeepContextSettings | None) -> SearchConfig:
        if self.config is None:
            if settings is None:
                raise TypeError("requests are built with Request.of(settings, ...)")
            return SearchConfig.from_settings(settings)
        if isinstance(self.config, str):
            return preset(self.config)
        if isinstance(self.config, SearchConfig):
            return self.config
        raise ValidationError("config must be a SearchConfig or a preset name", field="config")

    @property
    def filters(self) -> MemoryFilters:
        """The filters every leg applies."""
        return self._filters

    @property
    def search_config(self) -> SearchConfig:
        """The retrieval settings: the preset or config given, else the engine's settings."""
        return self._config


class ListRequest(Request):
    """``DeepContext.list``: one page of a user's memories, newest first."""

    operation: ClassVar[str] = "list"

    user_id: UserId
    tier: Tiers = None
    memory_type: Types = None
    conversation_id: Conversations = None
    after: SaidAfter = None
    before: SaidBefore = None
    metadata: MetadataConditions = None
    include_inactive: Flag = Field(default=False, description="Also deleted, superseded, merged, decayed")
    limit: Annotated[int, Field(ge=1, le=1000, description="Page size (1-1000)")] = 50
    cursor: Annotated[str | None, Field(description="next_cursor of the previous page")] = None
    agent_id: Agents = None
    run_id: Runs = None

    _filters: MemoryFilters = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        filters = parse_filters(
            tier=self.tier, memory_type=self.memory_type, conversation_id=self.conversation_id, after=self.after,
            before=self.before, metadata=self.metadata, agent_id=self.agent_id, run_id=self.run_id,
        )  # fmt: skip
        if self.include_inactive:
            filters.statuses = tuple(MemoryStatus)
        self._filters = filters

    @property
    def filters(self) -> MemoryFilters:
        return self._filters


PartName = Literal["pinned", "memories", "tiers", "conversation"]
#: the parts, in the order they appear in the text
PARTS: tuple[str, ...] = ("pinned", "memories", "tiers", "conversation")


class ContextShares(BaseModel):
    """The share of the budget each part may use before the others have taken theirs.

    Defaults: pinned 0.15, memories 0.35, tiers 0.20, conversation 0.30. Shares are normalised
    to sum to 1; a share of 0 turns its part off. Budget a part leaves unused goes to the others
    (see :mod:`deepcontext.context.packing`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pinned: float = Field(default=0.15, ge=0, le=1_000)
    memories: float = Field(default=0.35, ge=0, le=1_000)
    tiers: float = Field(default=0.20, ge=0, le=1_000)
    conversation: float = Field(default=0.30, ge=0, le=1_000)

    @classmethod
    def coerce(cls, value: ContextShares | Mapping[str, float] | None) -> ContextShares:
        """Shares from None (the defaults), a ContextShares, or a mapping overriding some parts."""
        if value is None:
            return cls()
        if isinstance(value, ContextShares):
            shares = value
        elif isinstance(value, Mapping):
            unknown = set(value) - set(PARTS)
            if unknown:
                raise ValidationError(f"unknown part(s) in shares: {sorted(unknown)}; parts are {list(PARTS)}", field="shares")
            for name, share in value.items():
                check_number(share, f"shares.{name}", 0.0)
            shares = cls(**{**cls().model_dump(), **{k: float(v) for k, v in value.items()}})
        else:
            raise ValidationError("shares must be a ContextShares or a mapping {part: share}", field="shares")
        if sum(shares.as_dict().values()) <= 0:
            raise ValidationError("at least one share must be positive", field="shares")
        return shares

    def as_dict(self) -> dict[str, float]:
        return {p: float(getattr(self, p)) for p in PARTS}

    def normalised(self) -> dict[str, float]:
        """``{part: share}`` summing to 1."""
        raw = self.as_dict()
        total = sum(raw.values())
        return {p: v / total for p, v in raw.items()}


class ContextRequest(Request):
    """``DeepContext.context``: what the next prompt needs about a query, within a budget."""

    operation: ClassVar[str] = "context"

    query: Query
    user_id: UserId
    conversation_id: OptionalId = Field(default=None, description="Include this conversation's path")
    budget_tokens: Annotated[int, Field(ge=1, le=MAX_BUDGET_TOKENS, description="Most tokens the context may take")] = (
        DEFAULT_BUDGET_TOKENS
    )
    # a ContextShares or a mapping {part: share}, made a ContextShares below
    shares: Annotated[ContextShares | Mapping[str, float] | None, SkipValidation] = Field(
        default=None, description="Share of the budget per part: pinned, memories, tiers, conversation"
    )
    # a MemorySchema (checked below)
    schema_: Annotated[Any, SkipValidation] = Field(
        default=None, alias="schema", description="The deepcq schema whose tiers the context draws on"
    )
    min_intent: OptionalFraction = Field(
        default=None, description="Intent score (query coverage) memories and tier sections need (0.3)"
    )
    memory_limit: Annotated[int | None, Field(ge=1, le=100)] = Field(
        default=None, description="Search results considered (default: one per 40 tokens of budget, at least 20)"
    )
    min_similarity: Fraction = Field(
        default=DEFAULT_MIN_SIMILARITY, description="Cosine that makes a memory relevant below min_intent"
    )
    max_conversation_nodes: Annotated[int, Field(ge=1, le=1000, description="Turns of the conversation's path")] = (
        DEFAULT_CONVERSATION_NODES
    )
    track_access: OptionalFlag = Field(default=None, description="Count included memories as accessed (None: the setting)")
    agent_id: Agents = None
    run_id: Runs = None

    model_config = ConfigDict(populate_by_name=True)
    _filters: MemoryFilters = PrivateAttr()
    _shares: ContextShares = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        self._shares = ContextShares.coerce(self.shares)
        if self.schema_ is not None:
            from deepcontext.query.schema import MemorySchema

            if not isinstance(self.schema_, MemorySchema):
                raise ValidationError("schema must be a MemorySchema", field="schema")
        self._filters = parse_filters(agent_id=self.agent_id, run_id=self.run_id)

    @property
    def filters(self) -> MemoryFilters:
        return self._filters

    @property
    def context_shares(self) -> ContextShares:
        """The budget's shares: the defaults with any part given overridden."""
        return self._shares

    @property
    def search_limit(self) -> int:
        """Search results the context considers: ``memory_limit``, else one per
        ``TOKENS_PER_RESULT`` tokens of budget, at least ``DEFAULT_MEMORY_LIMIT``, at most 100."""
        if self.memory_limit is not None:
            return self.memory_limit
        return min(100, max(DEFAULT_MEMORY_LIMIT, self.budget_tokens // TOKENS_PER_RESULT))


class AddRequest(Request):
    """``DeepContext.add``: messages to store verbatim and derive memories from.

    Built with ``_context={"now": ...}``: times of messages without one, and the expiry, count
    from then."""

    operation: ClassVar[str] = "add"

    messages: Annotated[Sequence[Mapping[str, Any]] | Sequence[Any], SkipValidation] = Field(
        description="Messages: {role, content} with optional name, timestamp and metadata"
    )
    user_id: UserId
    conversation_id: ConversationId = Field(default="default", description="The conversation they belong to")
    timestamp: Time = Field(default=None, description="Time of messages that carry none")
    metadata: Metadata = Field(default=None, description="Attached to every derived memory")
    expires_at: Annotated[datetime | str | None, SkipValidation] = Field(
        default=None, description="The derived memories expire then"
    )
    ttl: Annotated[float | None, SkipValidation] = Field(default=None, description="Seconds until they expire")
    infer: Flag = Field(default=True, description="False: store the turns without extraction")
    agent_id: OptionalId = Field(default=None, description="The agent the turns and memories belong to")
    run_id: OptionalId = Field(default=None, description="The run (session) they belong to")

    _parsed: list[MessageIn] = PrivateAttr()
    _expires: datetime | None = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        settings: DeepContextSettings = context["settings"]
        now: datetime = context["now"]
        self._parsed = parse_messages(
            self.messages, now=now, default_time=self.timestamp, max_messages=settings.max_messages_per_add,
            max_chars=settings.max_message_chars,
        )  # fmt: skip
        self._expires = expiry(now, self.expires_at, self.ttl)

    @property
    def parsed_messages(self) -> list[MessageIn]:
        """The messages, checked, with their times."""
        return self._parsed

    @property
    def expiry(self) -> datetime | None:
        """When the derived memories expire (from ``expires_at`` or ``ttl``)."""
        return self._expires


class EditRequest(Request):
    """``DeepContext.edit``: any of a memory's text, metadata, pin and expiry; what is not given stays.

    Built with ``_context={"now": ...}``: an expiry must lie after it."""

    operation: ClassVar[str] = "edit"

    memory_id: MemoryId
    user_id: UserId
    text: Annotated[str | None, SkipValidation] = Field(default=None, description="New text (re-embedded)")
    metadata: Metadata = Field(default=None, description="Replaces the memory's metadata")
    pinned: OptionalFlag = Field(default=None, description="Pinned: never forgotten, always in the context")
    expires_at: Annotated[datetime | str | None, SkipValidation] = Field(default=None, description="When it expires")
    clear_expiry: Flag = Field(default=False, description="Remove the memory's expiry")

    _text: str | None = PrivateAttr()
    _expires: datetime | None = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        settings: DeepContextSettings = context["settings"]
        text = self.text
        if text is not None:
            text = check_text(text, "text", settings.max_message_chars, "max_message_chars").strip()
        self._text = text
        if self.clear_expiry and self.expires_at is not None:
            raise ValidationError("give expires_at or clear_expiry, not both", field="expires_at")
        self._expires = expiry(context["now"], self.expires_at, None) if self.expires_at is not None else None

    @property
    def new_text(self) -> str | None:
        """The new text, trimmed (None: unchanged)."""
        return self._text

    @property
    def new_expiry(self) -> datetime | None:
        """The new expiry (None: unchanged, or cleared with ``clear_expiry``)."""
        return self._expires


class UpdateRequest(Request):
    """``DeepContext.update``: a memory's new text (and metadata), DeepContext 0.1's edit."""

    operation: ClassVar[str] = "update"

    memory_id: MemoryId
    text: Annotated[str, BeforeValidator(message_text), Field(description="The new text (re-embedded)")]
    user_id: UserId
    metadata: Metadata = Field(default=None, description="Replaces the memory's metadata")


def _progress(value: Any, info: ValidationInfo) -> Any:
    if value is not None and not callable(value):
        raise ValidationError("progress must be a function of (done, total)", field="progress")
    return value


class ImportRequest(Request):
    """``DeepContext.import_records``: an export restored, in one transaction or in parts."""

    operation: ClassVar[str] = "import_records"

    records: Annotated[Iterable[Mapping[str, Any]], SkipValidation] = Field(description="Records of an export")
    user_id: OptionalId = Field(default=None, description="Import into this user (default: the exported one)")
    part_size: Annotated[int | None, Field(ge=1)] = Field(
        default=None, description="Records per transaction; resumable after an interruption"
    )
    progress: Annotated[Callable[[int, int], None] | None, PlainValidator(_progress)] = Field(
        default=None, description="Called with (records done, records in all)"
    )
    defer_vector_index: Flag = Field(
        default=False, description="PostgreSQL: build the HNSW index once after the import instead of per row"
    )


#: every operation's request, by the facade method it serves
REQUESTS: dict[str, type[Request]] = {
    r.operation: r for r in (AddRequest, SearchRequest, ContextRequest, ListRequest, EditRequest, UpdateRequest, ImportRequest)
}
