"""The parts a DeepContext is built from: what was injected, completed from the settings."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deepcontext.errors import ConfigurationError
from deepcontext.services.ingest import IngestService

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.embed.embedder import Embedder
    from deepcontext.extract.interface import Classifier, Extractor
    from deepcontext.llm.client import LLM
    from deepcontext.services.summaries import SummaryService
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store

__all__ = ["Components", "build_components"]

log = logging.getLogger("deepcontext")


@dataclass
class Components:
    embedder: Embedder
    store: Store
    llm: LLM | None
    #: whether the LLM was built here (then ``close`` releases it)
    owns_llm: bool
    extractor: Extractor
    classifier: Classifier | None
    summaries: SummaryService | None
    ingest: IngestService


def build_components(
    settings: DeepContextSettings,
    clock: Clock,
    *,
    embedder: Embedder | None = None,
    store: Store | None = None,
    llm: LLM | None = None,
    extractor: Extractor | None = None,
    classifier: Classifier | None = None,
) -> Components:
    """Open (create or migrate) the store, load the embedder and build what was not injected:
    with an LLM, LLM extraction, classification and conversation summaries; offline, the rule-based
    extractor. Blocking; no network call happens here."""
    s = settings
    if embedder is None:
        from deepcontext.embed import build_embedder

        embedder = build_embedder(s)
    if store is None:
        from deepcontext.store import open_store

        tracer = (lambda sql, params: log.debug("SQL %s %r", sql, params)) if s.debug else None
        if s.backend == "sqlite" and _in_data_dir(s):
            s.data_dir.mkdir(parents=True, exist_ok=True)
        store = open_store(s, embedder.dimensions, tracer=tracer)
    store.migrate()
    store.ensure_embedder(embedder.model_id, embedder.dimensions)

    from deepcontext.extract.rules import RuleExtractor
    from deepcontext.llm.client import LLM

    owns_llm = False
    if llm is None:
        from deepcontext.llm.factory import build_llm

        llm = build_llm(s)
        owns_llm = llm is not None
    elif not isinstance(llm, LLM):
        raise ConfigurationError(f"llm must be a deepcontext.llm.LLM, got {type(llm).__name__}")
    summaries: SummaryService | None = None
    if llm is not None:
        from deepcontext.extract.llm_classifier import LLMClassifier
        from deepcontext.extract.llm_extractor import LLMExtractor
        from deepcontext.services.summaries import SummaryService

        if classifier is None:
            classifier = LLMClassifier(llm, dedup_threshold=s.dedup_threshold)
        summaries = SummaryService(store, llm, clock, every_turns=s.summary_every_turns)
        if extractor is None:
            extractor = LLMExtractor(llm)
    if extractor is None:
        extractor = RuleExtractor()
    ingest = IngestService(
        store,
        embedder,
        extractor,
        s,
        classifier=classifier,
        offline_extractor=RuleExtractor(),
        offline_fallback=s.llm_offline_fallback,
        context_turns=int(getattr(extractor, "context_messages", 0) or 0),
    )
    return Components(embedder, store, llm, owns_llm, extractor, classifier, summaries, ingest)


def _in_data_dir(s: DeepContextSettings) -> bool:
    """Whether the SQLite file lives in ``data_dir``, the one folder created when missing (any other
    missing folder is refused: a mistyped path must not start a new, empty memory)."""
    if not s.database_url:
        return True
    from deepcontext.store import sqlite_path

    database = sqlite_path(s.database_url)
    return database is not None and database.resolve().parent == s.data_dir.expanduser().resolve()
