"""The facade: :class:`DeepContext`, async and primary. :class:`deepcontext.SyncDeepContext` is a
thin blocking shell over the same object.

Construction reads settings (arguments > environment ``DEEPCONTEXT_*`` > ``.env`` > defaults) and
nothing else; :meth:`DeepContext.init` opens the database (creating the default SQLite file under
``~/.deepcontext`` on first use), migrates it, loads the embedder and wires the services the methods
delegate to: :attr:`~DeepContext.lifecycle`, :attr:`~DeepContext.conversations`,
:attr:`~DeepContext.contexts` and the memory, search and ingest services. Its methods over memories,
users and exports, and over the lifecycle, the conversation graphs and the activity log, come from
two mixins: :class:`~deepcontext.core_memories.MemoryMethods` and
:class:`~deepcontext.core_features.FeatureMethods`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from deepcontext.clock import Clock, SystemClock
from deepcontext.context.assembly import ContextService
from deepcontext.context.results import (
    DEFAULT_BUDGET_TOKENS,
    DEFAULT_CONVERSATION_NODES,
    DEFAULT_MIN_SIMILARITY,
)
from deepcontext.core_features import FeatureMethods
from deepcontext.core_memories import MemoryMethods
from deepcontext.dialogue.conversations import DialogueService
from deepcontext.embed.embedder import Embedder
from deepcontext.errors import ConfigurationError
from deepcontext.extract.interface import Classifier, Extractor
from deepcontext.lifecycle.service import LifecycleService
from deepcontext.retrieve.config import SearchConfig
from deepcontext.services.activity import ActivityLog
from deepcontext.services.background import BackgroundTasks
from deepcontext.services.components import Components, build_components
from deepcontext.services.memories import MemoryService
from deepcontext.services.memory_search import SearchService
from deepcontext.services.requests import AddRequest, ContextRequest, SearchRequest
from deepcontext.services.validation import check_id
from deepcontext.settings import DeepContextSettings, explain_settings_error
from deepcontext.store.interface import Store
from deepcontext.types import AddResponse, SearchResponse

if TYPE_CHECKING:
    from deepcontext.context.results import ContextResult, ContextShares
    from deepcontext.llm.client import LLM
    from deepcontext.query.core import DeepCQ
    from deepcontext.query.schema import MemorySchema
    from deepcontext.services.summaries import SummaryService

__all__ = ["DeepContext", "MemoryEngine"]

log = logging.getLogger("deepcontext")


class DeepContext(FeatureMethods, MemoryMethods):
    """Memory for AI agents: add conversations, search what matters, walk the knowledge graph.
    Every method takes the ``user_id`` whose data it touches and never touches anyone else's.

    Args: ``database_url`` (``sqlite:///path.db``, default ``~/.deepcontext/memory.db``, or
    ``postgresql://...``); ``openai_api_key``, ``openrouter_api_key``, ``llm_provider``,
    ``llm_model`` (the LLM, else everything runs offline); ``embedding_model`` (for
    ``embedder="openai"``); ``debug`` (log SQL); ``settings`` (a :class:`DeepContextSettings`, the
    keywords applied on top); ``embedder`` (an :class:`Embedder` or "local" / "openai" / "hash");
    ``llm`` (an :class:`deepcontext.llm.LLM` the caller keeps and closes); ``extractor``,
    ``classifier``, ``store``, ``clock`` (replace a component); any other setting as a keyword.
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
        if (problem := DeepContextSettings.unknown(kwargs)) is not None:
            raise ConfigurationError(problem)
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
            from pydantic_settings import SettingsError

            if isinstance(exc, PydanticValidationError | SettingsError):
                raise ConfigurationError(explain_settings_error(exc)) from exc
            raise
        self.clock: Clock = clock or SystemClock()
        self._embedder = embedder
        self._extractor = extractor
        self._classifier = classifier
        self._store = store
        self._llm = llm
        self._owns_llm = False
        self._summaries: SummaryService | None = None
        self._services: _Services | None = None
        self._tasks = BackgroundTasks()
        self._init_lock = asyncio.Lock()
        self._initialized = False

    async def init(self) -> None:
        """Open (and create or migrate) the database and load the embedder. Idempotent."""
        async with self._init_lock:
            if self._initialized:
                return
            await asyncio.to_thread(self._init_sync)
            self._initialized = True
            if self.settings.vector_read_ahead:
                self.store.warm_up()
            if self.settings.warm_up_embedder and self._embedder is not None:
                # the model loads beside the caller's own start-up, off the first search's path
                threading.Thread(target=_warm_up, args=(self._embedder,), name="deepcontext-warm-up", daemon=True).start()

    def _init_sync(self) -> None:
        built = build_components(
            self.settings, self.clock, embedder=self._embedder, store=self._store, llm=self._llm,
            extractor=self._extractor, classifier=self._classifier,
        )  # fmt: skip
        self._embedder, self._store, self._extractor = built.embedder, built.store, built.extractor
        self._llm, self._classifier = built.llm, built.classifier
        self._owns_llm = self._owns_llm or built.owns_llm
        self._summaries = built.summaries
        self._services = _Services(built, self.settings, self.clock, self._tasks)

    @property
    def llm(self) -> LLM | None:
        """The LLM in use (a :class:`~deepcontext.llm.Router` when built from the settings), or None
        offline. Other features (consolidation) use it too."""
        self._check()
        return self._llm

    @property
    def activity_dropped(self) -> int:
        """Calls the activity log did not record since the engine opened: its queue was full
        (``activity_queue_max``), as when the database stopped answering."""
        return 0 if self._services is None else self._services.activity.dropped

    async def flush(self) -> None:
        """Wait until background work started by earlier calls (access counts, auto-consolidation,
        conversation summaries, the activity log's writes) has finished. ``close()`` does this too."""
        if self._services is not None:
            self._services.activity.write_now()
        await self._tasks.drain()

    async def close(self) -> None:
        """Finish background work (access counts, summaries) and release the LLM client, the
        database and the embedder."""
        if self._services is not None:
            self._services.activity.write_now()
        await self._tasks.aclose()
        if self._llm is not None and self._owns_llm:
            await self._llm.aclose()
        if self._store is not None:
            await asyncio.to_thread(self._store.close)
        if self._services is not None:
            self._services.search.close()
            self._services = None
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

    @property
    def lifecycle(self) -> LifecycleService:
        """Decay, consolidation and cleanup runs, and auto-consolidation after adds."""
        return self._wired().lifecycle

    @property
    def conversations(self) -> DialogueService:
        """The conversation graphs (Memory Graph) over this database."""
        return self._wired().dialogue

    @property
    def contexts(self) -> ContextService:
        """The budgeted context for the next prompt and the users' deepcq tiers."""
        return self._wired().context

    @property
    def background(self) -> BackgroundTasks:
        """The background work started by earlier calls (see :meth:`flush`)."""
        return self._tasks

    def _check(self) -> None:
        if not self._initialized:
            raise ConfigurationError("DeepContext is not initialised: call `await ctx.init()` first")

    def _wired(self) -> _Services:
        self._check()
        assert self._services is not None
        return self._services

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
        now = self.clock.now()
        req = AddRequest.of(
            self.settings, messages=messages, user_id=user_id, conversation_id=conversation_id, timestamp=timestamp,
            metadata=metadata, expires_at=expires_at, ttl=ttl, infer=infer, agent_id=agent_id, run_id=run_id,
            _context={"now": now},
        )  # fmt: skip
        user_id, conversation_id = req.user_id, req.conversation_id
        response = await self._wired().ingest.add(
            req.parsed_messages, user_id=user_id, conversation_id=conversation_id, now=now,
            metadata=dict(req.metadata or {}), expires_at=req.expiry, infer=infer, agent_id=req.agent_id,
            run_id=req.run_id,
        )  # fmt: skip
        if self._summaries is not None and infer:  # after the transaction, in the background
            self._summaries.schedule(user_id, conversation_id, self._tasks.spawn)
        self.lifecycle.after_add(user_id, response)  # auto-consolidation, in the background
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
        if self.store.summaries is None:
            return None
        state = await asyncio.to_thread(self.store.summaries.read, user_id, conversation_id)
        return state.summary if state is not None else None

    async def search(
        self, query: str, user_id: str, limit: int = 10, tier: str | Iterable[str] | None = None,
        memory_type: str | Iterable[str] | None = None, include_graph: bool = True, *,
        conversation_id: str | Iterable[str] | None = None, after: datetime | str | None = None,
        before: datetime | str | None = None, metadata: Mapping[str, Any] | None = None,
        config: SearchConfig | str | None = None, track_access: bool | None = None, include_superseded: bool = False,
        min_score: float | None = None, agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
    ) -> SearchResponse:  # fmt: skip
        """Hybrid search (vector + keyword + graph, fused by weighted RRF, spread to neighbouring
        turns, rescored by importance, recency and confidence): see :meth:`SearchService.search`."""
        wired = self._wired()
        req = SearchRequest.of(
            self.settings, query=query, user_id=user_id, limit=limit, tier=tier, memory_type=memory_type,
            include_graph=include_graph, conversation_id=conversation_id, after=after, before=before,
            metadata=metadata, config=config, track_access=track_access, include_superseded=include_superseded,
            min_score=min_score, agent_id=agent_id, run_id=run_id,
        )  # fmt: skip
        origin = wired.activity.origin()
        res = await wired.search.search(req)
        if origin is not None:
            params = req.params(leave_out=("query", "user_id", "track_access"))
            _record(wired.activity.search, origin, res.user_id, res, params)
        return res

    # --- context for the next prompt (ContextService) -----------------------------------------------
    async def tiers(self, user_id: str, schema: MemorySchema, *, cache_size: int = 30, history_turns: int = 6) -> DeepCQ:
        """A :class:`~deepcontext.query.DeepCQ` whose tiers persist in the database, for ``user_id``."""
        return await self.contexts.tiers(user_id, schema, cache_size=cache_size, history_turns=history_turns)

    async def context(
        self, query: str, user_id: str, conversation_id: str | None = None, *,
        budget_tokens: int = DEFAULT_BUDGET_TOKENS, shares: ContextShares | Mapping[str, float] | None = None,
        schema: MemorySchema | None = None, min_intent: float | None = None, memory_limit: int | None = None,
        min_similarity: float = DEFAULT_MIN_SIMILARITY, max_conversation_nodes: int = DEFAULT_CONVERSATION_NODES,
        track_access: bool | None = None, agent_id: str | Iterable[str] | None = None,
        run_id: str | Iterable[str] | None = None,
    ) -> ContextResult:  # fmt: skip
        """What the next prompt needs about ``query``, within ``budget_tokens``: see
        :meth:`ContextService.context`."""
        wired = self._wired()
        req = ContextRequest.of(
            self.settings, query=query, user_id=user_id, conversation_id=conversation_id, budget_tokens=budget_tokens,
            shares=shares, schema=schema, min_intent=min_intent, memory_limit=memory_limit,
            min_similarity=min_similarity, max_conversation_nodes=max_conversation_nodes, track_access=track_access,
            agent_id=agent_id, run_id=run_id,
        )  # fmt: skip
        origin = wired.activity.origin()
        res = await wired.context.context(req)
        if origin is not None:
            params = req.params(leave_out=("query", "user_id", "budget_tokens", "track_access", "schema_"))
            params["schema"] = type(schema).__name__ if schema is not None else None
            _record(wired.activity.context, origin, res.user_id, res, params)
        return res


class _Services:
    """The services of one open DeepContext, wired once its components exist."""

    def __init__(self, c: Components, settings: DeepContextSettings, clock: Clock, tasks: BackgroundTasks) -> None:
        store, embedder, llm, ingest = c.store, c.embedder, c.llm, c.ingest
        self.ingest = ingest
        self.memories = MemoryService(store, embedder, settings, clock, ingest)
        self.search = SearchService(store, embedder, settings, clock, tasks)
        self.lifecycle = LifecycleService(store, embedder, settings, clock, llm, tasks)
        self.dialogue = DialogueService(
            store, embedder, settings, clock, ingest=ingest, tasks=tasks, llm=llm, summaries=c.summaries,
            after_derive=self.lifecycle.after_add,
        )  # fmt: skip
        self.context = ContextService(store, embedder, settings, clock, dialogue=self.dialogue, tasks=tasks)
        self.activity = ActivityLog(store, settings, clock, tasks)


#: DeepContext 0.1's name of the engine
MemoryEngine = DeepContext


def _record(write: Callable[..., None], *args: Any) -> None:
    """Queue a call's record; a failure to build it is logged, never raised into the call."""
    try:
        write(*args)
    except Exception as exc:  # noqa: BLE001 - the call has its answer; the log is secondary
        log.warning("could not record a call in the activity log: %s: %s", type(exc).__name__, exc)


def _warm_up(embedder: Embedder) -> None:
    """Load the embedder's model in a background thread; a failure shows at its first real use."""
    try:
        embedder.warm_up()
    except Exception as exc:  # noqa: BLE001 - reported where the model is used
        log.debug("embedder warm-up failed: %s", exc)
