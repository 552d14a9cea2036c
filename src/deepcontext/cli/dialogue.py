"""Conversation graphs on the command line: ``deepcontext dialogue show | export | compress``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, esc, fail, run

dialogue_app = typer.Typer(
    help="Conversation graphs (Memory Graph): show a conversation's branches, summaries and archived "
    "rounds, export it as JSON, Graphviz DOT or Mermaid, compress its older rounds into a summary.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(dialogue_app, name="dialogue")

USER = typer.Option(..., "--user", "-u", help="The user who owns the conversation")
CONVERSATION = typer.Option("default", "--conversation", "-c", help="Conversation id")


def _line(node: dict[str, Any], width: int, tip: int | None, shown_parents: list[int]) -> Any:
    """One node as a rich Text: id, flags, messages."""
    from rich.text import Text

    from deepcontext.chat.render import clip

    t = Text()
    nid = node["id"]
    if node["is_summary"]:
        covered = node["summarized_ids"]
        span = f"{covered[0]}..{covered[-1]}" if len(covered) > 1 else ", ".join(map(str, covered))
        t.append(f"[{nid}] ", style="bold yellow")
        t.append(f"summary of {span}: ", style="yellow")
        t.append(clip(node["assistant"]["content"], width), style="yellow")
    else:
        style = "dim" if node["archived"] else ""
        t.append(f"[{nid}] ", style="bold dim" if node["archived"] else "bold")
        halves = [h for h in (node["user"], node["assistant"]) if h["content"]]
        for k, h in enumerate(halves):
            if k:
                t.append("  |  ", style="dim")
            t.append(f"{h['role']}: ", style=style or ("cyan" if h["role"] == "user" else "green"))
            t.append(clip(h["content"], width // max(1, len(halves))), style=style)
    if node["archived"] and node["summarized_by"] is not None:
        t.append(f"  (archived, in summary [{node['summarized_by']}])", style="dim italic")
    if len(shown_parents) > 1:
        t.append("  (merges " + ", ".join(f"[{p}]" for p in shown_parents) + ")", style="magenta")
    if node["tags"]:
        t.append("  #" + " #".join(node["tags"]), style="blue")
    if nid == tip:
        t.append("  ← tip", style="bold")
    return t


def _tree(data: dict[str, Any], *, limit: int, archived: bool, width: int) -> Any:
    """The conversation as a rich Tree: a chain runs down one level, a branch opens a sub-level
    (iterative: any depth)."""
    from rich.tree import Tree

    nodes = {n["id"]: n for n in data["nodes"]}
    by = {n: nodes[n]["summarized_by"] for n in nodes if nodes[n]["archived"]}

    def resolve(n: int) -> int:
        seen = 0
        while n in by and by[n] is not None and by[n] in nodes and seen <= len(nodes):
            n, seen = by[n], seen + 1
        return n

    visible = [n for n in sorted(nodes) if archived or not nodes[n]["archived"]][-limit:]
    keep = set(visible)
    parents: dict[int, list[int]] = {}
    for n in visible:
        ps = nodes[n]["parents"] if archived else [resolve(p) for p in nodes[n]["parents"]]
        parents[n] = [p for p in dict.fromkeys(ps) if p in keep and p != n]
    children: dict[int, list[int]] = {n: [] for n in visible}
    for n in visible:
        if parents[n]:
            children[parents[n][0]].append(n)  # shown under its first parent
    # the line that leads to the tip runs straight down; other children open branches
    tip = data.get("tip")
    on_tip: set[int] = set()
    cur_tip = resolve(tip) if tip is not None and not archived else tip
    while cur_tip is not None and cur_tip in keep and cur_tip not in on_tip:
        on_tip.add(cur_tip)
        cur_tip = parents[cur_tip][0] if parents[cur_tip] else None
    for kids in children.values():
        kids.sort(key=lambda c: (c not in on_tip, c))
    hidden = sum(1 for n in nodes.values() if n["archived"]) if not archived else 0
    title = f"conversation {data.get('conversation_id', '?')!r} of {data.get('user_id', '?')!r}: {len(nodes)} nodes"
    notes = []
    if hidden:
        notes.append(f"{hidden} archived hidden")
    if len(nodes) - hidden > len(visible):
        notes.append(f"showing the last {len(visible)}; --limit for more")
    if notes:
        title += f" ({'; '.join(notes)})"
    root = Tree(esc(title))
    stack: list[tuple[int, Any]] = [(n, root) for n in reversed(visible) if not parents[n]]
    while stack:
        n, container = stack.pop()
        cur: int | None = n
        while cur is not None:
            container.add(_line(nodes[cur], width, data.get("tip"), parents[cur]))
            kids = children[cur]
            for other in reversed(kids[1:]):
                stack.append((other, container.add(f"branch from [{cur}]", style="magenta")))
            cur = kids[0] if kids else None
    return root


@dialogue_app.command("show")
def show(
    user: str = USER,
    conversation: str = CONVERSATION,
    node: int = typer.Option(None, "--node", "-n", help="Show the chain from the root to this node instead of the whole graph"),
    limit: int = typer.Option(200, "--limit", min=1, help="Show at most this many nodes (the most recent)"),
    archived: bool = typer.Option(True, "--archived/--no-archived", help="Show the rounds folded into summaries (dimmed)"),
    width: int = typer.Option(100, "--width", min=20, help="Characters of message text per node"),
) -> None:
    """Show a conversation as a tree (branches, merges, summaries, archived rounds) or one chain."""
    from deepcontext.chat.render import path_node

    async def body(ctx: Any) -> Any:
        if node is not None:
            path = await ctx.conversation_path(user, conversation, node_id=node, max_nodes=limit)
            return "path", path
        import json

        return "graph", json.loads(await ctx.export_conversation(user, conversation, "json"))

    kind, data = run(body, embeds=False)
    out = console()
    if kind == "path":
        if not data.nodes:
            fail(f"conversation {conversation!r} of user {user!r} is empty")
        head = f"chain to [{data.node_id}]: {data.chain_length} nodes"
        out.print(head + (f", showing the last {len(data.nodes)}" if data.truncated else ""))
        for n in data.nodes:
            out.print(path_node(n, width))
        return
    if not data["nodes"]:
        fail(f"conversation {conversation!r} of user {user!r} is empty")
    out.print(_tree(data, limit=limit, archived=archived, width=width))


FORMATS = ("json", "dot", "mermaid")
OUTPUT = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout")


@dialogue_app.command("export")
def export(
    user: str = USER,
    conversation: str = CONVERSATION,
    fmt: str = typer.Option("json", "--format", "-f", help="json (everything), dot (Graphviz) or mermaid"),
    output: Path = OUTPUT,
) -> None:
    """Export a conversation graph: JSON (nodes, parents, messages, summaries, archived flags, key
    memories), Graphviz DOT or Mermaid (summaries and archived rounds styled apart)."""
    import sys

    fmt = fmt.lower()
    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")

    async def body(ctx: Any) -> str:
        return str(await ctx.export_conversation(user, conversation, fmt))

    text = run(body, embeds=False)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    console(stderr=True).print(f"wrote {output} ({fmt})")


@dialogue_app.command("compress")
def compress(
    user: str = USER,
    conversation: str = CONVERSATION,
    keep_recent: int = typer.Option(2, "--keep-recent", min=0, help="Most recent rounds of the chain to keep as they are"),
    node: int = typer.Option(None, "--node", "-n", help="Compress the chain ending at this node (default: the tip)"),
    max_nodes: int = typer.Option(20, "--max-nodes", min=2, help="How far back the chain is considered"),
) -> None:
    """Fold the older rounds of a conversation's chain into a summary node (the configured LLM
    writes it; offline, an extractive summary). Original turns are kept, marked archived."""

    async def body(ctx: Any) -> Any:
        sid = await ctx.compress_conversation(user, conversation, node_id=node, keep_recent=keep_recent, max_nodes=max_nodes)
        if sid is None:
            return None, [], ctx.llm is not None
        path = await ctx.conversation_path(user, conversation, node_id=sid, max_nodes=1)
        return sid, path.nodes[0].summarized_ids if path.nodes else [], ctx.llm is not None

    sid, covered, with_llm = run(body)
    if sid is None:
        console(stderr=True).print("nothing to compress (the chain is too short, or its rounds are protected)")
        return
    span = f"[{covered[0]}]..[{covered[-1]}]" if covered else "no node"
    how = "by the LLM" if with_llm else "extractive"
    console().print(f"summary node [{sid}] covers {len(covered)} nodes ({span}), {how}")
