"""Geometry of the inspector's pictures, computed on the server: the graph's layout, the
conversation DAG's lanes, the forgetting curves. Templates draw the SVG from these numbers (so
every label goes through the template's escaping)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from deepcontext.lifecycle.decay import LN2

__all__ = ["REPULSION_SAMPLE", "curve_plot", "dag_layout", "force_layout"]

#: past this many entities, each layout round repels every entity from a random sample this large
REPULSION_SAMPLE = 300


def force_layout(
    ids: Sequence[int], edges: Sequence[tuple[int, int]], *, size: float = 1000.0, iterations: int = 80, centre: int | None = None
) -> dict[int, tuple[float, float]]:
    """Fruchterman-Reingold positions in a ``size`` square, deterministic for the same input (the
    start is a spiral in id order, the sampling seeded). ``centre`` stays in the middle."""
    n = len(ids)
    if n == 0:
        return {}
    if n == 1:
        return {ids[0]: (size / 2, size / 2)}
    index = {v: i for i, v in enumerate(ids)}
    golden = math.pi * (3 - math.sqrt(5))
    k = np.arange(n, dtype=np.float64)
    r = np.sqrt(k + 0.5) / math.sqrt(n) * size * 0.45
    pos = np.stack([size / 2 + r * np.cos(k * golden), size / 2 + r * np.sin(k * golden)], axis=1)
    pairs = np.array([(index[a], index[b]) for a, b in edges if a in index and b in index and a != b], dtype=np.int64).reshape(
        -1, 2
    )
    ideal = size * 0.9 / math.sqrt(n)
    temp = size / 10
    fixed = index.get(centre) if centre is not None else None
    x, y = pos[:, 0].astype(np.float32), pos[:, 1].astype(np.float32)
    k2 = np.float32(ideal**2)
    src, dst = pairs[:, 0], pairs[:, 1]
    rng = np.random.default_rng(n)
    for _ in range(iterations):
        # repulsion k^2/d along each pair's direction: delta * k^2 / d^2 (float32, no n x n x 2
        # array); past REPULSION_SAMPLE entities, from a fresh random sample of them each round,
        # scaled up (the layout's cost grows as n, not n^2)
        others: Any = slice(None)
        scale = np.float32(1.0)
        if n > REPULSION_SAMPLE:
            others = rng.choice(n, REPULSION_SAMPLE, replace=False)
            scale = np.float32(n / REPULSION_SAMPLE)
        dx = x[:, None] - x[None, others]
        dy = y[:, None] - y[None, others]
        f = k2 * scale / (dx * dx + dy * dy + np.float32(1e-2))
        fx, fy = (dx * f).sum(1), (dy * f).sum(1)
        if len(src):
            ex, ey = x[src] - x[dst], y[src] - y[dst]
            el = np.sqrt(ex * ex + ey * ey) + np.float32(1e-6)
            ax, ay = ex * el / ideal, ey * el / ideal  # attraction d^2/k along the edge
            np.add.at(fx, src, -ax)
            np.add.at(fy, src, -ay)
            np.add.at(fx, dst, ax)
            np.add.at(fy, dst, ay)
        # a weak pull to the middle keeps unconnected entities from drifting off
        fx += (size / 2 - x) * np.float32(0.2 * ideal / size)
        fy += (size / 2 - y) * np.float32(0.2 * ideal / size)
        length = np.sqrt(fx * fx + fy * fy) + np.float32(1e-9)
        step = np.minimum(length, np.float32(temp)) / length
        x += fx * step
        y += fy * step
        if fixed is not None:
            x[fixed] = y[fixed] = size / 2
        temp *= 0.95
    pos = np.stack([x, y], axis=1).astype(np.float64)
    # into the square, around the centre entity (or the middle of the layout): shrunk when it
    # spills over, never stretched (a small graph stays compact)
    mid = pos[fixed] if fixed is not None else (pos.min(0) + pos.max(0)) / 2
    reach = float(np.abs(pos - mid).max()) or 1.0
    half = size / 2 - size * 0.05
    pos = size / 2 + (pos - mid) * min(1.0, half / reach)
    return {v: (float(pos[i, 0]), float(pos[i, 1])) for i, v in enumerate(ids)}


def dag_layout(nodes: Sequence[Any]) -> tuple[dict[int, tuple[int, int]], int, int]:
    """``{node id: (lane, row)}`` for a conversation's nodes (each with ``parents`` and
    ``summary_of``), plus the number of lanes and rows. One node per row (so every node's text has
    its line), parents first, then by id; a node takes its first parent's lane unless a sibling
    continued that lane already: then a new lane (a branch). A merge stays in its first parent's
    lane. A summary comes after the turns it compresses, in a lane of its own."""
    ids = {n.id for n in nodes}
    deps = {n.id: [p for p in [*n.parents, *getattr(n, "summary_of", [])] if p in ids and p != n.id] for n in nodes}
    by_id = {n.id: n for n in nodes}
    waiting = {i: len(set(d)) for i, d in deps.items()}
    children: dict[int, list[int]] = {}
    for i, d in deps.items():
        for p in set(d):
            children.setdefault(p, []).append(i)
    ready = [i for i, k in waiting.items() if k == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in children.get(i, ()):
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    order += sorted(i for i in ids if i not in set(order))  # a cycle never happens; stay total anyway
    place: dict[int, tuple[int, int]] = {}
    taken: set[int] = set()  # parents whose lane a child continues already
    lanes = 0
    for row, i in enumerate(order):
        n = by_id[i]
        parents = [p for p in n.parents if p in place]
        if parents:
            first = parents[0]
            lane = place[first][0] if first not in taken else lanes
            taken.add(first)
        else:
            lane = 0 if lanes == 0 and not getattr(n, "summary_of", None) else lanes
        lanes = max(lanes, lane + 1)
        place[i] = (lane, row)
    rows = len(order)
    return place, max(lanes, 1), rows


def curve_plot(
    curves: Sequence[dict[str, Any]], *, threshold: float, width: float = 720, height: float = 300, pad: float = 40
) -> dict[str, Any]:
    """Polylines of each memory's importance over the coming days (``base * 2^(-(age + t) / half
    life)``), the threshold line and the axes' ticks, in SVG coordinates."""
    halves = sorted(c["half_life"] for c in curves if c["half_life"] > 0)
    # long enough to see the typical curve fall through the threshold; slow ones stay nearly flat
    horizon = float(min(365.0, max(14.0, 4 * halves[len(halves) // 2]))) if halves else 30.0
    top = max([1.0] + [float(c["base"]) for c in curves])

    def xy(day: float, value: float) -> tuple[float, float]:
        return pad + day / horizon * (width - 2 * pad), height - pad - value / top * (height - 2 * pad)

    lines = []
    for c in curves:
        pts = []
        for i in range(61):
            day = horizon * i / 60
            if c["half_life"] > 0:
                v = c["base"] * math.exp(-LN2 * max(0.0, c["age_days"] + day) / c["half_life"])
            else:
                v = c["base"]
            pts.append(xy(day, v))
        crosses = None
        if c["half_life"] > 0 and c["base"] > threshold:
            t = c["half_life"] * math.log2(c["base"] / threshold) - c["age_days"]
            crosses = max(0.0, t)
        lines.append(
            {**c, "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in pts), "now": xy(0, c["importance"]), "crosses": crosses}
        )
    ticks_x = [(xy(d, 0)[0], f"{d:g}") for d in _ticks(horizon)]
    ticks_y = [(xy(0, v)[1], f"{v:.2g}") for v in _ticks(top)]
    return {
        "width": width, "height": height, "pad": pad, "horizon": horizon, "lines": lines,
        "threshold_y": xy(0, threshold)[1], "ticks_x": ticks_x, "ticks_y": ticks_y,
    }  # fmt: skip


def _ticks(hi: float, n: int = 5) -> list[float]:
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(hi / step) + 1)]
