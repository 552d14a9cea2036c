"""Exports of a conversation graph (JSON, Graphviz DOT, Mermaid), parsed and checked, on every backend."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from deepcontext.dialogue import (
    LLMContextGraph,
    MemoryStore,
    export_graph,
    graph_to_dot,
    graph_to_json,
    graph_to_mermaid,
)
from deepcontext.errors import ValidationError
from tests.dialogue.helpers import pair

TRICKY = 'He said "hi" <b>bold</b> #35; back\\slash\nnew line'


def _build(graph: LLMContextGraph) -> dict[str, Any]:
    root = graph.add_node(pair("Start", "ok"))
    chain = graph.add_chain([pair(f"step {i}", f"done {i}") for i in range(4)], parent_ids=[root])
    side = graph.add_node(pair(TRICKY, "noted"), parent_ids=[root])
    merge = graph.add_node(pair("merge both", "merged"), parent_ids=[chain[-1], side])
    MemoryStore(graph.backend).add_memory("a^2 + b^2 = c^2", source_nodes={side}, tags={"formula"}, pinned=True)
    return {"root": root, "chain": chain, "side": side, "merge": merge}


async def _compressed(graph: LLMContextGraph) -> dict[str, Any]:
    ids = _build(graph)
    sid = await graph.compress_ancestors(None, ids["chain"][-1], max_nodes=None, keep_recent=1)
    assert sid is not None
    ids["summary"] = sid
    return ids


def _edges(graph: LLMContextGraph) -> set[tuple[int, int]]:
    with graph.backend.topology() as topo:
        return {(p, c) for c, ps in topo.parents.items() for p in ps}


# --- a small DOT parser: enough of the grammar to reject anything malformed ------------------------
_TOKEN = re.compile(r'\s*(?:(->)|([{}\[\];=,])|("(?:\\.|[^"\\])*")|([A-Za-z_][A-Za-z_0-9]*|-?\d+(?:\.\d+)?))')


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None and m.end() > pos, f"bad DOT at {text[pos : pos + 40]!r}"
        out.append(next(g for g in m.groups() if g is not None))
        pos = m.end()
    return out


def parse_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]]]:
    toks = _tokens(text)
    i = 0

    def take(expected: str | None = None) -> str:
        nonlocal i
        tok = toks[i]
        assert expected is None or tok == expected, f"expected {expected!r}, got {tok!r}"
        i += 1
        return tok

    def attrs() -> dict[str, str]:
        out: dict[str, str] = {}
        take("[")
        while toks[i] != "]":
            key = take()
            take("=")
            out[key] = take()
            if toks[i] == ",":
                take(",")
        take("]")
        return out

    take("digraph")
    if toks[i] != "{":
        take()
    take("{")
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    while toks[i] != "}":
        first = take()
        if first in ("node", "edge", "graph"):
            attrs()
        elif toks[i] == "=":
            take("=")
            take()
        elif toks[i] == "->":
            take("->")
            second = take()
            edges.append((first, second, attrs() if toks[i] == "[" else {}))
        else:
            nodes[first] = attrs() if toks[i] == "[" else {}
        take(";")
    take("}")
    assert i == len(toks), "text after the graph"
    return nodes, edges


@pytest.mark.parametrize("make_graph", ["memory", "sqlite", "postgres"], indirect=True)
async def test_json_export_is_complete(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    ids = await _compressed(graph)
    data = json.loads(export_graph(graph, "json"))
    assert data == graph_to_json(graph)
    by_id = {n["id"]: n for n in data["nodes"]}
    assert set(by_id) == set(graph.nodes)
    for n in graph.nodes.values():
        row = by_id[n.id]
        assert set(row["parents"]) == n.parent_ids and set(row["children"]) == n.child_ids
        assert row["user"] == {"role": n.context.user_role.role, "content": n.context.user_role.content}
        assert row["assistant"]["content"] == n.context.llm_role.content
        assert row["archived"] == n.archived and row["is_summary"] == n.is_summary
    side = by_id[ids["side"]]
    assert side["user"]["content"] == TRICKY  # verbatim, nothing clipped
    summary = by_id[ids["summary"]]
    assert summary["is_summary"] and summary["summarized_ids"] and summary["assistant"]["content"]
    assert all(by_id[c]["archived"] and by_id[c]["summarized_by"] == ids["summary"] for c in summary["summarized_ids"])
    assert by_id[ids["merge"]]["parents"] == [ids["chain"][-1], ids["side"]]  # edge order kept
    (mem,) = data["key_memories"]
    assert mem["source_nodes"] == [ids["side"]] and mem["pinned"] and mem["tags"] == ["formula"]
    assert data["tip"] == graph.tip_node_id()


@pytest.mark.parametrize("make_graph", ["memory", "sqlite"], indirect=True)
async def test_dot_export_is_well_formed_with_every_edge(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    ids = await _compressed(graph)
    nodes, edges = parse_dot(graph_to_dot(graph))
    assert set(nodes) == {f"n{n}" for n in graph.nodes}
    plain = {(a, b) for a, b, at in edges if at.get("style") != "dotted"}
    assert plain == {(f"n{p}", f"n{c}") for p, c in _edges(graph)}
    covered = graph.nodes[ids["summary"]].summarized_ids
    dotted = {(a, b) for a, b, at in edges if at.get("style") == "dotted"}
    assert dotted == {(f"n{c}", f"n{ids['summary']}") for c in covered}
    assert nodes[f"n{ids['summary']}"]["shape"] == "note"
    for c in covered:
        assert "dashed" in nodes[f"n{c}"]["style"]
    assert "dashed" not in nodes[f"n{ids['merge']}"].get("style", "")
    label = nodes[f"n{ids['side']}"]["label"]
    assert '\\"hi\\"' in label and "\n" not in label and "back\\\\slash" in label


@pytest.mark.parametrize("make_graph", ["memory", "sqlite"], indirect=True)
async def test_mermaid_export_has_every_node_and_edge(make_graph: Callable[[], LLMContextGraph]) -> None:
    graph = make_graph()
    ids = await _compressed(graph)
    text = graph_to_mermaid(graph)
    lines = text.strip().splitlines()
    assert lines[0] == "flowchart TD"
    node_re = re.compile(r'^  (n\d+)\["([^"]*)"\]$')
    edge_re = re.compile(r"^  (n\d+) --> (n\d+)$")
    link_re = re.compile(r"^  (n\d+) -\.- (n\d+)$")
    class_re = re.compile(r"^  class (n\d+(?:,n\d+)*) (summary|archived)$")
    labels: dict[str, str] = {}
    edges: set[tuple[str, str]] = set()
    links: set[tuple[str, str]] = set()
    classes: dict[str, set[str]] = {}
    for line in lines[1:]:
        if m := node_re.match(line):
            labels[m[1]] = m[2]
        elif m := edge_re.match(line):
            edges.add((m[1], m[2]))
        elif m := link_re.match(line):
            links.add((m[1], m[2]))
        elif m := class_re.match(line):
            classes[m[2]] = set(m[1].split(","))
        else:
            assert line.startswith("  classDef "), f"unexpected line {line!r}"
    assert set(labels) == {f"n{n}" for n in graph.nodes}
    assert edges == {(f"n{p}", f"n{c}") for p, c in _edges(graph)}
    covered = graph.nodes[ids["summary"]].summarized_ids
    assert links == {(f"n{c}", f"n{ids['summary']}") for c in covered}
    assert classes["summary"] == {f"n{ids['summary']}"} and classes["archived"] == {f"n{c}" for c in covered}
    side = labels[f"n{ids['side']}"]
    assert "#quot;hi#quot;" in side and "#lt;b#gt;" in side and "#35;35;" in side
    assert "<" not in side.replace("<br/>", "")


def test_unknown_format_is_a_clear_error() -> None:
    graph = LLMContextGraph()
    with pytest.raises(ValidationError, match="unknown export format"):
        export_graph(graph, "png")
    assert graph_to_json(graph)["nodes"] == [] and parse_dot(graph_to_dot(graph)) == ({}, [])
