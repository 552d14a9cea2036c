"""The knowledge-graph page: it opens on the user's own entity and its neighbourhood, shows a legend
and the relation names of the entity in focus, and its labels never overlap one another, at sizes
from a handful of entities to the most the page draws."""

from __future__ import annotations

import random
import re

import pytest

from deepcontext.server.inspector.graph_pages import MAX_LABELS, _place, label_boxes
from tests.server.helpers import Api
from tests.server.test_inspector import browser


def _graph(n: int, seed: int) -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    nodes = [{"id": i, "name": f"Entity number {i}" if i % 3 else f"E{i}", "type": "person", "mentions": rng.randint(1, 40)}
             for i in range(1, n + 1)]  # fmt: skip
    edges = [
        {"source": rng.randint(1, n), "target": rng.randint(1, n), "relation": "knows", "strength": 0.5} for _ in range(n * 2)
    ]
    return nodes, [e for e in edges if e["source"] != e["target"]]


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("n", [5, 125, 600, 1500])
def test_labels_never_overlap_and_the_focus_is_labelled(n: int) -> None:
    gnodes, gedges = _graph(n, seed=n)
    nodes, _ = _place(gnodes, gedges, centre=1)
    boxes = label_boxes(nodes, first=1)
    assert 1 in boxes and len(boxes) <= MAX_LABELS
    items = list(boxes.values())
    assert not any(_overlaps(a, b) for i, a in enumerate(items) for b in items[i + 1 :])
    if n <= 125:  # a readable share of a mid-sized graph is named
        assert len(boxes) >= min(n, 30)
    # the most connected entities come first
    degree = {x["id"]: x["degree"] for x in nodes}
    top = sorted(degree, key=lambda k: (-degree[k], k))[:5]
    assert sum(t in boxes for t in top) >= (3 if n <= 600 else 1)
    assert _place(gnodes, gedges, centre=1)[0] == nodes  # deterministic


async def test_the_page_opens_on_the_users_own_entity(api: Api) -> None:
    u = "acme/ana"
    await api.ctx.set_user(u, name="Ana")
    for text in ("I work at Orbital with Joao.", "My sister Marta lives in Porto.", "I moved to Lisbon in 2021."):
        await api.ctx.add([{"role": "user", "content": text}], u)
    async with browser(api, api.key("acme")) as (c, _):
        page = (await c.get("/ui/graph", params={"user": "ana"})).text
        assert re.search(r"<h1>Ana <small>\d+ entities within 2 hops", page)
        assert 'id="graph-legend"' in page and 'class="t-person"' in page
        labels = re.search(r'<g class="relations" id="relation-labels">(.*?)</g>', page, re.S).group(1)
        assert labels.count("<text") >= 2
        whole = (await c.get("/ui/graph", params={"user": "ana", "whole": "1"})).text
        assert "most mentioned of" in whole and 'id="whole-graph"' not in whole
    async with browser(api, api.key("acme")) as (c, _):
        await api.ctx.add([{"role": "user", "name": "Bo", "content": "Bo likes chess in Oslo."}], "acme/bo")
        page = (await c.get("/ui/graph", params={"user": "bo"})).text
        assert "<h1>" in page and page.count('class="node') >= 1
