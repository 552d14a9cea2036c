"""mem0's ``config`` dict (``MemoryConfig`` of mem0 2.2.1) read as deepcontext settings.

:func:`read_config` maps the ``llm``, ``embedder`` and ``vector_store`` sections onto
:class:`~deepcontext.settings.DeepContextSettings` names. What the dict asks for and deepcontext
cannot do raises :class:`~deepcontext.errors.ValidationError` naming the key and what to set
instead; what does not change what a user sees (sampling parameters, another vector store, the
history file, a reranker) is accepted, the storage and reranker choices with one INFO log line.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from deepcontext.errors import ValidationError
from deepcontext.settings import DeepContextSettings, EmbedderKind, LLMProvider

__all__ = ["Mem0Config", "read_config"]

log = logging.getLogger("deepcontext")

#: top-level keys of mem0's MemoryConfig, and the 1.x keys scripts still carry
KNOWN_KEYS = (
    "llm", "embedder", "vector_store", "history_db_path", "reranker", "version",
    "custom_instructions", "custom_fact_extraction_prompt", "custom_update_memory_prompt", "graph_store",
)  # fmt: skip

_PROMPT_KEYS = ("custom_instructions", "custom_fact_extraction_prompt", "custom_update_memory_prompt")

# --- llm: the keys of mem0's provider config classes (a key another class takes is a TypeError there)
_LLM_COMMON = {
    "model", "api_key", "temperature", "max_tokens", "top_p", "top_k", "enable_vision", "vision_details",
    "reasoning_effort", "http_client_proxies", "is_reasoning_model",
}  # fmt: skip
_OPENAI_KEYS = {
    "openai_base_url", "models", "route", "openrouter_base_url", "site_url", "app_name", "store", "response_callback",
}  # fmt: skip
_LLM_KEYS: dict[str, set[str]] = {
    "openai": _OPENAI_KEYS,
    "openai_structured": _OPENAI_KEYS,
    "ollama": {"ollama_base_url"},
    "lmstudio": {"lmstudio_base_url", "lmstudio_response_format"},
    "vllm": {"vllm_base_url"},
    "deepseek": {"deepseek_base_url"},
    "litellm": set(),
}
#: OpenAI-compatible servers: (base URL key, mem0's default URL, environment variables mem0 reads for
#: the URL and the key, mem0's default model)
_SERVERS: dict[str, tuple[str, str, str | None, str | None, str]] = {
    "ollama": ("ollama_base_url", "http://localhost:11434", None, None, "llama3.1:70b"),
    "lmstudio": (
        "lmstudio_base_url", "http://localhost:1234/v1", None, None,
        "lmstudio-community/Meta-Llama-3.1-70B-Instruct-GGUF/Meta-Llama-3.1-70B-Instruct-IQ2_M.gguf",
    ),
    "vllm": ("vllm_base_url", "http://localhost:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY", "Qwen/Qwen2.5-32B-Instruct"),
    "deepseek": ("deepseek_base_url", "https://api.deepseek.com", "DEEPSEEK_API_BASE", "DEEPSEEK_API_KEY", "deepseek-chat"),
}  # fmt: skip

# --- embedder: mem0 takes every key for every provider (BaseEmbedderConfig) and uses its provider's
_EMBEDDER_KEYS = {
    "model", "api_key", "embedding_dims", "ollama_base_url", "openai_base_url", "model_kwargs",
    "huggingface_base_url", "azure_kwargs", "http_client_proxies", "vertex_credentials_json",
    "memory_add_embedding_type", "memory_update_embedding_type", "memory_search_embedding_type",
    "output_dimensionality", "lmstudio_base_url", "aws_access_key_id", "aws_secret_access_key",
    "aws_session_token", "aws_region",
}  # fmt: skip
_LOCAL_MODELS = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")

# --- vector_store: pgvector's fields (mem0 refuses others)
_PGVECTOR_KEYS = {
    "dbname", "collection_name", "embedding_model_dims", "user", "password", "host", "port", "diskann", "hnsw",
    "minconn", "maxconn", "sslmode", "connection_string", "connection_pool",
}  # fmt: skip

_OPENAI_COMPATIBLE = "embedder='openai' with embedding_base_url= an OpenAI-compatible /embeddings server and embedding_model="


@dataclass
class Mem0Config:
    """What a mem0 config asks of deepcontext: ``settings`` (keyword arguments of
    :class:`~deepcontext.DeepContext`) and what is accepted without being used."""

    settings: dict[str, Any] = field(default_factory=dict)
    #: the config's LLM provider, when it configures one (checked against the engine's settings)
    llm: str | None = None
    #: the config asks for OpenAI's own embeddings (which need a key)
    openai_embeddings: bool = False
    #: storage keys not used: the data goes to deepcontext's database
    storage: list[str] = field(default_factory=list)
    reranker: str | None = None

    def check(self, settings: DeepContextSettings) -> None:
        """Refuse what the engine's settings cannot honour (an LLM or OpenAI embeddings without a
        key would silently run offline, or fail at the first call); log what is not used."""
        if self.llm is not None:
            from deepcontext.llm.factory import backend_configs

            if not backend_configs(settings):
                env = "OPENROUTER_API_KEY" if settings.llm_provider is LLMProvider.OPENROUTER else "OPENAI_API_KEY"
                raise ValidationError(
                    f"llm.config.api_key: the config's llm ({self.llm}) has no API key: set llm.config.api_key "
                    f"or {env} in the environment, or remove 'llm' to run offline",
                    field="llm.config.api_key",
                )
        if (
            self.openai_embeddings
            and settings.embedding_base_url is None
            and not (settings.embedding_api_key or settings.openai_api_key)
        ):
            raise ValidationError(
                "embedder.config.api_key: the config's embedder (openai) has no API key: set "
                "embedder.config.api_key or OPENAI_API_KEY in the environment, or remove 'embedder' "
                "for the local model",
                field="embedder.config.api_key",
            )
        if self.storage:
            log.info(
                "deepcontext.compat.mem0: the config's %s not used: memories, vectors and history are kept in %s (database_url)",
                " and ".join(self.storage) + (" is" if len(self.storage) == 1 else " are"),
                _shown_url(settings.resolved_database_url),
            )
        if self.reranker is not None:
            log.info(
                "deepcontext.compat.mem0: the config's reranker (%s) is not used: every search is rescored",
                self.reranker,
            )


def read_config(config: Any, given: Mapping[str, Any] | None = None) -> Mem0Config:
    """The settings mem0's ``config`` (a dict, or mem0's ``MemoryConfig``) asks for. ``given`` are
    the keyword settings passed with it: they win, and one choosing a backend (``llm_provider`` or
    an ``llm``, ``embedder``, ``database_url``) replaces the config's section for it."""
    given = given or {}
    out = Mem0Config()
    if config is None:
        return out
    if hasattr(config, "model_dump") and not isinstance(config, Mapping):  # mem0's MemoryConfig
        config = config.model_dump(exclude_unset=True)
    if not isinstance(config, Mapping):
        raise ValidationError("config must be mem0's configuration dict", field="config")
    unknown = sorted(str(k) for k in config if k not in KNOWN_KEYS)
    if unknown:
        raise ValidationError(
            f"unknown mem0 config key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(KNOWN_KEYS)}",
            field=unknown[0],
        )
    for key in _PROMPT_KEYS:
        if config.get(key):
            raise ValidationError(
                f"{key} is not supported: deepcontext extracts memories with its own prompts; remove {key} "
                "(metadata= on add() tags memories, search filters select them)",
                field=key,
            )
    graph = config.get("graph_store")
    if graph and (not isinstance(graph, Mapping) or graph.get("provider") or graph.get("config")):
        raise ValidationError(
            "graph_store is not supported: deepcontext links related memories in its own database and "
            "searches those links (graph_weight, graph_depth); remove graph_store",
            field="graph_store",
        )
    if config.get("llm") is not None and "llm_provider" not in given and "llm" not in given:
        out.llm = _read_llm(_section(config, "llm", "openai"), out.settings)
    if config.get("embedder") is not None and "embedder" not in given:
        out.openai_embeddings = _read_embedder(_section(config, "embedder", "openai"), out.settings)
    if config.get("vector_store") is not None:
        provider, conf = _section(config, "vector_store", "qdrant")
        if provider == "pgvector" and not given.get("database_url"):
            out.settings["database_url"] = _pgvector_url(conf)
        else:
            collection = conf.get("collection_name")
            out.storage.append(f"vector_store ({provider}{f', collection {collection!r}' if collection else ''})")
    if config.get("history_db_path"):
        out.storage.append("history_db_path")
    reranker = config.get("reranker")
    if reranker:
        out.reranker = str(reranker.get("provider", "cohere")) if isinstance(reranker, Mapping) else "given"
    return out


def _section(config: Mapping[str, Any], name: str, default: str) -> tuple[str, Mapping[str, Any]]:
    """(provider, config) of one ``{"provider": ..., "config": {...}}`` section."""
    section = config[name]
    if not isinstance(section, Mapping):
        raise ValidationError(f"{name} must be a dict with 'provider' and 'config'", field=name)
    extra = sorted(str(k) for k in section if k not in ("provider", "config"))
    if extra:
        raise ValidationError(f"{name}: unknown key {extra[0]!r}; a section has 'provider' and 'config'", field=name)
    provider = section.get("provider", default)
    if not isinstance(provider, str) or not provider:
        raise ValidationError(f"{name}.provider must be a provider name", field=f"{name}.provider")
    conf = section.get("config") or {}
    if not isinstance(conf, Mapping):
        if not hasattr(conf, "model_dump"):
            raise ValidationError(f"{name}.config must be a dict", field=f"{name}.config")
        conf = conf.model_dump(exclude_unset=True)
    return provider, conf


def _read_llm(section: tuple[str, Mapping[str, Any]], out: dict[str, Any]) -> str:
    provider, conf = section
    if provider not in _LLM_KEYS:
        model = conf.get("model") or "<model>"
        raise ValidationError(
            f"llm provider {provider!r} is not available here: pass llm_provider='litellm', "
            f"llm_model='{provider}/{model}' (in litellm's naming; litellm reads the provider's key from its "
            "environment variable) as keyword arguments of Memory, which replace the config's llm",
            field="llm.provider",
        )
    allowed = _LLM_COMMON | _LLM_KEYS[provider]
    for key in conf:
        if key not in allowed:
            raise ValidationError(
                f"llm.config.{key}: not a setting of mem0's {provider} llm; known: {', '.join(sorted(allowed))}",
                field=f"llm.config.{key}",
            )
    refusals = {
        "enable_vision": "images in messages are not described (deepcontext reads their text); remove it",
        "http_client_proxies": "set HTTPS_PROXY / HTTP_PROXY in the environment instead (the OpenAI client reads them)",
        "response_callback": "deepcontext calls no callback with LLM responses; remove it",
        "models": "OpenRouter model lists are not used: set llm_model, and list other models as llm_backends with llm_fallback",
        "store": "deepcontext does not ask OpenAI to store completions; remove it",
    }
    for key, why in refusals.items():
        if conf.get(key):
            raise ValidationError(f"llm.config.{key} is not supported: {why}", field=f"llm.config.{key}")
    model = conf.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValidationError("llm.config.model must be a model name", field="llm.config.model")
    api_key = conf.get("api_key") or None
    if provider in ("openai", "openai_structured"):
        if provider == "openai" and os.environ.get("OPENROUTER_API_KEY"):
            # as mem0's openai llm: with this variable set, it goes to OpenRouter with that key
            out["llm_provider"] = LLMProvider.OPENROUTER.value
            out["llm_base_url"] = conf.get("openrouter_base_url") or os.environ.get("OPENROUTER_API_BASE") or None
        else:
            out["llm_provider"] = LLMProvider.OPENAI.value
            out["llm_base_url"] = conf.get("openai_base_url") or None
            if api_key is not None:
                out["llm_api_key" if out["llm_base_url"] else "openai_api_key"] = api_key
        if model:
            out["llm_model"] = model
    elif provider == "litellm":
        out["llm_provider"] = LLMProvider.LITELLM.value
        if model:
            out["llm_model"] = model
        if api_key is not None:
            out["llm_api_key"] = api_key
    else:
        url_key, default_url, url_env, key_env, default_model = _SERVERS[provider]
        url = str(conf.get(url_key) or (os.environ.get(url_env) if url_env else None) or default_url).rstrip("/")
        if provider == "ollama" and not url.endswith("/v1"):
            url += "/v1"  # Ollama's OpenAI-compatible API
        api_key = api_key or (os.environ.get(key_env) if key_env else None)
        if provider == "deepseek" and not api_key:
            raise ValidationError(
                "llm.config.api_key: the config's llm (deepseek) has no API key: set llm.config.api_key "
                "or DEEPSEEK_API_KEY in the environment",
                field="llm.config.api_key",
            )
        out.update(llm_provider=LLMProvider.OPENAI.value, llm_base_url=url, llm_model=model or default_model)
        if api_key:
            out["llm_api_key"] = api_key
    return provider


def _read_embedder(section: tuple[str, Mapping[str, Any]], out: dict[str, Any]) -> bool:
    """Fill ``out``; True when the embeddings come from OpenAI itself (a key is needed)."""
    provider, conf = section
    for key in conf:
        if key not in _EMBEDDER_KEYS:
            raise ValidationError(
                f"embedder.config.{key}: not a setting of mem0's embedders; known: {', '.join(sorted(_EMBEDDER_KEYS))}",
                field=f"embedder.config.{key}",
            )
    if conf.get("http_client_proxies"):
        raise ValidationError(
            "embedder.config.http_client_proxies is not supported: set HTTPS_PROXY / HTTP_PROXY in the "
            "environment instead (the OpenAI client reads them)",
            field="embedder.config.http_client_proxies",
        )
    model, api_key, dims = conf.get("model") or None, conf.get("api_key") or None, conf.get("embedding_dims")
    if model is not None and not isinstance(model, str):
        raise ValidationError("embedder.config.model must be a model name", field="embedder.config.model")
    if provider == "openai":
        url = conf.get("openai_base_url") or None
        out.update(embedder=EmbedderKind.OPENAI.value, embedding_model=model or "text-embedding-3-small")
        out["embedding_base_url"] = url
        if api_key is not None:
            out["embedding_api_key"] = api_key
        if dims is not None:
            out["embedding_dimensions"] = dims
        return url is None
    if provider == "huggingface" and not conf.get("huggingface_base_url"):
        if model is not None and model not in _LOCAL_MODELS:
            raise ValidationError(
                f"embedder.config.model: {model!r} is not available: deepcontext's local embedder is "
                f"all-MiniLM-L6-v2 only; for another model set {_OPENAI_COMPATIBLE}{model!r} "
                "(e.g. a text-embeddings-inference server), or remove the model for all-MiniLM-L6-v2",
                field="embedder.config.model",
            )
        if dims is not None and dims != 384:
            raise ValidationError(
                f"embedder.config.embedding_dims: all-MiniLM-L6-v2 has 384 dimensions, not {dims!r}; remove it",
                field="embedder.config.embedding_dims",
            )
        if conf.get("model_kwargs"):
            raise ValidationError(
                "embedder.config.model_kwargs is not supported: the local embedder runs all-MiniLM-L6-v2 on "
                "onnxruntime (CPU); remove it",
                field="embedder.config.model_kwargs",
            )
        out["embedder"] = EmbedderKind.LOCAL.value
        return False
    servers = {  # OpenAI-compatible /embeddings endpoints: (URL, mem0's default model); mem0 sends no size to them
        "ollama": (str(conf.get("ollama_base_url") or "http://localhost:11434").rstrip("/"), "nomic-embed-text"),
        "huggingface": (str(conf.get("huggingface_base_url") or "").rstrip("/"), "tei"),
        "lmstudio": (
            str(conf.get("lmstudio_base_url") or "http://localhost:1234/v1").rstrip("/"),
            "nomic-ai/nomic-embed-text-v1.5-GGUF/nomic-embed-text-v1.5.f16.gguf",
        ),
    }
    if provider not in servers:
        raise ValidationError(
            f"embedder provider {provider!r} is not available here: deepcontext embeds with its local "
            f"all-MiniLM-L6-v2 (remove 'embedder') or any OpenAI-compatible server: pass {_OPENAI_COMPATIBLE}... "
            "as keyword arguments of Memory, which replace the config's embedder",
            field="embedder.provider",
        )
    if provider == "huggingface" and conf.get("model_kwargs"):
        raise ValidationError(
            "embedder.config.model_kwargs is not supported: deepcontext sends the model and the texts only; remove it",
            field="embedder.config.model_kwargs",
        )
    url, default_model = servers[provider]
    if provider == "ollama" and not url.endswith("/v1"):
        url += "/v1"  # Ollama's OpenAI-compatible API
    out.update(embedder=EmbedderKind.OPENAI.value, embedding_base_url=url, embedding_model=model or default_model)
    if api_key is not None:
        out["embedding_api_key"] = api_key
    return False


def _pgvector_url(conf: Mapping[str, Any]) -> str:
    for key in conf:
        if key not in _PGVECTOR_KEYS:
            raise ValidationError(
                f"vector_store.config.{key}: not a setting of mem0's pgvector; known: {', '.join(sorted(_PGVECTOR_KEYS))}",
                field=f"vector_store.config.{key}",
            )
    if conf.get("connection_pool") is not None:
        raise ValidationError(
            "vector_store.config.connection_pool is not supported: give connection_string (or dbname, user, "
            "password, host, port), or database_url='postgresql://...'",
            field="vector_store.config.connection_pool",
        )
    query = {"sslmode": str(conf["sslmode"])} if conf.get("sslmode") else {}
    dsn = conf.get("connection_string")
    if dsn:
        dsn = str(dsn).strip()
        if re.match(r"postgres(ql)?(\+\w+)?://", dsn):
            return dsn
        # libpq's "key=value" form
        parts = {k: v.strip("'") for k, v in re.findall(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn)}
        named = {"user", "password", "host", "port", "dbname"}
        conf = {**{k: v for k, v in parts.items() if k in named}}
        query = {**{k: v for k, v in parts.items() if k not in named}, **query}
    elif not (conf.get("user") or conf.get("password")) or not (conf.get("host") or conf.get("port")):
        raise ValidationError(
            "vector_store.config: pgvector needs connection_string, or user and password with host and port",
            field="vector_store.config",
        )
    user, password, port = conf.get("user"), conf.get("password"), conf.get("port")
    auth = quote(str(user), safe="") if user else ""
    if password:
        auth += ":" + quote(str(password), safe="")
    url = f"postgresql://{auth + '@' if auth else ''}{conf.get('host') or 'localhost'}{f':{int(port)}' if port else ''}"
    url += "/" + quote(str(conf.get("dbname") or "postgres"), safe="")
    return url + ("?" + urlencode(query) if query else "")


def _shown_url(url: str) -> str:
    """``url`` without its password, for logs."""
    from deepcontext.store import shown_url

    return shown_url(url)
