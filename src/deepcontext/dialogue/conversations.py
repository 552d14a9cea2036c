"""Conversation graphs (Memory Graph) over the DeepContext database: what ``DeepContext.dialogue``,
``conversation_path``, ``export_conversation`` and ``compress_conversation`` delegate to.

Nodes appended through a session feed the engine's extraction (``IngestService.derive``: the
memories cite the node's turn ids; no turn is inserted twice); nodes appended by other handles are
not derived by it. Key memories are embedded with the DeepContext's embedder. Planning and answers
use the DeepContext's LLM when there is one, else the offline planner (``chat`` then needs a
``fetcher``). Compression adds a summary node and never deletes a turn. The structure of a few
recent conversations is cached; changes by other processes are picked up at every call.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from deepcontext.errors import ConfigurationError, ValidationError
from deepcontext.services.validation import check_id, check_row_id

if TYPE_CHECKING:
    from deepcontext.clock import Clock
    from deepcontext.dialogue.context import ConversationPath
    from deepcontext.dialogue.plan import Planner
    from deepcontext.dialogue.session import DialogueSession, TrackedBackend
    from deepcontext.embed.embedder import Embedder
    from deepcontext.llm.client import LLM
    from deepcontext.services.background import BackgroundTasks
    from deepcontext.services.ingest import IngestService
    from deepcontext.services.summaries import SummaryService
    from deepcontext.settings import DeepContextSettings
    from deepcontext.store.interface import Store
    from deepcontext.types import AddResponse

__all__ = ["CACHED_CONVERSATIONS", "DialogueService"]

#: conversations whose structure a DeepContext keeps cached
CACHED_CONVERSATIONS = 16

#: roles the engine's extraction accepts
_ROLES = ("user", "assistant", "system", "tool")


class DialogueService:
    """The conversation graphs of every user of one DeepContext (see the module docstring).

    ``after_derive`` runs after each derivation, as after an add (auto-consolidation)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: DeepContextSettings,
        clock: Clock,
        *,
        ingest: IngestService,
        tasks: BackgroundTasks,
        llm: LLM | None = None,
        summaries: SummaryService | None = None,
        after_derive: Callable[[str, AddResponse], None] | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.ingest = ingest
        self.tasks = tasks
        self.llm = llm
        self.summaries = summaries
        self.after_derive = after_derive
        self._cache: OrderedDict[tuple[str, str], TrackedBackend] = OrderedDict()

    def backend(self, user_id: str, conversation_id: str) -> TrackedBackend:
        """The cached backend of a conversation (created on first use)."""
        user_id = check_id(user_id, "user_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        key = (user_id, conversation_id)
        backend = self._cache.get(key)
        if backend is None:
            from deepcontext.dialogue.session import TrackedBackend

            backend = TrackedBackend(
                self.store, user_id=user_id, conversation_id=conversation_id, clock=self.clock, embed=self.embedder.embed
            )
            self._cache[key] = backend
        self._cache.move_to_end(key)
        while len(self._cache) > CACHED_CONVERSATIONS:
            self._cache.popitem(last=False)
        return backend

    async def session(
        self,
        user_id: str,
        conversation_id: str = "default",
        *,
        fetcher: Any = None,
        planner: Planner | str | None = None,
        max_context_nodes: int = 6,
        pack_keep_recent: int = 1,
        system_prompt: str | None = None,
        extract: bool = True,
    ) -> DialogueSession:
        """A :class:`DialogueSession` (a ContextManager) over the conversation's turns.

        ``fetcher``: what answers (anything with the seed's async ``fetch``); default: the LLM, or
        none offline (then only ``record`` adds rounds). ``planner``: a Planner, ``"llm"`` or
        ``"offline"``; default ``"llm"`` with an LLM, else ``"offline"``. ``extract=False`` stores
        rounds without deriving memories."""
        from deepcontext.dialogue.manager import DEFAULT_SYSTEM_PROMPT
        from deepcontext.dialogue.offline_planner import OfflinePlanner
        from deepcontext.dialogue.session import DialogueSession

        backend = self.backend(user_id, conversation_id)
        await asyncio.to_thread(backend.tip_node_id)  # load (or refresh) the structure off the loop
        llm = self.llm
        if fetcher is None and llm is not None:
            from deepcontext.dialogue.fetcher import LLMFetcher

            fetcher = LLMFetcher.from_llm(llm)
        chosen: Planner
        if planner is None:
            planner = "llm" if llm is not None else "offline"
        if planner == "offline":
            chosen = OfflinePlanner()
        elif planner == "llm":
            model = llm if llm is not None else fetcher
            if model is None:
                raise ConfigurationError("planner='llm' needs an LLM: configure one or pass fetcher=")
            from deepcontext.dialogue.llm_planner import LLMPlanner

            chosen = LLMPlanner(model)
        elif isinstance(planner, str):
            raise ValidationError("planner must be 'llm', 'offline' or a Planner", field="planner")
        else:
            chosen = planner
        if not isinstance(extract, bool):
            raise ValidationError("extract must be True or False", field="extract")
        return DialogueSession(
            self,
            backend,
            fetcher,
            extract=extract,
            max_context_nodes=max_context_nodes,
            pack_keep_recent=pack_keep_recent,
            planner=chosen,
            system_prompt=system_prompt or DEFAULT_SYSTEM_PROMPT,
        )

    async def path(
        self,
        user_id: str,
        conversation_id: str = "default",
        *,
        node_id: int | None = None,
        max_nodes: int | None = 8,
        strategy: str = "longest",
    ) -> ConversationPath:
        """The conversation's active chain ending at ``node_id`` or the tip, its last ``max_nodes``
        nodes (see :func:`deepcontext.dialogue.context.conversation_path`). Empty for an unknown
        conversation."""
        from deepcontext.dialogue.context import conversation_path

        backend = self.backend(user_id, conversation_id)
        node_id = None if node_id is None else check_row_id(node_id, "node_id")
        return await asyncio.to_thread(
            conversation_path, node_id=node_id, max_nodes=max_nodes, strategy=strategy, backend=backend
        )

    async def export(self, user_id: str, conversation_id: str = "default", format: str = "json") -> str:
        """The conversation graph as ``json``, Graphviz ``dot`` or ``mermaid`` text."""
        from deepcontext.dialogue.export import export_graph
        from deepcontext.dialogue.graph import LLMContextGraph

        backend = self.backend(user_id, conversation_id)
        return await asyncio.to_thread(export_graph, LLMContextGraph(backend), format)

    async def compress(
        self,
        user_id: str,
        conversation_id: str = "default",
        *,
        node_id: int | None = None,
        keep_recent: int = 2,
        max_nodes: int | None = 20,
    ) -> int | None:
        """Compress the older part of the chain ending at ``node_id`` (default: the tip) into a
        summary node (by the LLM, else extractively). Returns its id or None. Never deletes a turn."""
        node_id = None if node_id is None else check_row_id(node_id, "node_id")
        session = await self.session(user_id, conversation_id, planner="offline", extract=False)
        return await session.compress(node_id, keep_recent=keep_recent, max_nodes=max_nodes)

    async def derive(self, backend: TrackedBackend, node_ids: list[int]) -> AddResponse | None:
        """Run the engine's extraction over the turns of ``node_ids`` (in batches of the add limit)."""
        from deepcontext.extract.interface import MessageIn

        members = backend.node_turn_ids(node_ids)
        turn_ids = [t for n in node_ids for t in members.get(n, ())]
        if not turn_ids:
            return None
        turns = await asyncio.to_thread(self.store.get_turns, backend.user_id, turn_ids)
        msgs = [
            MessageIn(index=i, role=t.role, content=t.content, said_at=t.said_at, name=t.name, turn_id=t.id)
            for i, t in enumerate(t for t in turns if t.kind == "message" and t.role in _ROLES and t.content.strip())
        ]
        limit = self.settings.max_messages_per_add
        response: AddResponse | None = None
        for start in range(0, len(msgs), limit):
            response = await self.ingest.derive(
                msgs[start : start + limit],
                user_id=backend.user_id,
                conversation_id=backend.conversation_id,
                now=self.clock.now(),
                actor="dialogue",
            )
            if self.after_derive is not None:
                self.after_derive(backend.user_id, response)
        if self.summaries is not None and response is not None:  # the running summary, as after an add
            spawn: Callable[[Coroutine[Any, Any, Any]], Any] = self.tasks.spawn
            self.summaries.schedule(backend.user_id, backend.conversation_id, spawn)
        return response
