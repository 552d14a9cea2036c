"""A LangChain-style chat memory over a DeepContext, without importing LangChain.

    memory = DeepContextMemory(SyncDeepContext(), user_id="ana", conversation_id="support")
    memory.save_context({"input": "I moved to Porto"}, {"output": "Noted!"})   # ctx.add(...)
    memory.load_memory_variables({"input": "where do I live?"})              # {"history": ctx.context(...).text}

It duck-types LangChain's ``BaseMemory`` (``memory_variables``, ``save_context``,
``load_memory_variables``, ``clear``, and the async ``asave_context`` / ``aload_memory_variables``
/ ``aclear``). The sync methods need a :class:`~deepcontext.SyncDeepContext`; the async ones work
with either kind. For a deepcq-only memory (history tier, no database) see
:class:`deepcontext.query.LangChainMemoryAdapter`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

from deepcontext.context.results import DEFAULT_BUDGET_TOKENS
from deepcontext.errors import ConfigurationError, ValidationError
from deepcontext.services.validation import check_id

__all__ = ["DeepContextMemory"]

_INPUT_KEYS = ("input", "human_input", "question")
_OUTPUT_KEYS = ("output", "response", "answer")


def _text(values: Mapping[str, Any], keys: tuple[str, ...], field: str) -> str:
    if not isinstance(values, Mapping):
        raise ValidationError(f"{field} must be a dict of chain values", field=field)
    for k in keys:
        v = values.get(k)
        if v is not None and str(v).strip():
            return str(v)
    return ""


class DeepContextMemory:
    """Chat memory backed by a DeepContext: exchanges are stored with ``add`` (memories are
    derived as usual) and each prompt gets ``ctx.context(...)``'s text for the incoming message.

    ``ctx``: a :class:`~deepcontext.SyncDeepContext` (sync and async methods) or a
    :class:`~deepcontext.DeepContext` (async methods only). ``budget_tokens`` and the other keyword
    arguments go to ``ctx.context``. ``clear()`` starts a new conversation (``conversation_id``
    followed by ``~1``, ``~2``...): later prompts no longer show the earlier turns, which stay
    stored and searchable; erase a user's data with ``ctx.delete_user``.
    """

    memory_key: str = "history"
    input_key: str = "input"
    output_key: str = "output"

    def __init__(
        self,
        ctx: Any,
        user_id: str,
        conversation_id: str = "default",
        *,
        budget_tokens: int = DEFAULT_BUDGET_TOKENS,
        memory_key: str | None = None,
        **context_options: Any,
    ) -> None:
        if not callable(getattr(ctx, "context", None)) or not callable(getattr(ctx, "add", None)):
            raise ValidationError("ctx must be a DeepContext or a SyncDeepContext", field="ctx")
        self.ctx = ctx
        self.user_id = check_id(user_id, "user_id")
        self._base = check_id(conversation_id, "conversation_id")
        self.conversation_id = self._base
        self._cleared = 0
        self.budget_tokens = budget_tokens
        self.context_options = dict(context_options)
        if memory_key is not None:
            if not isinstance(memory_key, str) or not memory_key:
                raise ValidationError("memory_key must be a non-empty string", field="memory_key")
            self.memory_key = memory_key

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    @property
    def _is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.ctx.add)

    def _sync(self) -> Any:
        if self._is_async:
            raise ConfigurationError(
                "this DeepContextMemory wraps an async DeepContext: use asave_context / aload_memory_variables "
                "/ aclear, or pass a SyncDeepContext"
            )
        return self.ctx

    @staticmethod
    def _messages(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> list[dict[str, str]]:
        human = _text(inputs, _INPUT_KEYS, "inputs")
        ai = _text(outputs, _OUTPUT_KEYS, "outputs")
        msgs = [{"role": "user", "content": human}] if human else []
        if ai:
            msgs.append({"role": "assistant", "content": ai})
        return msgs

    def _query(self, inputs: Mapping[str, Any]) -> str:
        return _text(inputs, _INPUT_KEYS, "inputs")

    # -- sync -------------------------------------------------------------------------------------
    def save_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        """Store one exchange (the human input, the AI output) in the conversation."""
        msgs = self._messages(inputs, outputs)
        ctx = self._sync()
        if msgs:
            ctx.add(msgs, self.user_id, self.conversation_id)

    def load_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, str]:
        """``{memory_key: the context text for the incoming message}`` ("" without a message)."""
        query = self._query(inputs)
        ctx = self._sync()
        if not query:
            return {self.memory_key: ""}
        res = ctx.context(query, self.user_id, self.conversation_id, budget_tokens=self.budget_tokens, **self.context_options)
        return {self.memory_key: res.text}

    def clear(self) -> None:
        """Start a new conversation (nothing is deleted)."""
        self._cleared += 1
        self.conversation_id = f"{self._base}~{self._cleared}"

    # -- async ------------------------------------------------------------------------------------
    async def asave_context(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> None:
        msgs = self._messages(inputs, outputs)
        if not msgs:
            return
        if self._is_async:
            await self.ctx.add(msgs, self.user_id, self.conversation_id)
        else:
            await asyncio.to_thread(self.ctx.add, msgs, self.user_id, self.conversation_id)

    async def aload_memory_variables(self, inputs: Mapping[str, Any]) -> dict[str, str]:
        query = self._query(inputs)
        if not query:
            return {self.memory_key: ""}
        args = (query, self.user_id, self.conversation_id)
        kw = {"budget_tokens": self.budget_tokens, **self.context_options}
        if self._is_async:
            res = await self.ctx.context(*args, **kw)
        else:
            res = await asyncio.to_thread(self.ctx.context, *args, **kw)
        return {self.memory_key: res.text}

    async def aclear(self) -> None:
        self.clear()

    def __repr__(self) -> str:
        return f"DeepContextMemory(user_id={self.user_id!r}, conversation_id={self.conversation_id!r})"
