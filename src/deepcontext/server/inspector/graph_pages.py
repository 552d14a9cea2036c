"""The inspector's knowledge-graph page: by default the user's own entity and its neighbourhood,
or the most mentioned entities (``whole``), or any entity's neighbourhood; laid out by force, with
labels placed most connected first where they do not cover one already placed, a legend of the
colours, and the relation names written on the edges of the entity in focus."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from deepcontext.errors import EntityNotFoundError, ValidationError
from deepcontext.server.inspector import data
from deepcontext.server.inspector.pages import Ctx, UiScope, _need_user, render
from deepcontext.server.inspector.svg import force_layout
from deepcontext.store.interface import MemoryFilters
from deepcontext.text import entity_norm

__all__ = ["label_boxes", "router"]

router = APIRouter()

#: memories listed per page on an entity's graph page, and the most counted
ENTITY_PAGE = 30
ENTITY_COUNT_CAP = 5_000
MAX_GRAPH_NODES = 1500
#: the graph's default size; past this many entities the layout gets slower than a page should be
DEFAULT_GRAPH_NODES = 150
#: the picture's size (its viewBox) and the labels' estimated glyph size in it
WIDTH, HEIGHT = 1600.0, 1000.0
CHAR_WIDTH, LINE_HEIGHT = 11.6, 24.0
#: the share of each axis given by rank rather than by distance (see ``_spread``)
SPREAD = 0.7
#: the most labels drawn: beyond, names show on hover only
MAX_LABELS = 120


def label_boxes(nodes: Sequence[dict[str, Any]], first: int | None = None) -> dict[int, tuple[float, float, float, float]]:
    """Label rectangles (x0, y0, x1, y1) right of each node, given greedily: the ``first`` entity,
    then by connections and mentions; a label that would overlap one already given is left out (its
    name shows on hover). Labels are drawn above the nodes with a halo, so a label over a node
    stays legible."""
    order = sorted(nodes, key=lambda n: (n["id"] != first, -n.get("degree", 0), -n["mentions"], n["name"]))
    placed: dict[int, tuple[float, float, float, float]] = {}
    for n in order:
        if len(placed) >= MAX_LABELS:
            break
        x0 = n["x"] + n["r"] + 3
        box = (x0, n["y"] - LINE_HEIGHT / 2, x0 + CHAR_WIDTH * len(n["name"]), n["y"] + LINE_HEIGHT / 2)
        if n["id"] != first and any(_overlap(box, b) for b in placed.values()):
            continue
        placed[n["id"]] = box
    return placed


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


async def _users_entity(ctx: Any, uid: str) -> str | None:
    """The name of the user's own node in the graph: their display name, else "User"."""
    name = (await ctx.get_user(uid)).get("name")
    for candidate in [n for n in (name, "User") if n]:
        found = await asyncio.to_thread(ctx.store.match_entities, uid, [entity_norm(candidate)])
        if found.get(entity_norm(candidate)) is not None:
            return candidate
    return None


@router.get("/graph", response_class=HTMLResponse)
async def graph_page(
    request: Request,
    scope: UiScope,
    ctx: Ctx,
    user: str | None = None,
    entity: str | None = None,
    find: str | None = None,
    depth: int = 2,
    limit: int = DEFAULT_GRAPH_NODES,
    page: int = 0,
    whole: bool = False,
) -> HTMLResponse:
    """A user's entities and relations: the user's own neighbourhood (default), the most mentioned
    ones (``whole``), or one entity's neighbourhood; an entity's memories; a search by name."""
    picked = await _need_user(request, ctx, scope, user, "/graph")
    if isinstance(picked, HTMLResponse):
        return picked
    ext, uid = picked
    if not 0 <= depth <= 5:
        raise ValidationError("depth must be 0 to 5", field="depth")
    if not 1 <= limit <= MAX_GRAPH_NODES:
        raise ValidationError(f"limit must be 1 to {MAX_GRAPH_NODES}", field="limit")
    if not 0 <= page < ENTITY_COUNT_CAP // ENTITY_PAGE:
        raise ValidationError(f"page must be 0 to {ENTITY_COUNT_CAP // ENTITY_PAGE - 1}", field="page")
    if not (entity and entity.strip()) and not whole:
        entity = await _users_entity(ctx, uid)
        whole = entity is None
    view = await asyncio.to_thread(_build, ctx, uid, entity, find, depth, limit, page)
    return render(request, scope, "graph.html", user=ext, depth=depth, limit=limit, find=find or "", entity=entity or "",
                  whole=whole, **view)  # fmt: skip


def _build(ctx: Any, uid: str, entity: str | None, find: str | None, depth: int, limit: int, page: int) -> dict[str, Any]:
    store, now = ctx.store, ctx.clock.now()
    found = data.entity_search(store, uid, find) if find and find.strip() else None
    centre = None
    memories: list[Any] = []
    mentioned = 0
    if entity and entity.strip():
        match = store.match_entities(uid, [entity_norm(entity)]).get(entity_norm(entity))
        if match is None:
            raise EntityNotFoundError(entity, uid)
        centre = match[0]
        pairs = store.memories_for_entities(uid, [centre], MemoryFilters(), now, ENTITY_COUNT_CAP)
        mentioned = len(pairs)
        shown = pairs[page * ENTITY_PAGE : (page + 1) * ENTITY_PAGE]
        memories = store.get_memories(uid, [m for m, _ in shown], details=False)
    g = data.graph_data(store, uid, centre=centre, depth=depth, limit=limit)
    nodes, edges = _place(g.nodes, g.edges, centre)
    name = next((n["name"] for n in nodes if n["id"] == centre), entity)
    types = Counter(n["type"] for n in nodes)
    return {"found": found, "nodes": nodes, "edges": edges, "total": g.total_entities, "centre": centre,
            "centre_name": name, "memories": memories, "mentioned": mentioned, "mpage": page,
            "page_size": ENTITY_PAGE, "count_cap": ENTITY_COUNT_CAP, "legend": types.most_common()}  # fmt: skip


def _spread(pos: dict[int, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """Positions in the unit square, each axis part linear and part by rank: a force layout packs a
    dense graph's core into a small middle, and ranks open it up while keeping every entity's
    left-right and up-down order (so neighbours stay near)."""
    if len(pos) < 2:
        return {k: (0.5, 0.5) for k in pos}
    keys = list(pos)
    out: list[list[float]] = [[0.0, 0.0] for _ in keys]
    for axis in (0, 1):
        values = [pos[k][axis] for k in keys]
        lo, hi = min(values), max(values)
        order = sorted(range(len(keys)), key=lambda i: values[i])
        for rank, i in enumerate(order):
            linear = (values[i] - lo) / (hi - lo) if hi > lo else 0.5
            out[i][axis] = SPREAD * rank / (len(keys) - 1) + (1 - SPREAD) * linear
    return {k: (xy[0], xy[1]) for k, xy in zip(keys, out, strict=True)}


def _place(gnodes: list[dict[str, Any]], gedges: list[dict[str, Any]], centre: int | None) -> tuple[list[Any], list[Any]]:
    degree = Counter([e["source"] for e in gedges] + [e["target"] for e in gedges])
    pos = force_layout([n["id"] for n in gnodes], [(e["source"], e["target"]) for e in gedges], centre=centre,
                       iterations=80 if len(gnodes) <= 600 else 40)  # fmt: skip
    pos = _spread(pos)
    # the unit square stretched to the picture's 16:10, inside a margin for the labels
    pos = {k: (40 + x * (WIDTH - 200), 20 + y * (HEIGHT - 40)) for k, (x, y) in pos.items()}
    nodes = [{**n, "x": pos[n["id"]][0], "y": pos[n["id"]][1], "r": 6 + 3 * math.log1p(n["mentions"]),
              "degree": degree[n["id"]]} for n in gnodes]  # fmt: skip
    boxes = label_boxes(nodes, centre)
    for n in nodes:
        n["label"] = n["id"] in boxes
    edges = [
        {**e, "x1": pos[e["source"]][0], "y1": pos[e["source"]][1], "x2": pos[e["target"]][0], "y2": pos[e["target"]][1],
         "named": centre is not None and centre in (e["source"], e["target"])}
        for e in gedges
    ]  # fmt: skip
    return nodes, edges
