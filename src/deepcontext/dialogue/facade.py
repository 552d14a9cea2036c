"""``DeepContext``'s conversation-graph methods, as a mixin (:class:`DialogueAPI` is one of its bases).

    async with DeepContext() as ctx:
        chat = await ctx.dialogue("ana", "trip")           # a ContextManager over ana's "trip"
        node = await chat.chat("Plan three days in Lisbon")  # plan, pack, answer, store, extract
        await chat.record("I prefer trains", "Noted.")       # a round answered elsewhere
        path = await ctx.conversation_path("ana", "trip")    # what a context builder shows
        print(await ctx.export_conversation("ana", "trip", "mermaid"))

:meth:`DialogueAPI.dialogue` returns a :class:`DialogueSession`: a
:class:`~deepcontext.dialogue.manager.ContextManager` whose graph is the conversation's turns in the
DeepContext database (:class:`~deepcontext.dialogue.sqlstore.StoreDialogueBackend`), plus:

- every node appended through the session (``chat``, ``record``, or ``session.graph.add_node`` /
  ``append`` / ``add_chain``) feeds the engine's memory extraction: ``chat`` and ``record`` derive
  right after the round, :meth:`DialogueSession.flush` derives what plain graph calls appended. The
  turns exist already, so extraction goes through ``IngestService.derive``: the derived memories
  (turn memories, facts, entities, relations) cite the node's turn ids; no turn is inserted twice.
  Nodes appended by other handles (another process, a plain ``LLMContextGraph``) are not derived
  by this session.
- key memories get embeddings from the DeepContext's embedder, so ``ctx.search`` finds them by
  meaning as well as by keywords;
- planning: the LLM planner (:class:`~deepcontext.dialogue.llm_planner.LLMPlanner`) when the
  DeepContext has an LLM, else the offline planner; answering: ``fetcher`` or the DeepContext's LLM
  (as an :class:`~deepcontext.dialogue.fetcher.LLMFetcher`); summaries: the same model, or
  extractive ones offline. Without any model, ``chat`` raises ``ConfigurationError``; ``record``
  and everything else work offline.
- compression archives nodes and adds a summary node; it never deletes a turn, and nodes cited by a
  non-packable key memory are never compressed (key memories themselves are never compressed).

The structure of each conversation is cached per DeepContext (a few conversations, least recently
used dropped), so repeated calls do not reload it; changes by other processes are picked up at every
call.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from deepcontext.errors import ConfigurationError, ValidationError
from deepcontext.services.validation import check_id

if TYPE_CHECKING:
    from deepcontext.dialogue.context import ConversationPath
    from deepcontext.dialogue.plan import Planner
    from deepcontext.dialogue.session import DialogueSession, TrackedBackend

__all__ = ["DialogueAPI"]

#: conversations whose structure a DeepContext keeps cached
CACHED_CONVERSATIONS = 16


class DialogueAPI:
    """Conversation graphs (Memory Graph) over the DeepContext database (see the module docstring)."""

    def _dialogue_backend(self, user_id: str, conversation_id: str) -> TrackedBackend:
        """The cached backend of a conversation (created on first use)."""
        ctx: Any = self
        ctx._check()
        user_id = check_id(user_id, "user_id")
        conversation_id = check_id(conversation_id, "conversation_id")
        cache: OrderedDict[tuple[str, str], TrackedBackend] = ctx.__dict__.setdefault("_dialogue_cache", OrderedDict())
        key = (user_id, conversation_id)
        backend = cache.get(key)
        if backend is None or backend.store is not ctx.store:
            from deepcontext.dialogue.session import TrackedBackend

            backend = TrackedBackend(
                ctx.store, user_id=user_id, conversation_id=conversation_id, clock=ctx.clock, embed=ctx.embedder.embed
            )
            cache[key] = backend
        cache.move_to_end(key)
        while len(cache) > CACHED_CONVERSATIONS:
            cache.popitem(last=False)
        return backend

    async def dialogue(
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

        ``fetcher``: what answers (anything with the seed's async ``fetch``, e.g. an
        :class:`~deepcontext.dialogue.fetcher.LLMFetcher`); default: the DeepContext's LLM, or none
        offline (then only ``record`` adds rounds). ``planner``: a Planner, ``"llm"`` (the
        DeepContext's LLM, else the fetcher, plans) or ``"offline"``; default: ``"llm"`` when the
        DeepContext has an LLM, else ``"offline"``. ``extract=False`` stores rounds without
        deriving memories.
        """
        from deepcontext.dialogue.manager import DEFAULT_SYSTEM_PROMPT
        from deepcontext.dialogue.offline_planner import OfflinePlanner
        from deepcontext.dialogue.session import DialogueSession

        ctx: Any = self
        backend = self._dialogue_backend(user_id, conversation_id)
        await asyncio.to_thread(backend.tip_node_id)  # load (or refresh) the structure off the loop
        llm = getattr(ctx, "_llm", None)
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
            ctx,
            backend,
            fetcher,
            extract=extract,
            max_context_nodes=max_context_nodes,
            pack_keep_recent=pack_keep_recent,
            planner=chosen,
            system_prompt=system_prompt or DEFAULT_SYSTEM_PROMPT,
        )

    async def conversation_path(
        self,
        user_id: str,
        conversation_id: str = "default",
        *,
        node_id: int | None = None,
        max_nodes: int | None = 8,
        strategy: str = "longest",
    ) -> ConversationPath:
        """The conversation's active chain (summaries before the rounds that follow them) ending at
        ``node_id`` or the tip, its last ``max_nodes`` nodes: see
        :func:`deepcontext.dialogue.context.conversation_path`. Empty for an unknown conversation."""
        from deepcontext.dialogue.context import conversation_path

        backend = self._dialogue_backend(user_id, conversation_id)
        return await asyncio.to_thread(
            conversation_path, node_id=node_id, max_nodes=max_nodes, strategy=strategy, backend=backend
        )

    async def export_conversation(self, user_id: str, conversation_id: str = "default", format: str = "json") -> str:
        """The conversation graph as ``json``, Graphviz ``dot`` or ``mermaid`` text (see
        :mod:`deepcontext.dialogue.export`)."""
        from deepcontext.dialogue.export import export_graph
        from deepcontext.dialogue.graph import LLMContextGraph

        backend = self._dialogue_backend(user_id, conversation_id)
        return await asyncio.to_thread(export_graph, LLMContextGraph(backend), format)

    async def compress_conversation(
        self,
        user_id: str,
        conversation_id: str = "default",
        *,
        node_id: int | None = None,
        keep_recent: int = 2,
        max_nodes: int | None = 20,
    ) -> int | None:
        """Compress the older part of the chain ending at ``node_id`` (default: the tip) into a
        summary node: by the DeepContext's LLM when configured, else extractively. Returns the
        summary node's id or None (nothing to compress). Never deletes a turn."""
        session = await self.dialogue(user_id, conversation_id, planner="offline", extract=False)
        return await session.compress(node_id, keep_recent=keep_recent, max_nodes=max_nodes)
