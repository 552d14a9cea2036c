"""The calibration report of `bench locomo --calibration` on LoCoMo-format conversations of our own
(never the benchmark data): reliability bins that add up, a leave-one-conversation-out fit, constants
that round-trip, and returned scores that separate relevant from irrelevant results."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from deepcontext.retrieve.calibration import CONSTANTS_PATH, FEATURES, Calibration
from deepcontext_bench.calibration import write_constants
from deepcontext_bench.locomo import run_locomo
from tests.support.cli import run_cli

DATA = Path(__file__).with_name("mini_locomo.json")


def two_conversations(tmp_path: Path) -> Path:
    """The mini conversation twice, as two samples (leave-one-conversation-out needs two)."""
    (sample,) = json.loads(DATA.read_text())
    path = tmp_path / "two.json"
    path.write_text(json.dumps([sample, {**sample, "sample_id": f"{sample['sample_id']}-b"}]))
    return path


@pytest.mark.slow  # one of the longest tests
async def test_report_bins_cross_validation_and_constants(tmp_path: Path) -> None:
    result = await run_locomo(
        two_conversations(tmp_path),
        db_url=f"sqlite:///{tmp_path}/c.db",
        settings={"embedder": "hash"},
        baselines=False,
        calibration=True,
    )
    cal = result["calibration"]
    assert cal["features"] == list(FEATURES)
    for key in ("returned", "cross_validated", "fitted"):
        rel = cal[key]
        assert sum(b["count"] for b in rel["bins"]) == rel["results"] > 0, key
        assert 0 < rel["relevant"] < rel["results"]
        assert all(0 <= b["predicted"] <= 1 and 0 <= b["observed"] <= 1 for b in rel["bins"])
        assert 0 <= rel["ece"] <= 1 and 0 <= rel["brier"] <= 1
        # every question asked of its own conversation and of the other one, where nothing counts
        assert rel["answerable"]["results"] + rel["off_topic"]["results"] == rel["results"]
        assert rel["off_topic"]["relevant"] == 0 and rel["answerable"]["relevant"] == rel["relevant"]
        kept = rel["first_results_kept"]
        assert [k["min_score"] for k in kept] == sorted(k["min_score"] for k in kept)
        assert all(a["answerable"] >= b["answerable"] and a["off_topic"] >= b["off_topic"] for a, b in itertools.pairwise(kept))
    # the committed constants separate relevant results from the rest (a floor: scores that ignore
    # the ranking, or features read wrong, would not)
    bins = cal["returned"]["bins"]
    top, bottom = bins[-1], bins[0]
    assert top["observed"] > bottom["observed"], bins
    assert set(cal["constants"]["weights"]) == set(FEATURES)

    out = tmp_path / "calibration.json"
    write_constants(cal["constants"], {"about": "test"}, out)
    model = Calibration.from_json(json.loads(out.read_text()))
    assert model.weights == tuple(cal["constants"]["weights"][f] for f in FEATURES)


@pytest.mark.slow  # a LoCoMo run end to end
def test_cli_prints_the_calibration_curve(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "250"}
    before = CONSTANTS_PATH.read_bytes()
    p = run_cli(["bench", "locomo", "--data", str(two_conversations(tmp_path)), "--no-baselines", "--calibration",
                 "--out", str(tmp_path / "out")], env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    for title in ("scores as search returned them", "leave-one-conversation-out refit", "refit on all conversations"):
        assert f"calibration, {title}:" in p.stdout
    assert "questions asked of another one:" in p.stdout and "| min_score |" in p.stdout
    assert "| 0.0-0.1 |" in p.stdout and "ECE" in p.stdout and "Brier" in p.stdout
    assert CONSTANTS_PATH.read_bytes() == before  # only --refit writes them
    saved = json.loads((tmp_path / "out" / "locomo-latest.json").read_text())
    assert saved["calibration"]["cross_validated"]["results"] > 0
