"""Building the LLM from settings: :func:`build_llm` returns a :class:`Router`, or None to stay offline."""

from __future__ import annotations

from pydantic import SecretStr

from deepcontext.errors import ConfigurationError
from deepcontext.llm.client import LLM
from deepcontext.llm.openai_compat import OPENROUTER_BASE_URL, OpenAICompatibleLLM
from deepcontext.llm.router import Router
from deepcontext.settings import DeepContextSettings, JSONMode, LLMBackendConfig, LLMProvider

__all__ = ["backend_configs", "build_backend", "build_llm"]


def _key(*candidates: SecretStr | None) -> SecretStr | None:
    for c in candidates:
        if c is not None and c.get_secret_value():
            return c
    return None


def _seed_backend(settings: DeepContextSettings) -> LLMBackendConfig | None:
    """The backend described by the seed's settings (llm_provider, llm_model, keys, llm_base_url), if usable."""
    provider = settings.llm_provider
    base_url: str | None
    if provider is LLMProvider.NONE:
        return None
    if provider is LLMProvider.OPENROUTER:
        key = _key(settings.openrouter_api_key, settings.llm_api_key)
        base_url = settings.llm_base_url or OPENROUTER_BASE_URL
        if key is None and not settings.llm_base_url:
            return None
    elif provider is LLMProvider.OPENAI:
        key = _key(settings.llm_api_key, settings.openai_api_key)
        base_url = settings.llm_base_url
        if key is None and not base_url:
            return None
    else:  # litellm reads the providers' keys from their own environment variables
        key = _key(settings.llm_api_key)
        base_url = settings.llm_base_url
    return LLMBackendConfig(name=provider.value, provider=provider, model=settings.llm_model, base_url=base_url, api_key=key)


def backend_configs(settings: DeepContextSettings) -> list[LLMBackendConfig]:
    """Every configured backend: the seed-style one first (if configured), then ``llm_backends``."""
    configs: list[LLMBackendConfig] = []
    seed = _seed_backend(settings)
    listed = {b.name for b in settings.llm_backends}
    if seed is not None and seed.name not in listed:
        configs.append(seed)
    configs.extend(settings.llm_backends)
    return configs


def build_backend(config: LLMBackendConfig, settings: DeepContextSettings) -> LLM:
    """One backend from its config; unset values come from the llm_* settings."""
    json_mode = config.json_mode or settings.llm_json_mode
    base_url: str | None
    timeout = config.timeout or settings.llm_timeout
    if config.provider is LLMProvider.LITELLM:
        from deepcontext.llm.litellm_backend import LiteLLMBackend

        return LiteLLMBackend(
            config.model,
            name=config.name,
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=timeout,
            max_retries=config.max_retries,
            json_mode=json_mode,
        )
    if config.provider is LLMProvider.OPENROUTER:
        base_url = config.base_url or OPENROUTER_BASE_URL
        api_key = config.api_key or _key(settings.openrouter_api_key, settings.llm_api_key)
    else:
        base_url = config.base_url
        api_key = config.api_key or (_key(settings.llm_api_key, settings.openai_api_key) if base_url is None else None)
    if api_key is None and base_url is None:
        raise ConfigurationError(
            f"LLM backend {config.name!r}: no API key and no base_url "
            "(set api_key, or base_url for a local server such as Ollama or vLLM)"
        )
    return OpenAICompatibleLLM(
        config.model,
        name=config.name,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=config.max_retries,
        json_mode=json_mode if isinstance(json_mode, JSONMode) else JSONMode(json_mode),
    )


def build_llm(settings: DeepContextSettings) -> Router | None:
    """The LLM the settings describe, as a :class:`Router`, or None when no LLM is configured.

    None (everything runs offline) when ``llm_provider`` is ``none`` and no ``llm_backends`` are
    listed, or when the provider needs a key or a base_url and has neither. The seed's settings are
    honoured: ``llm_provider=openrouter`` goes to OpenRouter with ``openrouter_api_key``;
    ``llm_provider=openai`` uses ``openai_api_key`` (or ``llm_api_key``) and ``llm_base_url``.
    Raises :class:`ConfigurationError` for unknown names in ``llm_default_backend`` / ``llm_fallback``.
    """
    if settings.llm_provider is LLMProvider.NONE and not settings.llm_backends:
        return None
    configs = backend_configs(settings)
    if not configs:
        return None
    names = [c.name for c in configs]
    default = settings.llm_default_backend or names[0]
    for n in [default, *settings.llm_fallback]:
        if n not in names:
            raise ConfigurationError(f"LLM backend {n!r} is not configured; configured: {names}")
    backends = [build_backend(c, settings) for c in configs]
    return Router(
        backends,
        default=default,
        fallback=[n for n in settings.llm_fallback if n != default],
        max_retries=settings.llm_max_retries,
        timeout=settings.llm_timeout,
        max_wait=settings.llm_retry_max_wait,
        max_concurrency=settings.llm_max_concurrency,
    )
