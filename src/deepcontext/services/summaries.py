"""Running conversation summaries, refreshed by an LLM in the background after adds.

After an add (never inside its transaction, never making it wait) :meth:`SummaryService.schedule`
starts a background task for the conversation, unless one is already running for it (then that one
checks again when it finishes). The task counts the turns that arrived since the stored summary; from
``summary_every_turns`` on it asks the LLM for an updated summary (previous summary + the new turns,
:func:`deepcontext.llm.tasks.summarize_conversation`) and writes it compare-and-set
(:meth:`deepcontext.store.summaries.Summaries.write`). An LLM failure is logged and changes nothing:
the turns stay "new" and the next add tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from deepcontext.clock import Clock
from deepcontext.errors import DeepContextError, LLMError
from deepcontext.llm.client import LLM
from deepcontext.llm.tasks import summarize_conversation
from deepcontext.store.interface import Store
from deepcontext.types import Turn

__all__ = ["SummaryService"]

log = logging.getLogger("deepcontext.summaries")

#: turns sent to the LLM in one refresh at most (the oldest of a larger backlog are left out; the
#: summarizer cuts the text further to its character budget)
MAX_TURNS_PER_REFRESH = 400
#: refreshes of one conversation in a row before a task gives up (another process keeps winning)
_MAX_ROUNDS = 3


class SummaryService:
    """Keeps ``conversations.summary`` up to date with an LLM. One per :class:`DeepContext`."""

    def __init__(self, store: Store, llm: LLM, clock: Clock, *, every_turns: int, max_words: int = 200) -> None:
        self.store = store
        self.llm = llm
        self.clock = clock
        self.every_turns = every_turns
        self.max_words = max_words
        self._tasks: dict[tuple[str, str], asyncio.Task[Any]] = {}
        self._again: set[tuple[str, str]] = set()

    @property
    def enabled(self) -> bool:
        return self.every_turns > 0 and self.store.summaries is not None

    def schedule(self, user_id: str, conversation_id: str, spawn: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        """Refresh the conversation's summary in the background if enough new turns arrived.
        Returns at once; ``spawn`` starts the coroutine as a task the owner waits for on close."""
        if not self.enabled:
            return
        key = (user_id, conversation_id)
        running = self._tasks.get(key)
        if running is not None and not running.done():
            self._again.add(key)  # the running task looks again before it ends
            return
        task = spawn(self._run(key))
        if isinstance(task, asyncio.Task):
            self._tasks[key] = task
            task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        for key, running in list(self._tasks.items()):
            if running is task:
                del self._tasks[key]

    async def wait(self, user_id: str, conversation_id: str) -> None:
        """Wait for a running refresh of this conversation, if any."""
        task = self._tasks.get((user_id, conversation_id))
        if task is not None and not task.done():
            await asyncio.gather(task, return_exceptions=True)

    async def get(self, user_id: str, conversation_id: str) -> str | None:
        """The stored summary (None if none), after any running refresh of it finished."""
        await self.wait(user_id, conversation_id)
        if self.store.summaries is None:
            return None
        state = await asyncio.to_thread(self.store.summaries.read, user_id, conversation_id)
        return state.summary if state is not None else None

    # ------------------------------------------------------------------------------------------
    async def _run(self, key: tuple[str, str]) -> None:
        try:
            rounds = 0
            while rounds < _MAX_ROUNDS:
                self._again.discard(key)
                rounds += 1
                if not await self.refresh(*key) and key not in self._again:
                    return
        except LLMError as exc:
            log.warning("conversation summary of %s/%s not refreshed: %s", key[0], key[1], exc)
        except DeepContextError as exc:
            log.warning("conversation summary of %s/%s not refreshed: %s", key[0], key[1], exc)
        except Exception:  # a background task must never die unobserved
            log.exception("conversation summary of %s/%s failed", key[0], key[1])

    async def refresh(self, user_id: str, conversation_id: str, *, force: bool = False) -> bool:
        """Summarize the turns since the stored summary if there are ``every_turns`` of them (any
        number with ``force``). True if a new summary was written. Raises the LLM's error."""
        summaries = self.store.summaries
        if summaries is None:
            return False
        state, new = await asyncio.to_thread(summaries.pending, user_id, conversation_id)
        if state is None or new == 0 or (not force and new < self.every_turns):
            return False
        since = state.summary_turn_id
        turns = await asyncio.to_thread(self._turns_since, user_id, conversation_id, since, min(new, MAX_TURNS_PER_REFRESH))
        if not turns:
            return False
        text = await summarize_conversation(self.llm, turns, state.summary, max_words=self.max_words)
        written = await asyncio.to_thread(
            summaries.write,
            user_id,
            conversation_id,
            summary=text,
            upto_turn_id=turns[-1].id,
            expected_turn_id=since,
            now=self.clock.now(),
        )
        if written:
            log.info("conversation summary of %s/%s refreshed (%d new turns)", user_id, conversation_id, len(turns))
        return written

    def _turns_since(self, user_id: str, conversation_id: str, after_turn_id: int | None, limit: int) -> list[Turn]:
        """The last ``limit`` turns of the conversation with an id above ``after_turn_id``, oldest first."""
        turns = self.store.recent_turns(user_id, conversation_id, limit)
        return turns if after_turn_id is None else [t for t in turns if t.id > after_turn_id]
