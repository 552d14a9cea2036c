"""Rich renderables of ``deepcontext chat``: memories, graph, lifecycle counts, the context and its
breakdown, the conversation path, a memory's history, the help. Pure functions of the data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from deepcontext.chat.commands import ALIASES, COMMANDS

if TYPE_CHECKING:
    from deepcontext.chat.prompt import TurnContext
    from deepcontext.dialogue.context import ConversationPath
    from deepcontext.types import HistoryEntry, Memory, Provenance, SearchResponse

__all__ = [
    "cites",
    "clip",
    "context_view",
    "graph_view",
    "help_view",
    "history_view",
    "lifecycle_view",
    "memory_list_view",
    "path_view",
    "search_view",
    "stored_view",
    "summary_line",
]

#: lifecycle report keys shown, with their labels
LIFECYCLE_COUNTS = (
    ("memories_decayed", "decayed (importance lowered)"),
    ("memories_deactivated", "faded (under the minimum importance)"),
    ("memories_consolidated", "consolidated into long-term"),
    ("groups", "groups merged"),
    ("long_term_created", "new long-term memories"),
    ("memories_promoted", "promoted alone"),
    ("memories_cleaned", "cleaned (faded ones deleted)"),
    ("purged", "purged after retention"),
    ("expired", "expired and purged"),
)


def clip(text: str, n: int = 100) -> str:
    """``text`` on one line, at most ``n`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def cites(sources: Sequence[Provenance], n: int = 3) -> str:
    """``turn 12 (trip, 2025-05-01), turn 14 (...) +2``: the turns a memory cites."""
    if not sources:
        return "-"
    shown = [f"turn {s.turn_id} ({s.conversation_id}, {s.said_at:%Y-%m-%d})" for s in sources[:n]]
    more = f" +{len(sources) - n}" if len(sources) > n else ""
    return ", ".join(shown) + more


class _Table(Table):
    """A table whose string cells are plain text (never rich markup: memories may contain ``[...]``)."""

    def add_row(self, *cells: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().add_row(*(Text(c) if isinstance(c, str) else c for c in cells), **kwargs)


def _table(title: str, *columns: str) -> Table:
    table = _Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in columns:
        table.add_column(Text(col), overflow="fold")
    return table


def search_view(res: SearchResponse) -> RenderableType:
    """Search results with their scores, tiers and the turns they cite."""
    if not res.results:
        return Text(f"no memory matches {res.query!r}")
    table = _table(f"{res.total} memories for {res.query!r}", "id", "score", "tier", "type", "memory", "cites")
    for r in res.results:
        table.add_row(
            f"#{r.memory_id}", f"{r.score:.4f}", r.tier.value, r.memory_type.value, clip(r.text, 90), cites(r.sources, 2)
        )
    return table


def memory_list_view(memories: Sequence[Memory], total: int) -> RenderableType:
    """The newest memories (``memories`` without a query)."""
    if not memories:
        return Text("no memories stored yet")
    table = _table(f"the newest {len(memories)} of {total} memories", "id", "tier", "type", "imp.", "memory", "cites")
    for m in memories:
        table.add_row(f"#{m.id}", m.tier.value, m.memory_type.value, f"{m.importance:.2f}", clip(m.text, 90), cites(m.sources, 2))
    return table


def stored_view(node: int, memories: Sequence[Memory], *, verbose: bool, note: str = "") -> RenderableType:
    """What a turn stored: its node, then the memories derived from it (``verbose``: the verbatim
    turn memories too, else only counted)."""
    shown = [m for m in memories if verbose or m.tier.value != "working"]
    hidden = len(memories) - len(shown)
    t = Text(f"[{node}] stored{note}; ", style="dim")
    if not memories:
        t.append("no new memory (already known, or nothing to remember)", style="dim")
        return t
    t.append(f"{len(memories)} new memor{'y' if len(memories) == 1 else 'ies'}", style="dim")
    if hidden:
        if shown:
            t.append(f" ({hidden} of them the messages verbatim)", style="dim")
        else:
            t.append(f" (the message{'' if hidden == 1 else 's'} verbatim)", style="dim")
    t.append(":" if shown else "", style="dim")
    for m in shown:
        t.append(f"\n  #{m.id} ", style="bold")
        t.append(f"[{m.tier.value}/{m.memory_type.value}] ", style="dim")
        t.append(clip(m.text, 110))
        t.append(f"  cites {cites(m.sources, 2)}", style="dim")
    return t


def graph_view(entity: str, hood: Sequence[Mapping[str, Any]]) -> RenderableType:
    """An entity's neighbourhood as a tree."""
    if not hood:
        return Text(f"{entity}: nothing connected")
    first = hood[0]
    root = Tree(Text.assemble((first["entity"], "bold"), f" ({first['entity_type']})"))
    nodes: dict[str, Tree] = {first["entity"]: root}
    for h in hood[1:]:
        parent = nodes.get(h["via"], root)
        edge = f"<--{h['relation']}--" if h.get("direction") == "in" else f"--{h['relation']}-->"
        label = Text.assemble(f"{edge} ", (h["entity"], "bold"), f" ({h['entity_type']}, strength {h['strength']:.1f})")
        nodes[h["entity"]] = parent.add(label)
    return root


def lifecycle_view(report: dict[str, Any]) -> RenderableType:
    """A lifecycle run's counts."""
    ran = "consolidation ran" if report.get("consolidation_ran") else "consolidation not due"
    table = _table(f"lifecycle run: {report.get('took_ms', 0):.0f} ms, {ran}", "count", "what")
    for key, label in LIFECYCLE_COUNTS:
        if key in report:
            table.add_row(str(report[key]), label)
    return table


def history_view(memory_id: int, entries: Sequence[HistoryEntry]) -> RenderableType:
    if not entries:
        return Text(f"memory #{memory_id} has no history")
    table = _table(f"history of memory #{memory_id}", "when", "event", "by", "old", "new", "why")
    for h in entries:
        table.add_row(
            f"{h.created_at:%Y-%m-%d %H:%M:%S}", h.event.value, h.actor, clip(h.old_text or "", 40),
            clip(h.new_text or "", 40), clip(h.reason or "", 50),
        )  # fmt: skip
    return table


def path_view(path: ConversationPath, *, branch_from: int | None = None) -> RenderableType:
    """The conversation path, oldest first, with node ids."""
    if not path.nodes:
        return Text("the conversation is empty: the next message starts it")
    head = f"conversation {path.conversation_id!r}: the path to [{path.node_id}], {path.chain_length} nodes"
    if path.truncated:
        head += f" (the last {len(path.nodes)} shown)"
    if branch_from is not None:
        head += f"; the next message branches off [{branch_from}]"
    out = [Text(head, style="bold")]
    out.extend(path_node(n, 70) for n in path.nodes)
    return Group(*out)


def path_node(node: Any, width: int) -> Text:
    """One node of a conversation path on one line: its id and its messages, each clipped to ``width``."""
    t = Text(f"[{node.id}] ", style="bold yellow" if node.is_summary else "bold")
    for k, (role, content) in enumerate(node.messages):
        if k:
            t.append("  |  ", style="dim")
        t.append(f"{role}: ", style="yellow" if role == "summary" else "cyan" if role == "user" else "green")
        t.append(clip(content, width))
    return t


def breakdown_view(turn: TurnContext) -> RenderableType:
    """Tokens per part: used, allotted, items, left out."""
    res = turn.result
    table = _table(
        f"context: {res.total_tokens} of {res.budget_tokens} tokens ({res.token_counter})",
        "part",
        "tokens",
        "allotted",
        "items",
        "left out",
    )
    for p in res.parts:
        left = ", ".join(f"{n} {cause}" for cause, n in p.left_out.items()) or "-"
        table.add_row(p.title, str(p.tokens), f"{p.allotted_tokens}", str(len(p.items)), left)
    return table


def used_memories_view(turn: TurnContext) -> RenderableType:
    if not turn.memories:
        return Text("no stored memory was relevant to this message", style="dim")
    table = _table("memories used", "id", "part", "score", "why", "cites")
    for m in turn.memories:
        score = "-" if m.score is None else f"{m.score:.4f}"
        table.add_row(f"#{m.memory_id}", m.part, score, clip(m.why, 48), cites(m.cites, 2))
    return table


def path_line(turn: TurnContext) -> Text:
    ids = turn.path_node_ids
    t = Text("conversation path in the context: ", style="bold")
    t.append(" → ".join(f"[{n}]" for n in ids) if ids else "none (a new conversation)")
    if turn.branch_from is not None:
        t.append(f"  (branching off [{turn.branch_from}])", style="magenta")
    return t


def context_view(turn: TurnContext, *, title: str) -> RenderableType:
    """Everything about a message's context: the breakdown, the memories used with the turns they
    cite, the conversation path, and the messages as the LLM receives them."""
    return Group(breakdown_view(turn), used_memories_view(turn), path_line(turn), prompt_view(turn, title=title))


def summary_line(turn: TurnContext, *, offline: bool = False) -> Text:
    """One line: what the context of a message used."""
    res = turn.result
    mem = len(turn.memories)
    nodes = len(turn.path_node_ids)
    head = "the context an LLM would have received" if offline else "context"
    text = (
        f"{head}: {mem} memor{'y' if mem == 1 else 'ies'}, {nodes} conversation node{'' if nodes == 1 else 's'}, "
        f"{res.total_tokens}/{res.budget_tokens} tokens"
    )
    if turn.branch_from is not None:
        text += f", branching off [{turn.branch_from}]"
    return Text(text + " · context shows the breakdown", style="dim")


def prompt_view(turn: TurnContext, *, title: str) -> RenderableType:
    """The messages as the LLM receives them (the system prompt dimmed, the context as is)."""
    prompt = Text()
    for k, m in enumerate(turn.messages):
        if k:
            prompt.append("\n\n")
        prompt.append(f"[{m['role']}]\n", style="bold")
        content = m["content"]
        if m["role"] == "system" and turn.result.text and content.endswith(turn.result.text):
            head = content[: len(content) - len(turn.result.text)]
            prompt.append(head, style="dim")
            prompt.append(turn.result.text)
        else:
            prompt.append(content, style="dim" if m["role"] == "system" else "")
    return Panel(prompt, title=Text(title), title_align="left", border_style="dim", box=box.ROUNDED)


def help_view() -> RenderableType:
    table = _table("commands (bare, or with a leading /)", "command", "what it does")
    for spec in COMMANDS.values():
        table.add_row(spec.usage, spec.help)
    aliases = ", ".join(f"{a} = {c}" for a, c in ALIASES.items())
    notes = Text(
        "Anything else is a message. A bare word is a command only when its arguments fit "
        "(history 12 is a command, history of Rome a message); to send a message the chat would take "
        f"for a command, write /say <message>. Aliases: {aliases}.",
        style="dim",
    )
    return Group(table, notes)
