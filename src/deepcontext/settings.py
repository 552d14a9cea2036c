"""Settings: one pydantic-settings object, built once when an engine is constructed and passed down.

Sources, highest priority first: arguments given in code, environment variables prefixed with
``DEEPCONTEXT_``, a ``.env`` file in the working directory, the defaults below. Nothing here runs at
import time: the environment is read when :class:`DeepContextSettings` is instantiated. The types of
some values (LLM providers and backends, embedder kinds) are :mod:`deepcontext.settings_types`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from deepcontext.settings_types import (
    _LOCAL_DIMENSIONS,
    _LOCAL_MODELS,
    EmbedderKind,
    JSONMode,
    LLMBackendConfig,
    LLMProvider,
    _split_list,
)

__all__ = [
    "KEYWORD_CONTEXT_TURNS",
    "DeepContextSettings",
    "EmbedderKind",
    "JSONMode",
    "LLMBackendConfig",
    "LLMProvider",
    "explain_settings_error",
]

#: earlier turns indexed for keyword search with each message's memory (fitted on LoCoMo dev by
#: leave-one-conversation-out cross-validation over 0, 1 and 2)
KEYWORD_CONTEXT_TURNS = 2


def _default_data_dir() -> Path:
    return Path("~/.deepcontext").expanduser()


class DeepContextSettings(BaseSettings):
    """Every knob of deepcontext. Each one is described in docs/configuration.md."""

    model_config = SettingsConfigDict(
        env_prefix="DEEPCONTEXT_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        validate_default=True,
    )

    # --- storage -------------------------------------------------------------------------------
    database_url: str = Field(
        default="",
        description="sqlite:///path/to/file.db (default: a file under data_dir) or postgresql://user@host/db",
    )
    data_dir: Path = Field(default_factory=_default_data_dir, description="Where the default SQLite file lives")
    sqlite_busy_timeout_ms: int = Field(default=60_000, ge=0)
    sqlite_reserve_mb: float = Field(
        default=0,
        ge=0,
        le=1_048_576,
        description=(
            "SQLite backend: disk space kept in a file next to the database (<file>-reserve) and given up when "
            "the disk is full, so delete_user can still free space; 0: none"
        ),
    )
    vector_cache_max_rows: int = Field(
        default=2_000_000, ge=0, description="Vectors kept in RAM across users (SQLite backend); LRU beyond"
    )
    vector_index_min_rows: int = Field(
        default=20_000,
        ge=0,
        description=(
            "SQLite backend: from this many live vectors of one user, searches take candidates from an HNSW "
            "graph (usearch, built in the background, rescored exactly) instead of scanning them all; 0: always scan"
        ),
    )
    vector_index_files: bool = Field(
        default=True,
        description=(
            "SQLite backend: save big users' HNSW graphs and vector matrices in <database>.vectors/ beside the "
            "file, so a restart reads them instead of building the graphs and reading every row"
        ),
    )
    vector_read_ahead: bool = Field(
        default=True,
        description=(
            "SQLite backend: when the engine opens, read the saved vectors and graphs of the users saved most "
            "recently (as many as vector_cache_max_rows holds) in the background, so their first searches neither "
            "read every row nor wait for a graph"
        ),
    )
    db_pool_size: int = Field(
        default=5,
        ge=1,
        description="PostgreSQL connections per pool; a process has two pools (the second for searches' vector legs)",
    )
    db_index_build_memory_mb: int = Field(
        default=1024,
        ge=64,
        le=1_048_576,
        description=(
            "PostgreSQL: maintenance_work_mem (MB) for building the HNSW index after a bulk import or a repair; "
            "pgvector builds in memory up to this and on disk beyond it, many times slower (384-dimension "
            "vectors need about 2 KB per memory)"
        ),
    )

    # --- LLM (seed-compatible names) -----------------------------------------------------------
    llm_provider: LLMProvider = LLMProvider.OPENAI
    openai_api_key: SecretStr | None = None
    openrouter_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (Ollama, vLLM, ...)")
    llm_api_key: SecretStr | None = Field(default=None, description="Key for llm_base_url, if it needs one")
    llm_backends: list[LLMBackendConfig] = Field(
        default_factory=list,
        description="Extra named backends, JSON in the environment: "
        'DEEPCONTEXT_LLM_BACKENDS=\'[{"name": "local", "base_url": "http://localhost:11434/v1", "model": "qwen3"}]\'',
    )
    llm_default_backend: str | None = Field(
        default=None, description="Backend tried first; default: the one from llm_provider, else the first listed"
    )
    llm_fallback: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Backends tried in this order after the default fails (JSON list or comma-separated names)",
    )
    llm_timeout: float = Field(default=60.0, gt=0, le=3600, description="Seconds per LLM call (per chunk when streaming)")
    llm_max_retries: int = Field(default=2, ge=0, le=10, description="Retries per backend on timeouts, 429 and 5xx")
    llm_retry_max_wait: float = Field(
        default=30.0, ge=0, le=600, description="Longest wait between retries, Retry-After included"
    )
    llm_max_concurrency: int = Field(default=8, ge=1, le=1024, description="LLM calls in flight at once per engine")
    llm_json_mode: JSONMode = JSONMode.AUTO

    @field_validator("llm_fallback", mode="before")
    @classmethod
    def _split_fallback(cls, v: Any) -> Any:
        return _split_list(v)

    @model_validator(mode="after")
    def _check_llm_backends(self) -> DeepContextSettings:
        names = [b.name for b in self.llm_backends]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"llm_backends: duplicate backend names {duplicates}")
        return self

    # --- embeddings ----------------------------------------------------------------------------
    embedder: EmbedderKind = EmbedderKind.LOCAL
    embedding_model: str = Field(
        default="all-MiniLM-L6-v2",
        description="Model name; for embedder=openai, e.g. text-embedding-3-small (the local embedder is all-MiniLM-L6-v2 only)",
    )
    embedding_dimensions: int | None = Field(
        default=None, ge=8, le=8192, description="Vector size; default: the embedder's native size (local: 384 only)"
    )
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_batch_size: int | None = Field(
        default=None,
        ge=1,
        le=2048,
        description="Texts per model batch (local) or per request (openai); default: the embedder's (16 / 256)",
    )

    @model_validator(mode="after")
    def _check_embedding_model(self) -> DeepContextSettings:
        # DeepContext 0.1 configs set these for OpenAI; an embedder that cannot honour them refuses
        # rather than embedding with another model or size than the one asked for
        model, dims = self.embedding_model, self.embedding_dimensions
        if self.embedder is EmbedderKind.LOCAL:
            if model not in _LOCAL_MODELS:
                raise ValueError(
                    f"embedding_model={model!r} is not available to the local embedder, which is "
                    f"{_LOCAL_MODELS[0]} only: set embedder='openai' (DEEPCONTEXT_EMBEDDER=openai) "
                    "to embed with it, or remove embedding_model"
                )
            if dims is not None and dims != _LOCAL_DIMENSIONS:
                raise ValueError(
                    f"embedding_dimensions={dims} is not available to the local embedder "
                    f"({_LOCAL_MODELS[0]} has {_LOCAL_DIMENSIONS}): set embedder='openai' "
                    "for another size, or remove embedding_dimensions"
                )
        elif self.embedder is EmbedderKind.HASH and model not in _LOCAL_MODELS:
            raise ValueError(
                f"embedding_model={model!r} is not used by embedder='hash' (feature hashing has no model): "
                "set embedder='openai' to embed with it, or remove embedding_model"
            )
        return self

    # --- memory tuning (seed names and defaults) -------------------------------------------------
    consolidation_threshold: int = Field(default=20, ge=2)
    decay_half_life_days: float = Field(default=7.0, gt=0)
    connection_similarity_threshold: float = Field(default=0.6, ge=-1.0, le=1.0)
    max_connections_per_memory: int = Field(default=5, ge=0, le=100)
    debug: bool = False
    auto_consolidate: bool = True

    # --- lifecycle: decay, consolidation, cleanup (deepcontext.lifecycle) ------------------------
    decay_type_factors: dict[str, float] = Field(
        default_factory=lambda: {"episodic": 1.0, "semantic": 4.0, "procedural": 12.0},
        description="Half-life multiplier per memory type (x decay_half_life_days); 0: never decays. "
        "JSON in the environment: DEEPCONTEXT_DECAY_TYPE_FACTORS='{\"semantic\": 6}'",
    )
    decay_tier_factors: dict[str, float] = Field(
        default_factory=lambda: {"working": 0.5, "short_term": 1.0, "long_term": 10.0},
        description="Half-life multiplier per tier; 0: never decays",
    )
    decay_min_importance: float = Field(
        default=0.05, ge=0.0, le=1.0, description="Importance under which a memory is deactivated (decayed)"
    )
    consolidation_similarity_threshold: float = Field(
        default=0.8, ge=-1.0, le=1.0, description="Cosine at or above which two short-term memories are grouped"
    )
    consolidation_promote_importance: float = Field(
        default=0.8,
        ge=0.0,
        le=2.0,
        description="A short-term memory related to no other moves to long-term alone when its base importance "
        "reaches this (or it was accessed 3 times); above 1: never",
    )
    deleted_retention_days: float = Field(
        default=30.0, ge=0.0, description="Soft-deleted memories are purged for good after this many days"
    )
    lifecycle_lock_timeout: float = Field(
        default=60.0, ge=0.0, description="Seconds run_lifecycle waits for another process's run on the same user"
    )

    @field_validator("decay_type_factors", "decay_tier_factors")
    @classmethod
    def _check_factors(cls, v: dict[str, float], info: Any) -> dict[str, float]:
        names = (
            {"episodic", "semantic", "procedural"}
            if info.field_name == "decay_type_factors"
            else {"working", "short_term", "long_term"}
        )
        unknown = sorted(set(v) - names)
        if unknown:
            raise ValueError(f"unknown keys {unknown}; expected some of {sorted(names)}")
        bad = {k: x for k, x in v.items() if not x >= 0 or x == float("inf")}
        if bad:
            raise ValueError(f"factors must be finite numbers >= 0, got {bad}")
        return v

    # --- ingest --------------------------------------------------------------------------------
    dedup_threshold: float = Field(
        default=0.95, gt=0.0, le=1.0, description="Cosine at or above which a new memory is a duplicate (NOOP)"
    )
    max_message_chars: int = Field(default=32_000, ge=1, description="Largest accepted message or memory text")
    max_messages_per_add: int = Field(default=2_000, ge=1)
    store_turn_memories: bool = Field(
        default=True, description="Keep every message searchable as a working-tier memory of its own"
    )
    keyword_context_turns: int = Field(
        default=KEYWORD_CONTEXT_TURNS,
        ge=0,
        le=5,
        description="Earlier turns of its conversation indexed for keyword search with each message's memory "
        "(the question a reply answers); 0: the message alone. Applies to what is written from then on",
    )
    llm_offline_fallback: bool = Field(
        default=False,
        description="When the LLM fails during an add (after retries and fallback backends): extract with the "
        "offline rules instead of raising the LLMError (default: raise, nothing written)",
    )
    summary_every_turns: int = Field(
        default=20,
        ge=0,
        description="With an LLM: refresh a conversation's running summary in the background after an add once "
        "this many turns arrived since the last one (0: never)",
    )

    # --- retrieval -----------------------------------------------------------------------------
    vector_weight: float = Field(default=0.6, ge=0)
    keyword_weight: float = Field(default=0.6, ge=0)
    graph_weight: float = Field(default=0.15, ge=0)
    rrf_k: int = Field(default=10, ge=1)
    recency_half_life_days: float | None = Field(
        default=None, gt=0, description="Half-life of the recency factor in search; default decay_half_life_days"
    )
    recency_floor: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Smallest recency factor: 0 gives the seed's pure exponential, which buries old memories",
    )
    importance_floor: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Search weighs importance as floor + (1 - floor) x importance; 0 is the seed's raw product",
    )
    graph_depth: int = Field(default=2, ge=0, le=5)
    profile_weight: float = Field(
        default=1.0, ge=0, description="Fusion weight of the profile leg (standing facts for requests); 0: off"
    )
    profile_hard_bonus: float = Field(
        default=0.4, ge=0, le=1, description="Profile leg: cosine bonus of allergies, diets, constraints, instructions"
    )
    profile_time_bonus: float = Field(
        default=0.4,
        ge=0,
        le=1,
        description="Profile leg: cosine bonus of standing facts bearing on time (sleep, shifts, parts of the day) "
        "for requests whose answer is a time",
    )
    profile_margin: float = Field(
        default=0.2,
        ge=0,
        le=2,
        description="Profile leg: standing facts within this of the vector leg's best cosine (with bonuses) take part; "
        "what memories answer directly is not pushed down by unrelated standing facts",
    )
    slot_boost: float = Field(
        default=1.0, ge=0, description="Search weight bonus of memories holding the single-valued fact a question asks"
    )
    outdated_factor: float = Field(
        default=0.5, ge=0, le=1, description="Search weight of a turn whose content a later statement superseded"
    )
    max_query_chars: int = Field(default=4_000, ge=1)
    track_access: bool = Field(default=True, description="Count accesses of returned search results")
    warm_up_embedder: bool = Field(
        default=True,
        description="Load the embedding model in the background when the engine opens (the server: before it "
        "answers), so the first search does not wait for it",
    )

    activity_log: bool | None = Field(
        default=None,
        description="Record search and context calls in the activity log (None: calls through the REST API and "
        "MCP are recorded, the library's and the CLI's are not)",
    )
    activity_max_calls: int = Field(
        default=1000, ge=1, le=1_000_000, description="Recorded calls kept per user (the oldest go first)"
    )
    activity_max_age_days: float = Field(
        default=30.0, gt=0, le=36_500, description="Recorded calls older than this many days are removed"
    )
    activity_queue_max: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Recorded calls waiting to be written before new ones are dropped (a database that stopped "
        "answering); /metrics counts the dropped ones",
    )

    # --- server (REST API and MCP; deepcontext.server) -------------------------------------------
    server_host: str = Field(default="127.0.0.1", description="Address `deepcontext serve` binds")
    server_port: int = Field(default=8000, ge=0, le=65535)
    server_workers: int = Field(default=1, ge=1, le=64, description="uvicorn worker processes")
    require_auth: bool = Field(
        default=True,
        description="Require an API key on every endpoint but health; off is refused on a non-loopback address",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Origins allowed by CORS (JSON list or comma-separated); empty: CORS off"
    )
    max_body_bytes: int = Field(default=1_048_576, ge=1024, description="Largest accepted request body")
    max_response_bytes: int = Field(
        default=4_194_304,
        ge=1024,
        description="Largest list response the REST API builds: a longer page ends early with a cursor to the rest",
    )
    local_tenant: str | None = Field(
        default=None,
        description="Tenant used without an API key (serve --no-auth, MCP over stdio); "
        "none: user ids are used as they are, like the library and the CLI",
    )
    mcp_default_user: str | None = Field(default=None, description="MCP tools' user when a call names none")
    metrics_enabled: bool = Field(
        default=False, description="Serve Prometheus metrics at /metrics (behind an API key when keys are required)"
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="`deepcontext serve`'s log: text, or one JSON object per line"
    )
    log_query_strings: bool = Field(
        default=False, description="Write the query strings of /v1 and /ui requests in the access log"
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, v: Any) -> Any:
        return _split_list(v)

    @field_validator("database_url")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()

    @model_validator(mode="after")
    def _seed_compat_keys(self) -> DeepContextSettings:
        # The seed also read the bare OPENAI_API_KEY / OPENROUTER_API_KEY variables.
        if self.openai_api_key is None and os.environ.get("OPENAI_API_KEY"):
            self.openai_api_key = SecretStr(os.environ["OPENAI_API_KEY"])
        if self.openrouter_api_key is None and os.environ.get("OPENROUTER_API_KEY"):
            self.openrouter_api_key = SecretStr(os.environ["OPENROUTER_API_KEY"])
        return self

    # --- derived ---------------------------------------------------------------------------------
    @property
    def resolved_database_url(self) -> str:
        """The database URL to open. The default SQLite file is *not* created here."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'memory.db'}"

    @property
    def backend(self) -> Literal["sqlite", "postgresql"]:
        url = self.resolved_database_url
        scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
        if scheme == "sqlite":
            return "sqlite"
        if scheme in ("postgresql", "postgres"):
            return "postgresql"
        from deepcontext.errors import ConfigurationError

        raise ConfigurationError(
            f"unsupported database_url scheme {scheme!r}: use sqlite:///path.db or postgresql://user@host/db"
        )

    @property
    def effective_recency_half_life_days(self) -> float:
        return self.recency_half_life_days or self.decay_half_life_days

    @classmethod
    def unknown(cls, names: Iterable[str]) -> str | None:
        """What is wrong with ``names`` that name no setting (each with the nearest setting), or
        None. Unknown environment variables are ignored, but a misspelt keyword is a mistake."""
        bad = sorted(set(names) - set(cls.model_fields))
        if not bad:
            return None
        known = list(cls.model_fields)
        hints = [f"{k!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(k, known, 1)) else "") for k in bad]
        return f"unknown setting{'s' if len(bad) > 1 else ''}: {', '.join(hints)}"

    def redacted(self) -> dict[str, Any]:
        """Settings as a dict with secrets masked (for logs and `deepcontext config`)."""
        out = self.model_dump(mode="json")
        for k, v in list(out.items()):
            if isinstance(getattr(self, k, None), SecretStr):
                out[k] = "**********" if v else None
        return out


def explain_settings_error(exc: Exception) -> str:
    """One line for a pydantic error of :class:`DeepContextSettings`: each bad setting with its
    environment variable, what it must be and the value given (secrets left out), instead of
    pydantic's multi-line report with its documentation links."""
    import re

    parse = re.search(r'parsing value for field "(\w+)"', str(exc))
    if parse:  # pydantic-settings' SettingsError: a JSON value in the environment that does not parse
        name = parse.group(1)
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        return f"invalid settings: {name} (DEEPCONTEXT_{name.upper()}): not valid JSON{cause}"
    errors = exc.errors() if hasattr(exc, "errors") else []
    if not errors:
        return "invalid settings: " + " ".join(str(exc).split())
    parts = []
    for e in errors:
        loc = [str(p) for p in e.get("loc", ())]
        name = loc[0] if loc else ""
        msg = str(e.get("msg", "invalid value"))
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        msg = msg[:1].lower() + msg[1:]
        where = ".".join(loc)
        if name in DeepContextSettings.model_fields:
            where = f"{where} (DEEPCONTEXT_{name.upper()})"
        given = ""
        value = e.get("input")
        secret = "key" in name or "secret" in name or "password" in name
        if not secret and isinstance(value, str | int | float | bool) and name:
            shown = repr(value)
            given = f", got {shown if len(shown) <= 60 else shown[:57] + '...'}"
        parts.append(f"{where}: {msg}{given}" if where else f"{msg}{given}")
    return "invalid settings: " + "; ".join(" ".join(p.split()) for p in parts)
