"""The search call behind ``DeepContext.search``: inputs validated, the retrieval pipeline run on a
worker thread, hits turned into results."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from deepcontext.language.standing_model import model_for
from deepcontext.retrieve.search import MAX_SOURCES, Hit, hybrid_search, start_vector_leg
from deepcontext.retrieve.supersession import add_superseded
from deepcontext.types import MemorySearchResult, SearchResponse

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.embed.embedder import Embedder
    from deepcontext.services.background import BackgroundTasks
    from deepcontext.services.requests import SearchRequest
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store

__all__ = ["SearchService"]


class SearchService:
    """Hybrid search over one store; owns the threads that embed queries."""

    def __init__(
        self, store: Store, embedder: Embedder, settings: DeepContextSettings, clock: Clock, tasks: BackgroundTasks
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.tasks = tasks
        # the request model belongs to the embedder's vectors (None for other embedders)
        self.standing_model = model_for(embedder.model_id)
        self._pool: ThreadPoolExecutor | None = None

    def _query_pool(self) -> ThreadPoolExecutor:
        """Threads that embed search queries while the keyword and graph legs run."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="deepcontext-query")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    async def search(self, req: SearchRequest) -> SearchResponse:
        """Hybrid search (vector + keyword + graph, fused by weighted RRF, spread to neighbouring
        turns, rescored by importance, recency and confidence). Every leg honours the same filters:
        ``metadata`` takes equality or operators (see :mod:`deepcontext.store.metafilter`),
        ``agent_id`` / ``run_id`` one or several ids. ``config`` is a :class:`SearchConfig` or a
        preset name ("hybrid", "relevance", "vector", "keyword", "graph"). Results count as accessed
        unless ``track_access`` is False (None: the setting). ``include_superseded``: also older
        values of facts that a later statement changed, each right after the version that replaced
        it. Each result's ``score`` is its calibrated relevance in [0, 1]; ``min_score`` drops the
        results below it (of the ``limit`` best)."""
        started = time.perf_counter()
        user_id, query, limit, filters, cfg = req.user_id, req.query, req.limit, req.filters, req.search_config
        include_graph, include_superseded, track_access = req.include_graph, req.include_superseded, req.track_access
        floor = req.min_score if req.min_score is not None else 0.0
        now = self.clock.now()
        per_memory = self.settings.max_connections_per_memory
        store, standing = self.store, self.standing_model
        # the query's embedding starts now, before the hop to the worker thread
        qvec, vector_leg = start_vector_leg(
            store, self.embedder.embed_one, self._query_pool(), user_id, query, limit=limit, filters=filters,
            config=cfg, now=now, standing=standing,
        )  # fmt: skip

        def run() -> list[Hit]:
            # one worker-thread hop for the legs and the results' details and links (each hop back to
            # the event loop costs a wake-up); the reads share one connection and snapshot
            found = hybrid_search(
                store,
                user_id,
                query,
                qvec,
                limit=limit,
                filters=filters,
                config=cfg,
                now=now,
                include_graph=include_graph,
                links_per_memory=per_memory,
                vector_hits=vector_leg,
                standing=standing,
            )
            if include_superseded:
                found = add_superseded(
                    store,
                    user_id,
                    query,
                    found,
                    limit=limit,
                    filters=filters,
                    now=now,
                    max_sources=MAX_SOURCES,
                    make_hit=lambda m, score: Hit(memory=m, score=score, rrf_score=0.0),
                )
                # an older version scores just below its replacement: what follows it, not above it
                for prev, h in zip(found, found[1:], strict=False):
                    h.score = min(h.score, prev.score)
            return found

        hits = [h for h in await asyncio.to_thread(run) if h.score >= floor]
        ids = [h.memory.id for h in hits]
        results = [
            MemorySearchResult(
                memory_id=h.memory.id,
                text=h.memory.text,
                memory_type=h.memory.memory_type,
                tier=h.memory.tier,
                score=h.score,
                importance=h.memory.importance,
                confidence=h.memory.confidence,
                created_at=h.memory.created_at,
                connections=h.links[:per_memory],
                entities=h.memory.entities,
                metadata=h.memory.metadata,
                said_at=h.memory.said_at,
                occurred_at=h.memory.occurred_at,
                conversation_id=h.memory.conversation_id,
                sources=h.memory.sources,
                legs=h.legs,
                rrf_score=h.rrf_score,
                similarity=h.similarity,
                access_count=h.memory.access_count,
                superseded_by=h.memory.superseded_by,
                valid_to=h.memory.valid_to,
                agent_id=h.memory.agent_id,
                run_id=h.memory.run_id,
            )
            for h in hits
        ]
        if ids and (self.settings.track_access if track_access is None else track_access) and not self.store.read_only:
            self.tasks.spawn(asyncio.to_thread(self.store.bump_access, user_id, ids, now))
        return SearchResponse(
            query=query,
            user_id=user_id,
            total=len(results),
            results=results,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )
