"""One chat: a DeepContext conversation driven a line at a time (what ``deepcontext chat`` runs).

:class:`ChatSession` has no input loop: ``start()`` prints the banner, ``handle(line)`` runs a
command or a message (False means leave), ``close()`` finishes the work in flight. For a message
the context is built, the LLM's answer is streamed (nothing is stored if it fails), and the round
is recorded on the conversation, which derives its memories; storing runs to its end even when the
chat is interrupted. Without an LLM the message alone is stored and the chat shows the context an
LLM would have received.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import aclosing, nullcontext
from typing import TYPE_CHECKING, Any

from rich.text import Text

from deepcontext.chat import render
from deepcontext.chat.commands import Command, Invalid, Message, parse_line
from deepcontext.chat.prompt import DEFAULT_SYSTEM_PROMPT, TurnContext, build_turn
from deepcontext.errors import DeepContextError, LLMError, ValidationError

if TYPE_CHECKING:
    from rich.console import Console

    from deepcontext.dialogue.session import DialogueSession

__all__ = ["OFFLINE_NOTICE", "ChatSession"]

log = logging.getLogger("deepcontext.chat")

OFFLINE_NOTICE = (
    "No LLM is configured, so the chat cannot answer: answers need an LLM. To configure one, set for example "
    "DEEPCONTEXT_LLM_BASE_URL=http://localhost:11434/v1 and DEEPCONTEXT_LLM_MODEL=qwen3:8b (Ollama, vLLM, "
    "LM Studio), or DEEPCONTEXT_OPENAI_API_KEY=sk-... (OpenAI; DEEPCONTEXT_LLM_PROVIDER=openrouter with "
    "DEEPCONTEXT_OPENROUTER_API_KEY for OpenRouter); see docs/llms.md. Meanwhile every message is "
    "stored and remembered, and each turn shows the memories it stored and the context an LLM would have received."
)


class ChatSession:
    """A chat over one conversation of one user (see the module docstring).

    Args:
        ctx: an initialised :class:`~deepcontext.DeepContext` (the chat does not close it).
        console: where everything is printed (a rich Console; over a StringIO in tests).
        user_id, conversation_id: whose conversation.
        budget_tokens: the context's token budget per message.
        system_prompt: put before the context in the system message.
        temperature, max_tokens: passed to the LLM.
        debug: print the traceback of an unexpected error (else one line, and the chat goes on).
    """

    def __init__(
        self,
        ctx: Any,
        console: Console,
        *,
        user_id: str,
        conversation_id: str = "chat",
        budget_tokens: int = 2000,
        system_prompt: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        debug: bool = False,
    ) -> None:
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
            raise ValidationError("budget_tokens must be a positive integer", field="budget_tokens")
        self.ctx = ctx
        self.debug = debug
        self.console = console
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.budget_tokens = budget_tokens
        self.system_prompt = system_prompt or DEFAULT_SYSTEM_PROMPT
        self.temperature = temperature
        self.max_tokens = max_tokens
        #: the context of the last message sent (what ``context`` shows)
        self.last_turn: TurnContext | None = None
        #: the node the next message continues from after ``branch`` (None: the conversation's tip)
        self.branch_from: int | None = None
        #: the last node this chat stored
        self.last_node: int | None = None
        self.dialogue: DialogueSession | None = None
        self._storing: set[asyncio.Task[Any]] = set()

    @property
    def llm(self) -> Any:
        return self.ctx.llm

    # --- start and stop ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the conversation and print the banner (offline: the notice, once)."""
        self.dialogue = await self.ctx.dialogue(self.user_id, self.conversation_id, planner="offline")
        out = self.console
        out.print(
            Text.assemble(("deepcontext chat", "bold"), f" · user {self.user_id!r} · conversation {self.conversation_id!r}")
        )
        if self.llm is None:
            out.print(Text(OFFLINE_NOTICE, style="yellow"))
        else:
            out.print(Text(f"answers by {_describe_llm(self.llm)}; context budget {self.budget_tokens} tokens", style="dim"))
        path = await self.ctx.conversation_path(self.user_id, self.conversation_id, max_nodes=1)
        if path.nodes:
            last = path.nodes[-1]
            self.last_node = last.id
            said = " | ".join(f"{role}: {render.clip(content, 60)}" for role, content in last.messages)
            out.print(
                Text(
                    f"continuing after [{last.id}] ({path.chain_length} node{'' if path.chain_length == 1 else 's'} "
                    f"on this path): {said}",
                    style="dim",
                )
            )
        else:
            out.print(Text("a new conversation", style="dim"))
        out.print(Text("Type a message, or help for the commands; exit or Ctrl-C leaves.", style="dim"))

    async def close(self) -> None:
        """Finish storing the round in flight (if the chat was interrupted) and say goodbye."""
        if self._storing:  # a round interrupted while it was being stored: let it finish
            done = await asyncio.gather(*list(self._storing), return_exceptions=True)
            nodes = [n for n in done if isinstance(n, int)]
            if nodes:
                self.last_node = max(nodes)
        where = f"; the next start continues after [{self.last_node}]" if self.last_node is not None else ""
        self.console.print(Text(f"bye{where}", style="dim"))

    # --- one line ---------------------------------------------------------------------------------
    async def handle(self, line: str) -> bool:
        """Run one line typed by the user. Returns False when the chat should end."""
        parsed = parse_line(line)
        if parsed is None:
            return True
        if isinstance(parsed, Invalid):
            self.console.print(Text(parsed.hint, style="yellow"))
            return True
        try:
            if isinstance(parsed, Message):
                await self._message(parsed.text)
                return True
            return await self._command(parsed)
        except DeepContextError as exc:
            self.console.print(Text(f"error: {_one_line(exc)}", style="red"))
        except Exception as exc:  # one bad line must not end the chat
            log.debug("chat line failed", exc_info=True)
            if self.debug:
                self.console.print_exception()
            self.console.print(Text(f"unexpected error: {type(exc).__name__}: {_one_line(exc)}", style="red"))
        return True

    async def _command(self, cmd: Command) -> bool:
        out, ctx, user = self.console, self.ctx, self.user_id
        if cmd.name == "exit":
            return False
        if cmd.name == "help":
            out.print(render.help_view())
        elif cmd.name == "memories":
            if cmd.text:
                out.print(render.search_view(await ctx.search(cmd.text, user, limit=10)))
            else:
                page = await ctx.list(user, limit=15)
                out.print(render.memory_list_view(page.memories, page.total))
        elif cmd.name == "graph":
            out.print(render.graph_view(cmd.text, await ctx.get_entity_graph(user, cmd.text)))
        elif cmd.name == "lifecycle":
            out.print(render.lifecycle_view(await ctx.run_lifecycle(user)))
        elif cmd.name == "context":
            if self.last_turn is None:
                out.print(Text("no message sent yet in this chat: the context is built for each message", style="yellow"))
            else:
                who = "what the LLM received" if self.llm is not None else "what an LLM would have received"
                title = f"{who} for {render.clip(self.last_turn.query, 50)!r}"
                out.print(render.context_view(self.last_turn, title=title))
        elif cmd.name == "path":
            node = self.branch_from
            path = await ctx.conversation_path(user, self.conversation_id, node_id=node, max_nodes=20)
            out.print(render.path_view(path, branch_from=node))
        elif cmd.name == "branch":
            await self._branch(int(cmd.number or 0))
        elif cmd.name == "history":
            await ctx.get(cmd.number, user)  # MemoryNotFoundError for an unknown id
            out.print(render.history_view(int(cmd.number or 0), await ctx.history(cmd.number, user)))
        elif cmd.name == "forget":
            memory = await ctx.get(cmd.number, user)  # MemoryNotFoundError for another user's or an unknown id
            if memory.status.value == "deleted":
                out.print(Text(f"memory #{cmd.number} is already forgotten (history {cmd.number} shows when)"))
                return True
            await ctx.delete(cmd.number, user)
            out.print(Text(f"forgot memory #{cmd.number} (deleted; history {cmd.number} still shows it)"))
        return True

    async def _branch(self, node_id: int) -> None:
        from deepcontext.dialogue.vocabulary import NodeNotFoundError

        try:
            path = await self.ctx.conversation_path(self.user_id, self.conversation_id, node_id=node_id, max_nodes=1)
        except NodeNotFoundError:
            self.console.print(
                Text(f"no node [{node_id}] in conversation {self.conversation_id!r}: path shows the node ids", style="yellow")
            )
            return
        self.branch_from = node_id
        said = " | ".join(f"{role}: {render.clip(content, 60)}" for role, content in path.nodes[-1].messages)
        tip = await asyncio.to_thread(self.dialogue.graph.tip_node_id) if self.dialogue else None
        note = " (the tip: no branch)" if node_id == tip else " (a new branch of the conversation)"
        self.console.print(Text(f"the next message continues from [{node_id}]{note}: {said}"))

    # --- a message --------------------------------------------------------------------------------
    async def _message(self, text: str) -> None:
        turn = await build_turn(
            self.ctx,
            text,
            self.user_id,
            self.conversation_id,
            budget_tokens=self.budget_tokens,
            system_prompt=self.system_prompt,
            branch_from=self.branch_from,
        )
        self.last_turn = turn
        if self.llm is None:
            node = await self._store(text, "", turn.branch_from)
            await self._show_stored(node, verbose=True, note=" (your message only: no answer without an LLM)")
            self.console.print(render.summary_line(turn, offline=True))
            self.console.print(render.prompt_view(turn, title="what an LLM would have received"))
            return
        answer = await self._answer(turn)
        if answer is None:
            return
        with self._busy("remembering…"):
            node = await self._store(text, answer, turn.branch_from)
        await self._show_stored(node, verbose=False)
        self.console.print(render.summary_line(turn))

    def _busy(self, what: str) -> Any:
        """A spinner on a terminal while something slow runs (nothing on other outputs)."""
        if self.console.is_terminal:
            return self.console.status(what, spinner="dots")
        return nullcontext()

    async def _answer(self, turn: TurnContext) -> str | None:
        """Stream the LLM's answer to the console; None (and a one-line error) when it fails."""
        out = self.console
        parts: list[str] = []
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        waiting = out.status("thinking…", spinner="dots") if out.is_terminal else None
        if waiting is not None:
            waiting.start()
        try:
            async with aclosing(self.llm.chat_stream(turn.messages, **options)) as stream:
                async for chunk in stream:
                    if not parts:  # the label comes with the first piece (retry warnings go before it)
                        if waiting is not None:
                            waiting.stop()
                        out.print(Text("assistant › ", style="bold green"), end="")
                    parts.append(chunk)
                    out.out(chunk, end="", highlight=False)
        except LLMError as exc:
            if parts:
                out.print()
            out.print(Text(f"the LLM failed: {_one_line(exc)}; nothing was stored, send the message again", style="red"))
            return None
        finally:
            if waiting is not None:
                waiting.stop()
        answer = "".join(parts)
        if parts:
            out.print()
        if not answer.strip():
            out.print(Text("the LLM answered nothing; nothing was stored, send the message again", style="red"))
            return None
        return answer

    async def _store(self, message: str, answer: str, branch_from: int | None) -> int:
        """Store the round (continuing the tip, or ``branch_from``) and derive its memories. Runs to
        its end even if the caller is cancelled (``close`` waits for it)."""
        session = self.dialogue
        assert session is not None
        session.last_derived = None
        parents = [branch_from] if branch_from is not None else None
        task = asyncio.ensure_future(session.record(message, answer, parent_ids=parents))
        self._storing.add(task)
        task.add_done_callback(self._storing.discard)
        node = int(await asyncio.shield(task))
        self.last_node = node
        self.branch_from = None  # the new node is the tip now: the next message continues it
        return node

    async def _show_stored(self, node: int, *, verbose: bool, note: str = "") -> None:
        session = self.dialogue
        assert session is not None
        if session.last_derive_error:
            self.console.print(
                Text(
                    f"[{node}] stored{note}; its memories are not derived yet "
                    f"({_one_line_text(session.last_derive_error)}): they are tried again after the next message",
                    style="yellow",
                )
            )
            return
        ids = session.last_derived.memory_ids if session.last_derived is not None else []
        memories = await asyncio.to_thread(self.ctx.store.get_memories, self.user_id, ids) if ids else []
        self.console.print(render.stored_view(node, memories, verbose=verbose, note=note))


def _describe_llm(llm: Any) -> str:
    backends = getattr(llm, "backends", None)
    if isinstance(backends, dict) and backends:
        default = getattr(llm, "default", None) or next(iter(backends))
        main = backends.get(default)
        fallback = getattr(llm, "fallback", None) or []
        text = f"{getattr(main, 'model', '?')} (backend {default!r})"
        return text + (f", falling back to {', '.join(map(repr, fallback))}" if fallback else "")
    return f"{getattr(llm, 'model', '') or type(llm).__name__}"


def _one_line_text(text: str) -> str:
    return " ".join(text.split())


def _one_line(exc: BaseException) -> str:
    return _one_line_text(str(exc)) or type(exc).__name__
