"""Exports of a conversation graph: JSON (everything), Graphviz DOT and Mermaid (for pictures).

- :func:`graph_to_json`: every node with its parents (in edge order) and children, both messages
  (role and content), summary flags and texts, archived flags and ``summarized_by``, tags; the tip;
  and the key memories with their source nodes. Complete: nothing is clipped.
- :func:`graph_to_dot` / :func:`graph_to_mermaid`: one box per node labelled with its id and the
  start of its messages (``clip`` characters each), an edge parent -> child for every stored edge.
  Summary nodes are drawn as notes (DOT ``shape=note``, Mermaid class ``summary``, yellow); archived
  nodes are grey and dashed (class ``archived``) with a dotted link to the summary that covers them.

:func:`export_graph` picks one by name (``json``, ``dot``, ``mermaid``) and returns text.
"""

from __future__ import annotations

import json
from typing import Any

from deepcontext.dialogue.graph import LLMContextGraph
from deepcontext.dialogue.vocabulary import LLMContextGraphNode
from deepcontext.errors import ValidationError

__all__ = ["FORMATS", "export_graph", "graph_to_dot", "graph_to_json", "graph_to_mermaid"]

FORMATS = ("json", "dot", "mermaid")


def _snapshot(graph: LLMContextGraph) -> tuple[list[LLMContextGraphNode], dict[int, list[int]]]:
    """Every node (by id) and the ordered parent lists, read once."""
    with graph.backend.topology() as topo:
        parents = {n: list(topo.parents[n]) for n in topo.node_ids()}
    nodes = [n for n in graph.backend.iter_nodes() if n.id in parents]
    return nodes, parents


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"


def _lines(node: LLMContextGraphNode, clip: int) -> list[str]:
    if node.is_summary:
        covered = sorted(node.summarized_ids)
        span = f" of {covered[0]}..{covered[-1]}" if len(covered) > 1 else (f" of {covered[0]}" if covered else "")
        return [f"[{node.id}] summary{span}", _clip(node.context.llm_role.content, clip)]
    head = f"[{node.id}]" + (f" archived, in summary {min(node.summarized_by)}" if node.archived and node.summarized_by else "")
    out = [head]
    for m in node.context.messages():
        out.append(f"{m.role.capitalize()}: {_clip(m.content, clip)}")
    return out


def graph_to_json(graph: LLMContextGraph) -> dict[str, Any]:
    """The whole graph as a JSON-ready dict (see the module docstring)."""
    nodes, parents = _snapshot(graph)
    backend = graph.backend
    out: dict[str, Any] = {"format": "deepcontext.dialogue/1"}
    for attr in ("user_id", "conversation_id"):
        if hasattr(backend, attr):
            out[attr] = getattr(backend, attr)
    out["tip"] = graph.tip_node_id()
    out["nodes"] = [
        {
            "id": n.id,
            "parents": parents.get(n.id, []),
            "children": sorted(n.child_ids),
            "user": {"role": n.context.user_role.role, "content": n.context.user_role.content},
            "assistant": {"role": n.context.llm_role.role, "content": n.context.llm_role.content},
            "is_summary": n.is_summary,
            "summarized_ids": sorted(n.summarized_ids),
            "archived": n.archived,
            "summarized_by": min(n.summarized_by) if n.summarized_by else None,
            "summary": n.summary,
            "tags": sorted(n.tags),
        }
        for n in nodes
    ]
    out["key_memories"] = [
        {
            "id": m.id,
            "content": m.content,
            "tags": sorted(m.tags),
            "pinned": m.pinned,
            "packable": m.packable,
            "status": m.status,
            "source_nodes": sorted(m.source_nodes),
            "canonical_key": m.canonical_key,
        }
        for m in backend.get_memories()
    ]
    return out


def _dot_str(text: str) -> str:
    """A DOT double-quoted string; lines joined with left-aligned breaks."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")
    return f'"{body}"'


def graph_to_dot(graph: LLMContextGraph, *, clip: int = 60, name: str = "conversation") -> str:
    """Graphviz DOT text: ``dot -Tsvg conversation.dot -o conversation.svg``."""
    nodes, parents = _snapshot(graph)
    out = [
        f"digraph {_dot_str(name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="white", fontname="Helvetica", fontsize=10];',
        '  edge [color="gray30"];',
    ]
    for n in nodes:
        label = "\\l".join(_dot_str(line)[1:-1] for line in _lines(n, clip)) + "\\l"
        attrs = [f'label="{label}"']
        if n.is_summary:
            attrs += ["shape=note", 'fillcolor="lightyellow"', 'color="goldenrod3"']
        if n.archived:
            attrs += ['style="rounded,dashed,filled"', 'fillcolor="gray95"', 'color="gray55"', 'fontcolor="gray45"']
        out.append(f"  n{n.id} [{', '.join(attrs)}];")
    for n in nodes:
        for p in parents.get(n.id, []):
            out.append(f"  n{p} -> n{n.id};")
    for n in nodes:
        if n.archived and n.summarized_by:
            s = min(n.summarized_by)
            out.append(f'  n{n.id} -> n{s} [style=dotted, color="goldenrod3", arrowhead=none, constraint=false];')
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_str(text: str) -> str:
    """Text safe inside a quoted Mermaid label (entity codes for # " < >)."""
    return (
        text.replace("#", "#35;")
        .replace('"', "#quot;")
        .replace("<", "#lt;")
        .replace(">", "#gt;")
        .replace("\r", " ")
        .replace("\n", " ")
    )


def graph_to_mermaid(graph: LLMContextGraph, *, clip: int = 60) -> str:
    """A Mermaid flowchart (paste into Markdown inside a ```mermaid block)."""
    nodes, parents = _snapshot(graph)
    out = ["flowchart TD"]
    for n in nodes:
        label = "<br/>".join(_mermaid_str(line) for line in _lines(n, clip))
        out.append(f'  n{n.id}["{label}"]')
    for n in nodes:
        for p in parents.get(n.id, []):
            out.append(f"  n{p} --> n{n.id}")
    for n in nodes:
        if n.archived and n.summarized_by:
            out.append(f"  n{n.id} -.- n{min(n.summarized_by)}")
    out.append("  classDef summary fill:#fff6c8,stroke:#b8860b,color:#333")
    out.append("  classDef archived fill:#f2f2f2,stroke:#999,color:#777,stroke-dasharray: 4 3")
    summaries = [f"n{n.id}" for n in nodes if n.is_summary]
    archived = [f"n{n.id}" for n in nodes if n.archived]
    if summaries:
        out.append(f"  class {','.join(summaries)} summary")
    if archived:
        out.append(f"  class {','.join(archived)} archived")
    return "\n".join(out) + "\n"


def export_graph(graph: LLMContextGraph, format: str = "json") -> str:
    """The graph as text in ``format`` (``json``, ``dot`` or ``mermaid``)."""
    fmt = format.lower() if isinstance(format, str) else ""
    if fmt == "json":
        return json.dumps(graph_to_json(graph), ensure_ascii=False, indent=2) + "\n"
    if fmt == "dot":
        return graph_to_dot(graph)
    if fmt == "mermaid":
        return graph_to_mermaid(graph)
    raise ValidationError(f"unknown export format {format!r}; use one of {', '.join(FORMATS)}", field="format")
