"""Whether two things are of the same kind ("a Pixel 8" and "an iPhone 12": phones), read off the
default embedder's vectors.

A change that names no old thing ("Switched to a Pixel 8") replaces the user's standing fact most
similar to it (the cosine of the two facts' vectors, which ingest has already), when that reaches a
threshold fitted by ``benchmarks/fit_switches.py`` on the project's labelled groups (the texts
compared and the threshold chosen by cross-validation). The threshold belongs to one embedding model: with any other embedder
:func:`threshold_for` returns None and only changes that name what they end replace anything.
"""

from __future__ import annotations

__all__ = ["threshold_for"]

# embedding model id -> the cosine at or above which the change replaces the fact (chosen for precision:
# a wrong replacement hides a true fact; its scores are on the benchmarks page)
_THRESHOLDS = {"all-MiniLM-L6-v2/onnx-fp32": 0.5}


def threshold_for(model_id: str) -> float | None:
    """The fitted same-kind threshold of an embedding model, or None when none was fitted for it."""
    return _THRESHOLDS.get(model_id)
