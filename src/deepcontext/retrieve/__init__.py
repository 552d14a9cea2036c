"""Hybrid retrieval: legs, fusion, rescoring, presets."""

from deepcontext.retrieve.config import PRESETS, SearchConfig, preset
from deepcontext.retrieve.fusion import access_factor, recency_factor, rescore, rrf, spread
from deepcontext.retrieve.search import Hit, graph_leg, hybrid_search

__all__ = [
    "PRESETS",
    "Hit",
    "SearchConfig",
    "access_factor",
    "graph_leg",
    "hybrid_search",
    "preset",
    "recency_factor",
    "rescore",
    "rrf",
    "spread",
]
