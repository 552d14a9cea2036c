"""SyncDeepContext: the blocking shell. It owns one event loop in a background thread and runs the
async :class:`~deepcontext.core.DeepContext` methods there; no logic is copied."""

from __future__ import annotations

import asyncio
import builtins
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from deepcontext.core import DeepContext

__all__ = ["SyncDeepContext"]

T = TypeVar("T")


class SyncDeepContext:
    """The same API as :class:`DeepContext`, blocking. Takes the same arguments.

    >>> with SyncDeepContext(database_url="sqlite:///mem.db") as ctx:   # doctest: +SKIP
    ...     ctx.add([{"role": "user", "content": "I live in Lisbon"}], user_id="ana")
    ...     ctx.search("where does Ana live?", user_id="ana")
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="deepcontext-sync", daemon=True)
        self._thread.start()
        self._async = self._run(_make(args, kwargs))

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.is_closed():
            coro.close()
            from deepcontext.errors import ConfigurationError

            raise ConfigurationError("this SyncDeepContext is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def run_coroutine(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this shell's event loop and wait for its result (for blocking shells
        built on this one, such as :class:`deepcontext.compat.mem0.Memory`)."""
        return self._run(coro)

    @property
    def async_context(self) -> DeepContext:
        """The async object behind this shell."""
        return self._async

    @property
    def settings(self) -> Any:
        return self._async.settings

    def __getattr__(self, name: str) -> Any:
        """Other attributes of the async object (``store``, ``embedder``...); a coroutine method
        set on it at run time is wrapped like the generated methods."""
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._async, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **kw: self._run(attr(*a, **kw))
        if inspect.isasyncgenfunction(attr):

            async def collect(*a: Any, **kw: Any) -> list[Any]:
                return [x async for x in attr(*a, **kw)]

            return lambda *a, **kw: self._run(collect(*a, **kw))
        return attr

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._async.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    def __enter__(self) -> SyncDeepContext:
        self.init()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def dialogue(self, *args: Any, **kwargs: Any) -> Any:
        """A blocking :class:`~deepcontext.dialogue.session.SyncDialogueSession`."""
        from deepcontext.dialogue.session import SyncDialogueSession

        return SyncDialogueSession(self._run(self._async.dialogue(*args, **kwargs)), self._run)


def _blocking(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """The blocking form of ``DeepContext.<name>``: run on the shell's loop (an async iterator is
    collected into a list), with the async method's signature and docstring, so ``help()`` and
    editors show the real parameters."""
    if inspect.isasyncgenfunction(method):

        def call(self: SyncDeepContext, /, *args: Any, **kwargs: Any) -> Any:
            async def collect() -> builtins.list[Any]:
                return [x async for x in getattr(self._async, name)(*args, **kwargs)]

            return self._run(collect())

    else:

        def call(self: SyncDeepContext, /, *args: Any, **kwargs: Any) -> Any:
            return self._run(getattr(self._async, name)(*args, **kwargs))

    return _like(call, method, collected=inspect.isasyncgenfunction(method))


def _like(call: Callable[..., Any], method: Callable[..., Any], *, collected: bool = False) -> Callable[..., Any]:
    """``call`` named, documented and signed as ``method`` (an async iterator's list as its return)."""
    sig = inspect.signature(method)
    if collected:
        sig = sig.replace(return_annotation=f"list[{_item_type(sig.return_annotation)}]")
    call.__name__ = method.__name__
    call.__qualname__ = f"SyncDeepContext.{method.__name__}"
    call.__doc__ = method.__doc__
    call.__signature__ = sig  # type: ignore[attr-defined]
    return call


def _item_type(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "Any")
    return text[text.index("[") + 1 : -1] if "[" in text else "Any"


#: hand-written above: lifecycle of the shell itself, and results wrapped for blocking use
_SPECIAL = {"close", "dialogue"}

# every public coroutine method of DeepContext, generated rather than copied, so the blocking API
# never lags behind the async one
for _name, _method in inspect.getmembers(DeepContext, inspect.isfunction):
    if _name.startswith("_") or not (inspect.iscoroutinefunction(_method) or inspect.isasyncgenfunction(_method)):
        continue
    if _name in _SPECIAL:  # their own docstrings and results, the async method's parameters
        _own = SyncDeepContext.__dict__[_name]
        _own.__signature__ = inspect.signature(_method).replace(return_annotation=inspect.signature(_own).return_annotation)
    else:
        setattr(SyncDeepContext, _name, _blocking(_name, _method))
del _name, _method, _own


async def _make(args: tuple[Any, ...], kwargs: dict[str, Any]) -> DeepContext:
    # built inside the loop thread so its asyncio primitives belong to that loop
    return DeepContext(*args, **kwargs)
