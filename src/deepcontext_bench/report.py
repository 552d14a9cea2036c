"""Benchmark output: JSON per run, a markdown table for the terminal, PNG plots."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

__all__ = ["default_results_dir", "machine", "markdown_table", "save_json", "save_plot"]


def default_results_dir() -> Path:
    """benchmarks/results/ of the repository when run from it, else ./benchmarks/results/."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "benchmarks").is_dir() and (parent / "pyproject.toml").exists():
            return parent / "benchmarks" / "results"
    return Path.cwd() / "benchmarks" / "results"


def machine() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        # latency on a shared machine follows its load: recorded so runs can be told apart
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def save_json(data: dict[str, Any], out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    (out_dir / f"{name}-latest.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return path


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def save_plot(
    series: dict[str, tuple[list[float], list[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    path: Path,
    logx: bool = False,
    logy: bool = False,
) -> Path | None:
    """A line plot of several series; None if matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
