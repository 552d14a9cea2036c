"""A stand-in for the embedder a database's vectors were made with, for work that embeds nothing."""

from __future__ import annotations

import numpy as np

from deepcontext.embed.embedder import Embedder
from deepcontext.errors import EmbeddingError

__all__ = ["RecordedEmbedder"]


class RecordedEmbedder(Embedder):
    """Bears the model id and size a database recorded, so opening it loads no model and checks no
    configured embedder (listing, exporting, deleting, API keys). Embedding with it fails."""

    def __init__(self, model_id: str, dimensions: int) -> None:
        super().__init__(cache_size=0)
        self.model_id = model_id
        self.dimensions = dimensions

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingError(f"this command embeds nothing, yet was asked to embed {len(texts)} text(s)")
