"""The session behind ``DeepContext.dialogue``: a ContextManager over a DeepContext conversation
whose appended nodes feed the engine's memory extraction (see :mod:`deepcontext.dialogue.conversations`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from deepcontext.dialogue.manager import ContextManager
from deepcontext.dialogue.rules import extract_key_memories, formula_key
from deepcontext.dialogue.sqlstore import StoreDialogueBackend
from deepcontext.dialogue.vocabulary import LLMContext, LLMContextPair
from deepcontext.errors import ConfigurationError, LLMError, ValidationError
from deepcontext.text import content_hash

if TYPE_CHECKING:
    from deepcontext.dialogue.backend import NewNode
    from deepcontext.dialogue.conversations import DialogueService
    from deepcontext.types import AddResponse

__all__ = ["DialogueSession", "SyncDialogueSession", "TrackedBackend"]

log = logging.getLogger("deepcontext.dialogue")


class TrackedBackend(StoreDialogueBackend):
    """A store-backed conversation that remembers the nodes appended through it, until derived."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[int] = []

    def add_nodes(self, nodes: Sequence[NewNode], *, chain: bool = False, after_tip: bool = False) -> list[int]:
        ids = super().add_nodes(nodes, chain=chain, after_tip=after_tip)
        with self._lock:
            self._pending.extend(ids)
        return ids

    def take_pending(self) -> list[int]:
        """The nodes appended and not derived yet (the list is emptied)."""
        with self._lock:
            out, self._pending = self._pending, []
        return out

    def give_back(self, node_ids: Iterable[int]) -> None:
        """Put nodes back in front of the queue (their derivation failed)."""
        with self._lock:
            self._pending = [*node_ids, *self._pending]


class DialogueSession(ContextManager):
    """A :class:`ContextManager` bound to one conversation of a DeepContext (see the module docstring)."""

    def __init__(
        self, service: DialogueService, backend: TrackedBackend, fetcher: Any, *, extract: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(fetcher, backend=backend, **kwargs)
        self.service = service
        self.backend: TrackedBackend = backend
        self.user_id = backend.user_id
        self.conversation_id = backend.conversation_id
        #: derive memories from appended nodes (False: store the rounds only)
        self.extract = extract
        #: the engine's answer for the last derivation, and the error of the last failed one
        self.last_derived: AddResponse | None = None
        self.last_derive_error: str | None = None

    async def chat(self, user_message: str, parent_ids: Iterable[int] | None = None, auto_plan: bool = True) -> int:
        """One round (see :class:`ContextManager`), then memory extraction from the new node."""
        if self.fetcher is None:
            raise ConfigurationError(
                "no LLM to answer with: configure one (llm_* settings) or pass fetcher= to DeepContext.dialogue(); "
                "use record() to store rounds answered elsewhere"
            )
        node = await super().chat(user_message, parent_ids=parent_ids, auto_plan=auto_plan)
        await self._derive_quietly()
        return node

    async def record(self, user_message: str, assistant_message: str = "", parent_ids: Iterable[int] | None = None) -> int:
        """Store a round answered elsewhere (no planning, no model call), keep the key memories the
        rules find in it (formulas, notes, preferences...: committed, citing the new node) and
        derive its memories. No ``parent_ids``: it continues the conversation's tip. Returns the
        node id."""
        if not isinstance(user_message, str) or not isinstance(assistant_message, str):
            raise ValidationError("messages must be strings", field="message")
        if not user_message.strip() and not assistant_message.strip():
            raise ValidationError("a round needs a user message or an answer", field="message")
        pair = LLMContextPair(LLMContext("user", user_message), LLMContext("assistant", assistant_message))
        round_id = len(self.graph)
        node = self.graph.append(pair) if parent_ids is None else self.graph.add_node(pair, parent_ids=parent_ids)
        found = extract_key_memories(user_message, from_user=True) + extract_key_memories(assistant_message, from_user=False)
        for m in found:  # key memories by rules, committed at once (no answer can fail any more)
            key = "formula:" + formula_key(m.content) if "formula" in m.tags else "text:" + content_hash(m.content)
            self.memory_store.add_memory(
                m.content,
                source_nodes={node},
                tags=set(m.tags),
                pinned=m.pinned,
                packable=m.packable,
                canonical_key=key,
                turn_id=round_id,
                status="committed",
            )
        await self._derive_quietly()
        return node

    async def compress(self, node_id: int | None = None, *, keep_recent: int = 2, max_nodes: int | None = 20) -> int | None:
        """Fold the older part of the chain ending at ``node_id`` (default: the tip) into a summary
        node, written by the session's summary model or extractively offline. Returns the summary
        node's id, or None when there is not enough to compress. No turn is deleted."""
        target = node_id if node_id is not None else self.graph.tip_node_id()
        if target is None:
            return None
        with self.backend.topology() as topo:
            if target in topo:
                target = topo.resolve(target)
        return await self.graph.compress_ancestors(self.summary_agent, target, max_nodes=max_nodes, keep_recent=keep_recent)

    async def flush(self) -> AddResponse | None:
        """Derive memories from every node appended through this session and not derived yet.
        Returns the engine's response (None when there was nothing to derive)."""
        pending = self.backend.take_pending()
        if not pending or not self.extract:
            return None
        try:
            response = await self.service.derive(self.backend, pending)
        except BaseException:
            self.backend.give_back(pending)
            raise
        self.last_derived = response
        self.last_derive_error = None
        return response

    async def _derive_quietly(self) -> None:
        """``flush`` after a round: a model failure is logged and the nodes stay queued (the round
        itself is stored)."""
        try:
            await self.flush()
        except LLMError as exc:
            self.last_derive_error = str(exc)
            log.warning("memory extraction of the dialogue failed (%s); the nodes stay queued", exc)


class SyncDialogueSession:
    """The blocking form of a :class:`DialogueSession` (what ``SyncDeepContext.dialogue`` returns):
    ``chat``, ``record``, ``compress`` and ``flush`` block; everything else (``graph``,
    ``memory_store``, ``last_report``...) is the session's own."""

    def __init__(self, session: DialogueSession, run: Any) -> None:
        self._session = session
        self._runner = run

    @property
    def session(self) -> DialogueSession:
        """The async session behind this shell."""
        return self._session

    def chat(self, user_message: str, parent_ids: Iterable[int] | None = None, auto_plan: bool = True) -> int:
        return int(self._runner(self._session.chat(user_message, parent_ids=parent_ids, auto_plan=auto_plan)))

    def record(self, user_message: str, assistant_message: str = "", parent_ids: Iterable[int] | None = None) -> int:
        return int(self._runner(self._session.record(user_message, assistant_message, parent_ids=parent_ids)))

    def compress(self, node_id: int | None = None, *, keep_recent: int = 2, max_nodes: int | None = 20) -> int | None:
        result: int | None = self._runner(self._session.compress(node_id, keep_recent=keep_recent, max_nodes=max_nodes))
        return result

    def flush(self) -> AddResponse | None:
        result: AddResponse | None = self._runner(self._session.flush())
        return result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._session, name)
