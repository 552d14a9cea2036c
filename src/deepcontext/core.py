"""The facade: :class:`DeepContext`, async and primary. :class:`deepcontext.SyncDeepContext` is a
thin blocking shell over the same object.

Construction reads settings (arguments > environment ``DEEPCONTEXT_*`` > ``.env`` > defaults) and
nothing else; :meth:`DeepContext.init` opens the database (creating the default SQLite file under
``~/.deepcontext`` on first use), migrates it and loads the embedder.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from deepcontext.clock import Clock, SystemClock
from deepcontext.context.facade import ContextAPI
from deepcontext.dialogue.facade import DialogueAPI
from deepcontext.embed.base import Embedder
from deepcontext.errors import ConfigurationError, EntityNotFoundError, MemoryNotFoundError, ValidationError
from deepcontext.extract.base import Classifier, Extractor
from deepcontext.lifecycle.facade import LifecycleAPI
from deepcontext.retrieve.config import SearchConfig, preset
from deepcontext.retrieve.search import MAX_SOURCES, Hit, hybrid_search, leg_k
from deepcontext.retrieve.profile import uses_profile, vector_pool
from deepcontext.retrieve.supersession import add_superseded
from deepcontext.services.ingest import IngestService
from deepcontext.services.validation import (
    check_fraction,
    check_id,
    check_json,
    check_limit,
    check_scope,
    check_text,
    check_user_name,
    expiry,
    parse_filters,
    parse_messages,
    parse_time,
)
from deepcontext.settings import DeepContextSettings
from deepcontext.store.base import Store
from deepcontext.text import content_hash, entity_norm
from deepcontext.types import (
    AddResponse,
    HistoryEntry,
    Memory,
    MemoryPage,
    MemorySearchResult,
    MemoryStatus,
    SearchResponse,
    Turn,
)

if TYPE_CHECKING:
    from deepcontext.llm.base import LLM
    from deepcontext.services.summaries import SummaryService

__all__ = ["DeepContext", "MemoryEngine"]

log = logging.getLogger("deepcontext")
T = TypeVar("T")


class DeepContext(LifecycleAPI, DialogueAPI, ContextAPI):
    """Memory for AI agents: add conversations, search what matters, walk the knowledge graph.

    Every method takes the ``user_id`` whose data it touches and never reads or writes anyone
    else's. Use it as ``async with DeepContext(...) as ctx:`` or call :meth:`init` / :meth:`close`.

    Args (the first ones are DeepContext 0.1's):
        database_url: ``sqlite:///path.db`` (default: ``~/.deepcontext/memory.db``) or
            ``postgresql://user@host/db``.
        openai_api_key, openrouter_api_key, llm_provider, llm_model: the LLM used for extraction,
            classification, consolidation and summaries when configured; without a key everything
            runs offline.
        embedding_model: model name for ``embedder="openai"``; the default embedder is the local
            all-MiniLM-L6-v2 and needs no key.
        debug: log every SQL statement at DEBUG level.
        settings: a ready :class:`DeepContextSettings` (then the keyword settings are applied on top).
        embedder: an :class:`Embedder` instance, or the name of one ("local", "openai", "hash").
        llm: an :class:`deepcontext.llm.LLM` (a backend or a :class:`~deepcontext.llm.Router`) to use
            instead of the one the settings describe; the caller keeps ownership (``close`` does not
            close it). Without it, ``build_llm(settings)`` decides; None there means offline.
        extractor, classifier, store, clock: replace a component (tests, plugins). Without them: with
            an LLM, LLM extraction and classification; offline, the rule-based extractor and the
            offline rule (NOOP at ``dedup_threshold`` cosine, else ADD).
        **kwargs: any other setting of :class:`DeepContextSettings`.
    """

    def __init__(
        self,
        database_url: str = "",
        openai_api_key: str | None = None,
        openrouter_api_key: str | None = None,
        llm_provider: str | None = None,
        llm_model: str | None = None,
        embedding_model: str | None = None,
        debug: bool | None = None,
        *,
        settings: DeepContextSettings | None = None,
        embedder: Embedder | str | None = None,
        extractor: Extractor | None = None,
        classifier: Classifier | None = None,
        store: Store | None = None,
        clock: Clock | None = None,
        llm: LLM | None = None,
        **kwargs: Any,
    ) -> None:
        given: dict[str, Any] = dict(kwargs)
        if isinstance(embedder, str):  # the setting (local / openai / hash), not a component
            given["embedder"] = embedder
            embedder = None
        for key, value in (
            ("database_url", database_url or None),
            ("openai_api_key", openai_api_key),
            ("openrouter_api_key", openrouter_api_key),
            ("llm_provider", llm_provider),
            ("llm_model", llm_model),
            ("embedding_model", embedding_model),
            ("debug", debug),
        ):
            if value is not None:
                given[key] = value
        try:
            if settings is None:
                self.settings = DeepContextSettings(**given)
            elif given:
                self.settings = DeepContextSettings(**{**settings.model_dump(), **given})
            else:
                self.settings = settings
        except Exception as exc:  # pydantic's error, re-raised under our root with the same text
            from pydantic import ValidationError as PydanticValidationError

            if isinstance(exc, PydanticValidationError):
                raise ConfigurationError(f"invalid settings: {exc}") from exc
            raise
        self.clock: Clock = clock or SystemClock()
        self._embedder = embedder
        self._extractor = extractor
        self._classifier = classifier
        self._store = store
        self._llm = llm
        self._owns_llm = False
        self._summaries: SummaryService | None = None
        self._ingest: IngestService | None = None
        self._background: set[asyncio.Task[Any]] = set()
        #: (task, error) kinds of background failures logged so far
        self._failed_kinds: set[tuple[str, str]] = set()
        self._query_pool: ThreadPoolExecutor | None = None
        self._init_lock = asyncio.Lock()
        self._initialized = False

    # ------------------------------------------------------------------------------------------
    # lifecycle
    # ------------------------------------------------------------------------------------------
    async def init(self) -> None:
        """Open (and create or migrate) the database and load the embedder. Idempotent."""
        async with self._init_lock:
            if self._initialized:
                return
            await asyncio.to_thread(self._init_sync)
            self._initialized = True

    def _init_sync(self) -> None:
        s = self.settings
        if self._embedder is None:
            from deepcontext.embed import build_embedder

            self._embedder = build_embedder(s)
        if self._store is None:
            from deepcontext.store import open_store

            tracer = (lambda sql, params: log.debug("SQL %s %r", sql, params)) if s.debug else None
            if s.backend == "sqlite" and _in_data_dir(s):
                s.data_dir.mkdir(parents=True, exist_ok=True)
            self._store = open_store(s, self._embedder.dimensions, tracer=tracer)
        self._store.migrate()
        self._store.ensure_embedder(self._embedder.model_id, self._embedder.dimensions)
        self._init_llm()
        if self._extractor is None:
            self._extractor = self._default_extractor()
        self._ingest = IngestService(
            self._store,
            self._embedder,
            self._extractor,
            s,
            classifier=self._classifier,
            offline_extractor=self._offline_extractor(),
            offline_fallback=s.llm_offline_fallback,
            context_turns=int(getattr(self._extractor, "context_messages", 0) or 0),
        )

    def _init_llm(self) -> None:
        """The LLM (injected, or built from the settings: None offline), the LLM classifier when no
        classifier was given, and the conversation summaries. No network call happens here."""
        from deepcontext.llm.base import LLM

        if self._llm is None:
            from deepcontext.llm.factory import build_llm

            self._llm = build_llm(self.settings)
            self._owns_llm = self._llm is not None
        elif not isinstance(self._llm, LLM):
            raise ConfigurationError(f"llm must be a deepcontext.llm.LLM, got {type(self._llm).__name__}")
        if self._llm is None:
            return
        if self._classifier is None:
            from deepcontext.extract.llm import LLMClassifier

            self._classifier = LLMClassifier(self._llm, dedup_threshold=self.settings.dedup_threshold)
        if self._summaries is None:
            from deepcontext.services.summaries import SummaryService

            assert self._store is not None
            self._summaries = SummaryService(
                self._store, self._llm, self.clock, every_turns=self.settings.summary_every_turns
            )

    def _default_extractor(self) -> Extractor:
        if self._llm is not None:
            from deepcontext.extract.llm import LLMExtractor

            return LLMExtractor(self._llm)
        return self._offline_extractor()

    def _offline_extractor(self) -> Extractor:
        from deepcontext.extract.rules import RuleExtractor

        return RuleExtractor()

    @property
    def llm(self) -> LLM | None:
        """The LLM in use (a :class:`~deepcontext.llm.Router` when built from the settings), or None
        offline. Other features (consolidation) use it too."""
        self._check()
        return self._llm

    async def flush(self) -> None:
        """Wait until background work started by earlier calls (access counts, auto-consolidation,
        conversation summaries) has finished. ``close()`` does this too."""
        while self._background:  # a finishing task may start another
            await asyncio.gather(*self._background, return_exceptions=True)

    async def close(self) -> None:
        """Finish background work (access counts, summaries) and release the LLM client, the
        database and the embedder."""
        while self._background:  # a finishing task may start another (a summary asked again)
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._llm is not None and self._owns_llm:
            await self._llm.aclose()
        if self._store is not None:
            await asyncio.to_thread(self._store.close)
        if self._query_pool is not None:
            self._query_pool.shutdown(wait=True)
            self._query_pool = None
        if self._embedder is not None:
            self._embedder.close()
        self._initialized = False

    async def __aenter__(self) -> DeepContext:
        await self.init()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def store(self) -> Store:
        self._check()
        assert self._store is not None
        return self._store

    @property
    def embedder(self) -> Embedder:
        self._check()
        assert self._embedder is not None
        return self._embedder

    def _check(self) -> None:
        if not self._initialized:
            raise ConfigurationError("DeepContext is not initialised: call `await ctx.init()` first")

    async def _db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    def _query_embedder(self) -> ThreadPoolExecutor:
        """Threads that embed search queries while the keyword and graph legs run."""
        if self._query_pool is None:
            self._query_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="deepcontext-query")
        return self._query_pool

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(self._report_background)
        return task

    def _report_background(self, task: asyncio.Task[Any]) -> None:
        """A background task's failure is logged here, as one warning line the first time a kind of
        task fails with a kind of error (then at debug level): a broken database would otherwise
        log it on every request."""
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        coro = task.get_coro()
        kind = (getattr(coro, "__qualname__", "task"), type(exc).__name__)
        level = logging.DEBUG if kind in self._failed_kinds else logging.WARNING
        self._failed_kinds.add(kind)
        log.log(level, "background %s failed: %s: %s", kind[0], kind[1], exc)

    # ------------------------------------------------------------------------------------------
    # add
    # ------------------------------------------------------------------------------------------
    async def add(
        self,
        messages: Sequence[Mapping[str, Any]] | Sequence[Any],
        user_id: str,
        conversation_id: str = "default",
        *,
        timestamp: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expires_at: datetime | str | None = None,
        ttl: float | None = None,
        infer: bool = True,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> AddResponse:
        """Store messages verbatim as turns of ``conversation_id`` and derive memories from them.

        Each message is ``{"role": "user"|"assistant"|"system"|"tool", "content": str}`` with
        optional ``name`` (speaker), ``timestamp`` (when it was said) and ``metadata``.
        ``timestamp`` here is the default time of messages without one (e.g. a session's date).
        ``expires_at`` / ``ttl`` (seconds) make the derived memories expire. ``infer=False`` stores
        the turns (and their turn memories) without extraction. ``agent_id`` / ``run_id`` scope the
        turns and memories inside the user (search and list can filter on them).
        One transaction: on any error nothing is written.
        """
        self._check()
        assert self._ingest is not None
        user_id = check_id(user_id, "user_id")
        agent_id, run_id = check_scope(agent_id, "agent_id"), check_scope(run_id, "run_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        now = self.clock.now()
        s = self.settings
        msgs = parse_messages(
            messages,
            now=now,
            default_time=parse_time(timestamp, "timestamp"),
            max_messages=s.max_messages_per_add,
            max_chars=s.max_message_chars,
        )
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be an object", field="metadata")
        check_json(metadata, "metadata")
        exp = expiry(now, expires_at, ttl)
        response = await self._ingest.add(
            msgs,
            user_id=user_id,
            conversation_id=conversation_id,
            now=now,
            metadata=dict(metadata or {}),
            expires_at=exp,
            infer=infer,
            agent_id=agent_id,
            run_id=run_id,
        )
        if self._summaries is not None and infer:  # after the transaction, in the background
            self._summaries.schedule(user_id, conversation_id, self._spawn)
        self._lifecycle_after_add(user_id, response)  # auto-consolidation, in the background
        return response

    async def summary(self, user_id: str, conversation_id: str = "default") -> str | None:
        """The conversation's running summary, or None if there is none (offline, or fewer than
        ``summary_every_turns`` turns so far). With an LLM it is refreshed in the background after
        adds; if a refresh of this conversation is running, this waits for it first."""
        self._check()
        user_id = check_id(user_id, "user_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        if self._summaries is not None:
            return await self._summaries.get(user_id, conversation_id)
        from deepcontext.store.summaries import read_summary

        state = await self._db(read_summary, self.store, user_id, conversation_id)
        return state.summary if state is not None else None

    # ------------------------------------------------------------------------------------------
    # search
    # ------------------------------------------------------------------------------------------
    async def search(
        self,
        query: str,
        user_id: str,
        limit: int = 10,
        tier: str | Iterable[str] | None = None,
        memory_type: str | Iterable[str] | None = None,
        include_graph: bool = True,
        *,
        conversation_id: str | Iterable[str] | None = None,
        after: datetime | str | None = None,
        before: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        config: SearchConfig | str | None = None,
        track_access: bool | None = None,
        include_superseded: bool = False,
        min_score: float | None = None,
        agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
    ) -> SearchResponse:
        """Hybrid search (vector + keyword + graph, fused by weighted RRF, spread to neighbouring
        turns, rescored by importance, recency and confidence). Every leg honours the same filters:
        ``metadata`` takes equality or operators (see :mod:`deepcontext.store.metafilter`),
        ``agent_id`` / ``run_id`` one or several ids. ``config`` is a :class:`SearchConfig` or a
        preset name ("hybrid", "relevance", "vector", "keyword", "graph"). Results count as accessed
        unless ``track_access`` is False (None: the setting). ``include_superseded``: also older
        values of facts that a later statement changed, each right after the version that replaced
        it. Each result's ``score`` is its calibrated relevance in [0, 1]; ``min_score`` drops the
        results below it (of the ``limit`` best)."""
        self._check()
        started = time.perf_counter()
        user_id = check_id(user_id, "user_id")
        query = check_text(query, "query", self.settings.max_query_chars)
        limit = check_limit(limit)
        floor = check_fraction(min_score, "min_score") if min_score is not None else 0.0
        filters = parse_filters(
            tier=tier, memory_type=memory_type, conversation_id=conversation_id, after=after, before=before,
            metadata=metadata, agent_id=agent_id, run_id=run_id,
        )  # fmt: skip
        cfg = self._config(config)
        if not isinstance(include_superseded, bool):
            raise ValidationError("include_superseded must be true or false", field="include_superseded")
        now = self.clock.now()
        per_memory = self.settings.max_connections_per_memory
        embedding = self._query_embedder() if cfg.vector_weight > 0 else None

        store, embedder = self.store, self.embedder

        def vector_leg() -> list[tuple[int, float]]:
            vector = embedder.embed_one(query)
            k = vector_pool(leg_k(cfg, limit, cfg.vector_k_factor), uses_profile(query, cfg.profile_weight))
            with store.side_reading():
                return store.vector_search(user_id, vector, k, filters, now)

        def run() -> list[Hit]:
            # one worker-thread hop for the legs and the results' details and links (each hop back to
            # the event loop costs a wake-up); the reads share one connection and snapshot. The query
            # is embedded on another thread meanwhile (onnxruntime releases the GIL); where the store
            # says so (PostgreSQL) that thread also runs the vector leg, on a connection of its own
            qvec = hits = None
            if embedding is not None and store.concurrent_vector_leg:
                hits = embedding.submit(vector_leg)
            elif embedding is not None:
                qvec = embedding.submit(embedder.embed_one, query)
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
                vector_hits=hits,
            )
            if include_superseded:
                found = add_superseded(
                    store, user_id, query, found, limit=limit, filters=filters, now=now, max_sources=MAX_SOURCES,
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
            self._spawn(self._db(self.store.bump_access, user_id, ids, now))
        return SearchResponse(
            query=query,
            user_id=user_id,
            total=len(results),
            results=results,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def _config(self, config: SearchConfig | str | None) -> SearchConfig:
        if config is None:
            return SearchConfig.from_settings(self.settings)
        if isinstance(config, str):
            return preset(config)
        if isinstance(config, SearchConfig):
            return config
        raise ValidationError("config must be a SearchConfig or a preset name", field="config")

    # ------------------------------------------------------------------------------------------
    # single memories
    # ------------------------------------------------------------------------------------------
    async def get(self, memory_id: int, user_id: str) -> Memory:
        """A memory of this user with its provenance and entities, whatever its status."""
        self._check()
        user_id = check_id(user_id, "user_id")
        mid = _check_memory_id(memory_id)
        found = await self._db(self.store.get_memories, user_id, [mid])
        if not found:
            raise MemoryNotFoundError(memory_id, user_id)
        return found[0]

    async def update(
        self, memory_id: int, text: str, user_id: str, *, metadata: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Change a memory's text (re-embedded; the old text stays in its history) and, when given,
        replace its metadata."""
        self._check()
        user_id = check_id(user_id, "user_id")
        mid = _check_memory_id(memory_id)
        text = check_text(text, "text", self.settings.max_message_chars).strip()
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError("metadata must be an object", field="metadata")
        check_json(metadata, "metadata")
        vec = await asyncio.to_thread(self.embedder.embed_one, text)
        mem = await self._db(
            self.store.update_memory,
            user_id,
            mid,
            text=text,
            content_hash=content_hash(text),
            embedding=vec,
            now=self.clock.now(),
            actor="user",
            reason="updated through the API",
            metadata=dict(metadata) if metadata is not None else None,
        )
        return {"memory_id": mem.id, "text": mem.text, "status": "updated"}

    async def delete(self, memory_id: int, user_id: str) -> dict[str, Any]:
        """Soft-delete a memory: gone from search and list, kept in history."""
        self._check()
        user_id = check_id(user_id, "user_id")
        mid = _check_memory_id(memory_id)
        await self._db(self.store.delete_memory, user_id, mid, now=self.clock.now(), actor="user", reason="deleted through the API")
        return {"memory_id": mid, "status": "deleted"}

    async def delete_memories(
        self,
        user_id: str,
        *,
        agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> builtins.list[int]:
        """Soft-delete every active memory of the user (of these agents / runs, passing the metadata
        filter, when given) in one transaction; returns their ids. Their history stays."""
        self._check()
        user_id = check_id(user_id, "user_id")
        filters = parse_filters(agent_id=agent_id, run_id=run_id, metadata=metadata)
        return await self._db(
            self.store.delete_memories, user_id, filters, now=self.clock.now(), actor="user", reason="deleted through the API"
        )

    async def memory_owner(self, memory_id: int) -> str:
        """The user a memory belongs to (memory ids are unique across users). For in-process callers
        that hold an id and nothing else; servers never use it. Raises MemoryNotFoundError."""
        self._check()
        mid = _check_memory_id(memory_id)
        owner = await self._db(self.store.memory_owner, mid)
        if owner is None:
            raise MemoryNotFoundError(memory_id, "")
        return owner

    async def history(self, memory_id: int, user_id: str) -> list[HistoryEntry]:
        """Every change of a memory, oldest first."""
        self._check()
        user_id = check_id(user_id, "user_id")
        return await self._db(self.store.history, user_id, _check_memory_id(memory_id))

    async def list(
        self,
        user_id: str,
        *,
        tier: str | Iterable[str] | None = None,
        memory_type: str | Iterable[str] | None = None,
        conversation_id: str | Iterable[str] | None = None,
        after: datetime | str | None = None,
        before: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        include_inactive: bool = False,
        limit: int = 50,
        cursor: str | None = None,
        agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
    ) -> MemoryPage:
        """Memories of a user, newest first, one page at a time (pass ``next_cursor`` back). The
        filters are those of :meth:`search`."""
        self._check()
        user_id = check_id(user_id, "user_id")
        limit = check_limit(limit, hi=1000)
        filters = parse_filters(
            tier=tier, memory_type=memory_type, conversation_id=conversation_id, after=after, before=before,
            metadata=metadata, agent_id=agent_id, run_id=run_id,
        )  # fmt: skip
        if include_inactive:
            filters.statuses = tuple(MemoryStatus)
        memories, total, nxt = await self._db(
            self.store.list_memories, user_id, filters, limit=limit, cursor=cursor, now=self.clock.now()
        )
        return MemoryPage(total=total, memories=memories, next_cursor=nxt)

    async def list_memories(
        self,
        user_id: str,
        tier: str | None = None,
        memory_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> dict[str, Any]:
        """DeepContext 0.1's listing (offset paging). Prefer :meth:`list` (cursor paging)."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValidationError("offset must be a non-negative integer", field="offset")
        page = await self.list(user_id, tier=tier, memory_type=memory_type, limit=min(1000, offset + limit))
        items = page.memories[offset : offset + limit]
        return {
            "total": page.total,
            "limit": limit,
            "offset": offset,
            "memories": [m.model_dump(mode="json") for m in items],
        }

    async def turns(self, user_id: str, conversation_id: str = "default", limit: int = 50) -> builtins.list[Turn]:
        """The last turns of a conversation, oldest first, verbatim."""
        self._check()
        user_id = check_id(user_id, "user_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        return await self._db(self.store.recent_turns, user_id, conversation_id, check_limit(limit, hi=10_000))

    # ------------------------------------------------------------------------------------------
    # graph
    # ------------------------------------------------------------------------------------------
    async def get_entity_graph(self, user_id: str, entity_name: str, depth: int = 2) -> builtins.list[dict[str, Any]]:
        """The knowledge-graph neighbourhood of an entity (matched case-insensitively by whole
        name): ``[{entity, entity_type, relation, depth, strength, via, direction}]``, breadth first.
        The entity itself comes first with depth 0 (no relation). ``direction`` is "out" for
        ``via --relation--> entity`` and "in" for ``entity --relation--> via``. Raises
        EntityNotFoundError for an unknown entity."""
        self._check()
        user_id = check_id(user_id, "user_id")
        name = check_text(entity_name, "entity_name", 512)
        depth = check_limit(depth, "depth", lo=0, hi=5)
        norm = entity_norm(name)
        found = await self._db(self.store.match_entities, user_id, [norm])
        if norm not in found:
            raise EntityNotFoundError(name, user_id)
        hood = await self._db(self.store.entity_neighbourhood, user_id, [found[norm][0]], depth)
        return [
            {
                "entity": h["entity"],
                "entity_type": h["entity_type"],
                "relation": h["relation"],
                "depth": h["depth"],
                "strength": h["strength"],
                "via": next((x["entity"] for x in hood if x["id"] == h["via"]), None),
                "direction": h["direction"],
            }
            for h in hood
        ]

    # ------------------------------------------------------------------------------------------
    # users, export
    # ------------------------------------------------------------------------------------------
    async def delete_user(self, user_id: str) -> dict[str, int]:
        """Delete everything of a user from every table and cache. Returns rows deleted per table."""
        self._check()
        user_id = check_id(user_id, "user_id")
        return await self._db(self.store.delete_user, user_id)

    async def set_user(self, user_id: str, *, name: str) -> None:
        """Set the user's display name: what memories call the user ("Ana lives in Lisbon", not "User
        lives in Lisbon"). The user's entity keeps one node: the one of the former name (or of "User")
        is renamed, or merged into the entity of ``name``. One transaction."""
        self._check()
        assert self._ingest is not None
        user_id = check_id(user_id, "user_id")
        name = check_user_name(name)
        await self._db(self.store.set_user_name, user_id, name, self.clock.now())
        self._ingest.name_changed(user_id, name)

    async def get_user(self, user_id: str) -> dict[str, Any]:
        """The user's profile: ``{"user_id": ..., "name": display name or None}``."""
        self._check()
        assert self._ingest is not None
        user_id = check_id(user_id, "user_id")
        return {"user_id": user_id, "name": await self._ingest.user_name(user_id)}

    async def users(self) -> builtins.list[str]:
        self._check()
        return await self._db(self.store.list_users)

    async def stats(self, user_id: str) -> dict[str, int]:
        """Rows of a user per table."""
        self._check()
        return await self._db(self.store.count_rows, check_id(user_id, "user_id"))

    async def export(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Everything of a user as JSON-ready records (turns, entities, relations, memories with
        provenance and history): what :meth:`import_records` restores."""
        from deepcontext.services.transfer import export_records

        self._check()
        user_id = check_id(user_id, "user_id")
        async for rec in export_records(self.store, self.embedder, user_id, self.clock.now()):
            yield rec

    async def import_records(self, records: Iterable[Mapping[str, Any]], user_id: str | None = None) -> dict[str, int]:
        """Restore an export (into ``user_id``, default: the exported user). One transaction."""
        from deepcontext.services.transfer import import_records

        self._check()
        if user_id is not None:
            user_id = check_id(user_id, "user_id")
        return await import_records(self.store, self.embedder, list(records), user_id, self.clock.now())

    async def import_v01(self, path: str | Path) -> dict[str, dict[str, int]]:
        """Import a DeepContext 0.1 SQLite file (read-only): every user's memories, entities,
        relations and conversation summaries, one transaction per user. Returns rows per table
        per user."""
        from deepcontext.services.legacy import import_v01

        self._check()
        return await import_v01(self, path)


def _in_data_dir(s: DeepContextSettings) -> bool:
    """Whether the SQLite file lives in ``data_dir``, the one folder created when missing (any other
    missing folder is refused: a mistyped path must not start a new, empty memory)."""
    if not s.database_url:
        return True
    from sqlalchemy.engine import make_url

    database = make_url(s.database_url).database or ""
    return Path(database).expanduser().resolve().parent == s.data_dir.expanduser().resolve()


def _check_memory_id(memory_id: Any) -> int:
    """A memory id is a positive integer (a string of digits is refused: ids are not text)."""
    if isinstance(memory_id, bool) or not isinstance(memory_id, int):
        raise ValidationError(f"memory_id must be an integer, got {type(memory_id).__name__}", field="memory_id")
    if not 0 < memory_id <= _MAX_ID:
        raise ValidationError(f"memory_id must be between 1 and {_MAX_ID}, got {memory_id!r}", field="memory_id")
    return memory_id


#: ids are 64-bit signed integers in both databases
_MAX_ID = 2**63 - 1


#: DeepContext 0.1's name of the engine
MemoryEngine = DeepContext
