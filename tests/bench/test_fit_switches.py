"""The same-kind threshold that ships is the one ``benchmarks/fit_switches.py`` chooses by
cross-validation on the labelled groups, and the groups are well formed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from deepcontext.embed.minilm import MiniLMEmbedder
from deepcontext.language.same_kind import threshold_for

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
DATA = BENCHMARKS / "data" / "switches.jsonl"


def test_the_groups_are_well_formed() -> None:
    groups = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(groups) >= 150 and len({g["id"] for g in groups}) == len(groups)
    for g in groups:
        assert 3 <= len(g["standing"]) <= 6 and g["change"], g["id"]
        assert g["replaces"] is None or 0 <= g["replaces"] < len(g["standing"]), g["id"]
    assert sum(g["replaces"] is None for g in groups) >= len(groups) // 3  # as many that replace nothing


def test_the_shipped_threshold_is_the_fitted_one() -> None:
    spec = importlib.util.spec_from_file_location("fit_switches", BENCHMARKS / "fit_switches.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    said: list[str] = []
    compared, threshold = module.fit(DATA, said.append)
    # the engine compares the two facts (the cosine ingest already has for its nearest memories)
    assert compared == "facts", said
    assert threshold_for(MiniLMEmbedder().model_id) == threshold, said
