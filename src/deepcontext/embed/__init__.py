"""Embedders: local MiniLM (default), OpenAI-compatible, deterministic hashing (tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from deepcontext.embed.embedder import Embedder, EmbedderStats
from deepcontext.embed.hashing import HashEmbedder

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings

__all__ = ["Embedder", "EmbedderStats", "HashEmbedder", "build_embedder"]


def build_embedder(settings: DeepContextSettings) -> Embedder:
    """The embedder the settings ask for. Heavy imports happen here, not at package import."""
    from deepcontext.settings import EmbedderKind

    kind = settings.embedder
    if kind is EmbedderKind.HASH:
        return HashEmbedder(settings.embedding_dimensions or 256)
    if kind is EmbedderKind.OPENAI:
        from deepcontext.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder.from_settings(settings)
    from deepcontext.embed.minilm import MiniLMEmbedder

    if settings.embedding_batch_size is None:
        return MiniLMEmbedder()
    return MiniLMEmbedder(batch_size=settings.embedding_batch_size)
