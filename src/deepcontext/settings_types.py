"""The types of some settings' values: the LLM provider and the way JSON answers are asked for, one
named LLM backend's own settings, the embedder kind with the local embedder's model, and how a list
setting given as one string is read. The LLM and embedder packages name these types; they stand
apart from :mod:`deepcontext.settings`, which holds the settings object itself (every knob, its
default and its checks) and re-exports them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["EmbedderKind", "JSONMode", "LLMBackendConfig", "LLMProvider"]


class LLMProvider(str, Enum):
    """Where LLM calls go. ``none`` keeps everything offline (rule-based extraction)."""

    NONE = "none"
    OPENAI = "openai"  # also any OpenAI-compatible server through llm_base_url (vLLM, Ollama, LM Studio, DeepSeek)
    OPENROUTER = "openrouter"
    LITELLM = "litellm"


class JSONMode(str, Enum):
    """How structured (JSON) answers are requested from a backend.

    ``auto``: a JSON schema response_format first; if the backend rejects it (HTTP 400/422), a plain
    JSON-object response_format, then instructions in the prompt only (remembered per backend).
    The prompt always carries the JSON instructions and the schema, whatever the mode.
    """

    AUTO = "auto"
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


class LLMBackendConfig(BaseModel):
    """One named LLM backend (an item of ``llm_backends``). Unset values fall back to the llm_* settings."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$", description="Name used by llm_fallback and routing")
    provider: LLMProvider = LLMProvider.OPENAI
    model: str = Field(min_length=1)
    base_url: str | None = Field(default=None, description="Default: OpenAI's, or OpenRouter's for openrouter")
    api_key: SecretStr | None = Field(default=None, description="Default: the provider's key among the settings")
    timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds per call; default llm_timeout")
    max_retries: int | None = Field(default=None, ge=0, le=10, description="Default llm_max_retries")
    json_mode: JSONMode | None = None

    @field_validator("provider")
    @classmethod
    def _not_none(cls, v: LLMProvider) -> LLMProvider:
        if v is LLMProvider.NONE:
            raise ValueError("a backend's provider cannot be 'none'; leave the backend out instead")
        return v


class EmbedderKind(str, Enum):
    LOCAL = "local"  # all-MiniLM-L6-v2 on onnxruntime, bundled weights, no network
    OPENAI = "openai"  # any OpenAI-compatible /embeddings endpoint
    HASH = "hash"  # deterministic feature hashing: for tests and tiny installs, not for quality


#: names of the local embedder's model, the default of ``embedding_model`` first
_LOCAL_MODELS: tuple[str, ...] = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
_LOCAL_DIMENSIONS = 384


def _split_list(v: Any) -> Any:
    """A list setting given as a string: a JSON list, or comma-separated items."""
    if isinstance(v, str):
        text = v.strip()
        if text.startswith("["):
            import json

            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return v
