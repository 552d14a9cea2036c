"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Azure-style proxies, vLLM,
Ollama, LM Studio, infinity, ...), through the official ``openai`` SDK (imported on first use).

The vector size is known before the first text is embedded: the ``dimensions`` given, else the native
size of a known OpenAI model, else one probe request, made lazily the first time the size is needed.
Failures become :class:`EmbeddingAPIError` (an :class:`~deepcontext.errors.EmbeddingError`) carrying
the HTTP status; the API key never appears in a message.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import ConfigurationError, EmbeddingError, ValidationError

if TYPE_CHECKING:
    from pydantic import SecretStr

    from deepcontext.settings import DeepContextSettings

__all__ = ["KNOWN_DIMENSIONS", "EmbeddingAPIError", "OpenAIEmbedder"]

#: native vector sizes of OpenAI's embedding models
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
#: models that accept the ``dimensions`` request parameter (shortened embeddings)
_SHORTENABLE = {"text-embedding-3-small", "text-embedding-3-large"}
_DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
_LOCAL_DEFAULT_MODEL = "all-MiniLM-L6-v2"  # the settings' default, meant for the local embedder
_MAX_MESSAGE = 300
_KEY_LIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-*.]{6,}")  # what servers echo of a key ("sk-ab***yz")


class EmbeddingAPIError(EmbeddingError):
    """An embedding request failed. ``status_code`` is the HTTP status, or None without a response."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def _secret(value: str | SecretStr | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    return value.get_secret_value() or None


class OpenAIEmbedder(Embedder):
    """Embeddings over an OpenAI-compatible HTTP API (sync client; retries and timeout by the SDK).

    ``base_url`` None means OpenAI itself, which needs ``api_key``; a local server (``base_url`` given)
    may do without one. ``dimensions`` asks for that vector size: it is sent as the request's
    ``dimensions`` parameter unless it is the model's known native size (servers that reject the
    parameter work when it is left out, and the size is then probed once).
    """

    def __init__(
        self,
        model: str = _DEFAULT_OPENAI_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 256,
        cache_size: int = 4096,
    ) -> None:
        super().__init__(cache_size=cache_size)
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("model must be a non-empty string", field="model")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1):
            raise ValidationError(f"dimensions must be a positive int or None, got {dimensions!r}", field="dimensions")
        if not timeout > 0:
            raise ValidationError(f"timeout must be > 0, got {timeout!r}", field="timeout")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValidationError(f"max_retries must be an int >= 0, got {max_retries!r}", field="max_retries")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be a positive int, got {batch_size!r}", field="batch_size")
        key = _secret(api_key)
        if key is None and base_url is None:
            raise ConfigurationError(
                "OpenAI embeddings need an API key: set DEEPCONTEXT_EMBEDDING_API_KEY (or OPENAI_API_KEY), "
                "or point DEEPCONTEXT_EMBEDDING_BASE_URL at a server that needs none"
            )
        self.model = model.strip()
        self.base_url = base_url.rstrip("/") if base_url else None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.batch_size = batch_size
        self._api_key = key or "not-needed"  # local servers ignore it; the SDK insists on one
        native = KNOWN_DIMENSIONS.get(self.model)
        self._dimensions: int | None = dimensions or native
        self._send_dimensions = dimensions is not None and dimensions != native
        if self._send_dimensions and native is not None and self.model not in _SHORTENABLE:
            raise ConfigurationError(f"{self.model} has {native} dimensions and cannot be shortened to {dimensions}")
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._probe_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: DeepContextSettings) -> OpenAIEmbedder:
        """Built from ``embedding_model`` / ``embedding_base_url`` / ``embedding_api_key`` (else
        ``openai_api_key``) / ``embedding_dimensions`` / ``embedding_batch_size``."""
        model = settings.embedding_model
        if settings.embedding_base_url is None and model == _LOCAL_DEFAULT_MODEL:
            model = _DEFAULT_OPENAI_MODEL  # the settings' default names the local model, which OpenAI lacks
        return cls(
            model,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key or settings.openai_api_key,
            dimensions=settings.embedding_dimensions,
            **({"batch_size": settings.embedding_batch_size} if settings.embedding_batch_size else {}),
        )

    # -- sizes and ids (probed lazily when unknown) ---------------------------------------------
    @property
    def dimensions(self) -> int:  # type: ignore[override]
        """Vector size; the first access may make one request when the model's size is unknown."""
        if self._dimensions is None:
            with self._probe_lock:
                if self._dimensions is None:
                    self._dimensions = int(self._request(["dimension probe"]).shape[1])
        return self._dimensions

    @property
    def model_id(self) -> str:  # type: ignore[override]
        return f"openai/{self.model}/{self.dimensions}"

    # -- Embedder -----------------------------------------------------------------------------
    def embed_batch(self, texts: list[str]) -> np.ndarray:
        """One request for ``texts``; rows in input order."""
        if not texts:
            return np.empty((0, self.dimensions), dtype=np.float32)
        return self._request(texts)

    def close(self) -> None:
        """Close the HTTP client (a new one is made on the next call)."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- internals ----------------------------------------------------------------------------
    def _get_client(self) -> Any:
        client = self._client
        if client is None:
            with self._client_lock:
                if self._client is None:
                    import openai

                    self._client = openai.OpenAI(
                        api_key=self._api_key,
                        base_url=self.base_url,
                        timeout=self.timeout,
                        max_retries=self.max_retries,
                    )
                client = self._client
        return client

    def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        # The API rejects empty strings; a lone space embeds "nothing" the same way every time.
        payload = [t if t.strip() else " " for t in texts]
        kwargs: dict[str, Any] = {"model": self.model, "input": payload, "encoding_format": "float"}
        if self._send_dimensions:
            kwargs["dimensions"] = self._dimensions
        where = self.base_url or "api.openai.com"
        try:
            response = self._get_client().embeddings.create(**kwargs)
        except openai.APIStatusError as exc:
            raise EmbeddingAPIError(
                f"embedding request to {where} failed: HTTP {exc.status_code}: {self._clean(exc)}",
                status_code=exc.status_code,
            ) from None
        except openai.APITimeoutError:
            raise EmbeddingAPIError(f"embedding request to {where} timed out after {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            raise EmbeddingAPIError(f"cannot reach {where}: {self._clean(exc)}") from None
        except openai.OpenAIError as exc:
            raise EmbeddingAPIError(f"embedding request to {where} failed: {self._clean(exc)}") from None
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingAPIError(f"{where} returned {len(data)} embeddings for {len(texts)} texts")
        try:
            arr = np.asarray([d.embedding for d in data], dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingAPIError(f"{where} returned embeddings that are not float vectors: {exc}") from None
        if arr.ndim != 2:
            raise EmbeddingAPIError(f"{where} returned embeddings of uneven lengths")
        return arr

    def _clean(self, exc: BaseException) -> str:
        """An error message without the API key, cut to a readable length."""
        body = getattr(exc, "body", None)
        message = None
        if isinstance(body, dict):
            err = body.get("error", body)
            message = err.get("message") if isinstance(err, dict) else None
        text = str(message or exc) or type(exc).__name__
        if self._api_key and self._api_key != "not-needed":
            text = text.replace(self._api_key, "***")
        text = _KEY_LIKE.sub(r"\1-***", text)
        return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."
