"""Telling commands from messages in ``deepcontext chat``.

A line is a command when it starts with ``/`` (an unknown name or bad arguments get a one-line
hint), or when it is a bare command word whose arguments fit it: alone on the line in any case
(``Exit``), or in lower case with fitting arguments (``history 12``, ``memories lisbon``; so
``help me plan a trip`` stays a message). Everything else is a message; ``/say ...`` sends one
that a bare command would catch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ALIASES", "COMMANDS", "Command", "CommandSpec", "Invalid", "Message", "parse_line"]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A chat command: its name, what it takes and what it does."""

    name: str
    #: ``none`` (no argument), ``id`` (one integer), ``text`` (required free text), ``optional`` (free text or nothing)
    takes: str
    usage: str
    help: str
    #: recognised without the leading ``/``
    bare: bool = True


COMMANDS: dict[str, CommandSpec] = {
    c.name: c
    for c in (
        CommandSpec("memories", "optional", "memories [query]", "search the stored memories (no query: the newest ones)"),
        CommandSpec("graph", "text", "graph <entity>", "the knowledge graph around an entity"),
        CommandSpec("lifecycle", "none", "lifecycle", "run decay, consolidation and cleanup now; show the counts"),
        CommandSpec("context", "none", "context", "the last prompt's context: what was used, and its token breakdown"),
        CommandSpec("path", "none", "path", "the conversation path the next message continues (node ids for branch)"),
        CommandSpec("branch", "id", "branch <node>", "continue from an earlier turn: the next message branches off it"),
        CommandSpec("history", "id", "history <memory id>", "every change of a memory"),
        CommandSpec("forget", "id", "forget <memory id>", "delete a memory (soft: kept in its history)"),
        CommandSpec("say", "text", "/say <message>", "send a message that starts with a command word", bare=False),
        CommandSpec("help", "none", "help", "this list"),
        CommandSpec("exit", "none", "exit", "leave (Ctrl-C and Ctrl-D too); the next start continues here"),
    )
}
#: other names of commands
ALIASES = {"quit": "exit", "bye": "exit", "?": "help", "h": "help", "memory": "memories", "q": "exit"}

_ID = re.compile(r"^(?:#|\[)?\s*(\d{1,18})\s*\]?$")


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: ``name`` (canonical), ``text`` (its free-text argument) or ``number``."""

    name: str
    text: str = ""
    number: int | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """Text to send to the assistant."""

    text: str


@dataclass(frozen=True, slots=True)
class Invalid:
    """A line that looked like a command but was not a valid one: ``hint`` is one line."""

    hint: str


def _hint(spec: CommandSpec, problem: str, bare: bool) -> Invalid:
    usage = spec.usage if spec.usage.startswith("/") else ("" if bare else "/") + spec.usage
    tail = "; to send it as a message, start it with /say" if bare else ""
    return Invalid(f"{problem}: usage {usage}{tail}")


def _fit(spec: CommandSpec, rest: str, *, bare: bool) -> Command | Invalid | None:
    """The command if ``rest`` fits it; for a bare line, None when it does not fit (a message)."""
    if spec.takes == "none":
        if not rest:
            return Command(spec.name)
        return None if bare else _hint(spec, f"{spec.name} takes no argument", bare)
    if spec.takes == "id":
        m = _ID.match(rest)
        if m:
            return Command(spec.name, number=int(m.group(1)))
        if bare and rest:
            return None
        what = "a node id" if spec.name == "branch" else "a memory id"
        return _hint(spec, f"{spec.name} needs {what}" + (f", not {rest!r}" if rest else ""), bare)
    if spec.takes == "text" and not rest:
        what = "an entity name" if spec.name == "graph" else "a message"
        return _hint(spec, f"{spec.name} needs {what}", bare)
    return Command(spec.name, text=rest)


def parse_line(line: str) -> Command | Message | Invalid | None:
    """What a line typed in the chat is (None: an empty line, nothing to do)."""
    text = line.strip()
    if not text:
        return None
    if text.startswith("/"):
        head, _, rest = text[1:].partition(" ")
        word = head.strip().lower()
        name = ALIASES.get(word, word)
        spec = COMMANDS.get(name)
        if spec is None:
            shown = "/" + head if head else "/"
            return Invalid(f"unknown command {shown}: type help for the commands, /say <text> to send text starting with /")
        found = _fit(spec, rest.strip(), bare=False)
        assert found is not None
        if isinstance(found, Command) and found.name == "say":
            return Message(found.text)
        return found
    head, _, rest = text.partition(" ")
    rest = rest.strip()
    name = ALIASES.get(head.lower(), head.lower())
    spec = COMMANDS.get(name)
    if spec is None or not spec.bare:
        return Message(text)
    if rest and head != head.lower():  # "Memories of Lisbon...": a sentence, not a command
        return Message(text)
    found = _fit(spec, rest, bare=True)
    return Message(text) if found is None else found
