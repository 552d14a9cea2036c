"""`deepcontext bench plot` draws a line per run: stages of separate runs (another load on the
machine, another build) are never joined into one line, which would make latency seem to fall
as memories grow. Run in-process on results files written here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from deepcontext.cli.main import app


def scale_result(when: str, stages: list[tuple[int, float]]) -> dict[str, Any]:
    return {
        "benchmark": "scale",
        "shape": "one user",
        "backend": "sqlite",
        "machine": {"when": when},
        "stages": [{"memories_total": n, "search_ms": {"p50": ms / 2, "p95": ms, "p99": ms * 1.5}} for n, ms in stages],
    }


def speed_result(when: str) -> dict[str, Any]:
    return {
        "benchmark": "speed",
        "backend": "sqlite",
        "machine": {"when": when},
        "stages": [{"memories": 1000, "search_ms": {"p95": 20.0}}, {"memories": 10000, "search_ms": {"p95": 30.0}}],
        "peer": {
            "name": "mem0 2.2.1",
            "stages": [{"memories": 1000, "search_ms": {"p95": 50.0}}, {"memories": 10000, "search_ms": {"p95": 400.0}}],
        },
    }


def plotted(stdout: str) -> dict[str, list[tuple[int, float]]]:
    """The printed table of plotted points, line by line."""
    out: dict[str, list[tuple[int, float]]] = {}
    for ln in stdout.splitlines():
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if ln.startswith("|") and len(cells) == 3 and cells[1].isdigit():
            out.setdefault(cells[0], []).append((int(cells[1]), float(cells[2])))
    return out


def test_each_run_is_its_own_line(tmp_path: Path) -> None:
    # a run at 100k memories on a loaded machine, another at 320k on a quiet one: joined, the
    # line would fall from 161 to 38 ms
    files = []
    for name, data in (
        ("a.json", scale_result("2026-12-01T17:20:00+0000", [(100_000, 161.0)])),
        ("b.json", scale_result("2026-12-01T18:30:00+0000", [(320_000, 38.5)])),
        ("c.json", speed_result("2026-12-02T09:00:00+0000")),
    ):
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
        files.append(str(tmp_path / name))
    svg = tmp_path / "plot.svg"
    r = CliRunner().invoke(app, ["bench", "plot", *files, "--output", str(svg)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    lines = plotted(r.output)
    assert lines == {
        "deepcontext, SQLite (bench scale, 2026-12-01 17:20)": [(100_000, 161.0)],
        "deepcontext, SQLite (bench scale, 2026-12-01 18:30)": [(320_000, 38.5)],
        "deepcontext, SQLite (bench speed, 2026-12-02 09:00)": [(1000, 20.0), (10000, 30.0)],
        "mem0 2.2.1 (bench speed, 2026-12-02 09:00)": [(1000, 50.0), (10000, 400.0)],
    }, r.output
    # the figure itself: matplotlib writes each text of the SVG as a comment before its glyphs,
    # so the legend names every line once
    legend = set(re.findall(r"<!-- (.*?) -->", svg.read_text(encoding="utf-8")))
    assert set(lines) <= legend, legend
    # the same run's stages stay joined, in order of size
    for points in lines.values():
        assert [n for n, _ in points] == sorted(n for n, _ in points)
