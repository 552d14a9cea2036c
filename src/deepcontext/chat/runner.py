"""Running a chat: lines in, rich output out, from a terminal or from any text stream.

:func:`run_chat` is the program behind ``deepcontext chat``. The DeepContext and the
:class:`~deepcontext.chat.conversation.ChatSession` live on an event loop in a thread of their own,
so background work goes on while the user types; the calling thread reads the lines (``input()``
on a terminal, else ``readline()`` with the line echoed), which keeps Ctrl-C simple: at the prompt
it leaves, during an answer it stops the answer, a second one while closing forces the exit.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import IO, TYPE_CHECKING, Any, TypeVar

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console

    from deepcontext.chat.conversation import ChatSession
    from deepcontext.core import DeepContext

__all__ = ["PROMPT", "ConsoleLogHandler", "LoopThread", "run_chat"]

T = TypeVar("T")
log = logging.getLogger("deepcontext.chat")

#: the prompt before each line
PROMPT = "you › "


class LoopThread:
    """An asyncio event loop running in a daemon thread; :meth:`call` runs a coroutine on it from
    another thread and waits, and a KeyboardInterrupt while waiting cancels that coroutine (waiting
    for it to finish its cleanup) before it is raised again."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="deepcontext-chat-loop", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def start(self) -> LoopThread:
        self._thread.start()
        return self

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (its exception is raised here)."""
        done = threading.Event()
        box: dict[str, asyncio.Task[T]] = {}

        def submit() -> None:
            task = self.loop.create_task(coro)
            task.add_done_callback(lambda _: done.set())
            box["task"] = task

        def cancel() -> None:
            box["task"].cancel()  # submit ran before: the loop runs callbacks in order

        self.loop.call_soon_threadsafe(submit)
        try:
            done.wait()
        except KeyboardInterrupt:
            self.loop.call_soon_threadsafe(cancel)
            done.wait()  # the coroutine's cleanup (a second Ctrl-C gets out of here too)
            raise
        return box["task"].result()

    def stop(self) -> None:
        """Cancel what is left on the loop, stop it and close it."""

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        if self._thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(drain(), self.loop).result(timeout=10)
            except Exception:
                log.debug("cancelling the chat's last tasks failed", exc_info=True)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        if not self.loop.is_running():
            self.loop.close()


class ConsoleLogHandler(logging.Handler):
    """deepcontext's warnings (an LLM retry, a failed summary) as one dim line in the chat, instead
    of raw log lines on stderr in the middle of it."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.WARNING)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())
            self.console.print(Text(f"{record.levelname.lower()}: {text}", style="dim yellow"))
        except Exception:  # noqa: BLE001 - logging must never break the chat
            self.handleError(record)


def _reader(stdin: IO[str], console: Console, interactive: bool) -> Callable[[], str | None]:
    """A function returning the next line (None at the end of input)."""
    if interactive:
        try:
            import readline  # noqa: F401 - enables line editing and history in input()
        except ImportError:  # pragma: no cover - Windows
            pass
        # the prompt goes through input() so that readline knows its width; \001 \002 mark the colour codes
        prompt = "\001\033[1;36m\002" + PROMPT + "\001\033[0m\002" if console.is_terminal else PROMPT

        def read_tty() -> str | None:
            try:
                return input(prompt)
            except EOFError:
                console.print()
                return None

        return read_tty

    def read_stream() -> str | None:
        console.print(Text(PROMPT, style="bold cyan"), end="")
        line = stdin.readline()
        if not line:
            console.print()
            return None
        console.print(line.rstrip("\r\n"), markup=False, highlight=False)
        return line

    return read_stream


def run_chat(
    open_ctx: Callable[[], DeepContext],
    *,
    user_id: str,
    conversation_id: str = "chat",
    stdin: IO[str] | None = None,
    console: Console | None = None,
    budget_tokens: int = 2000,
    system_prompt: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    interactive: bool | None = None,
    debug: bool = False,
) -> int:
    """Run a chat until ``exit``, the end of input or Ctrl-C; returns the exit status (0 when it left
    cleanly, 1 when it could not start, 130 when a second Ctrl-C cut the closing short).

    ``open_ctx`` makes the (not yet initialised) DeepContext; it is initialised and closed here, on
    the chat's loop. ``stdin`` defaults to ``sys.stdin``, ``console`` to a console on stdout;
    ``interactive`` (default: ``stdin`` is the process's terminal) reads with ``input()``.
    ``debug`` prints the traceback of unexpected errors.
    """
    from rich.console import Console

    from deepcontext.chat.conversation import ChatSession
    from deepcontext.errors import DeepContextError

    stdin = stdin if stdin is not None else sys.stdin
    console = console if console is not None else Console(highlight=False)
    if interactive is None:
        interactive = stdin is sys.stdin and _isatty(stdin)
    read = _reader(stdin, console, interactive)
    logs = ConsoleLogHandler(console)
    logging.getLogger("deepcontext").addHandler(logs)
    runner = LoopThread().start()
    state: dict[str, Any] = {}

    async def open_chat() -> ChatSession:
        ctx = open_ctx()
        state["ctx"] = ctx
        await ctx.init()
        chat = ChatSession(
            ctx,
            console,
            user_id=user_id,
            conversation_id=conversation_id,
            budget_tokens=budget_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            max_tokens=max_tokens,
            debug=debug,
        )
        await chat.start()
        return chat

    async def close(chat: ChatSession | None) -> None:
        try:
            if chat is not None:
                await chat.close()
        finally:
            ctx = state.get("ctx")
            if ctx is not None:
                await ctx.close()

    code = 0
    chat: ChatSession | None = None
    try:
        try:
            chat = runner.call(open_chat())
            while True:
                line = read()
                if line is None or not runner.call(chat.handle(line)):
                    break
        except KeyboardInterrupt:
            console.print()
            console.print(Text("interrupted", style="dim"))
        except (DeepContextError, OSError) as exc:
            console.print(Text(f"error: {' '.join(str(exc).split())}", style="red"))
            code = 1
        try:
            runner.call(close(chat))
        except KeyboardInterrupt:
            code = 130
        except (DeepContextError, OSError) as exc:
            console.print(Text(f"error while closing: {' '.join(str(exc).split())}", style="red"))
            code = code or 1
    finally:
        runner.stop()
        logging.getLogger("deepcontext").removeHandler(logs)
    return code


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
