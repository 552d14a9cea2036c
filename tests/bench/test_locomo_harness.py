"""The LoCoMo harness stays honest: a small LoCoMo-format conversation of our own (never the
benchmark data) goes through the real pipeline; a recall floor catches a broken pipeline
(lost provenance, wrong user, empty index). The real numbers are reported by
`deepcontext bench locomo`, never asserted here."""

from __future__ import annotations

from pathlib import Path

from deepcontext_bench.locomo import KS, run_locomo
from deepcontext_bench.locomo_data import load, normalise_evidence, parse_session_date

DATA = Path(__file__).with_name("mini_locomo.json")


def test_loader_handles_the_quirks() -> None:
    (conv,) = load(DATA)
    assert [n for n, _, _ in conv.sessions] == [1, 2, 3]  # session_4 has a date but no turns
    assert parse_session_date("7:40 pm on 17 April, 2024").hour == 19
    valid = {t.dia_id for t in conv.turns}
    assert normalise_evidence(["D1:5; D2:6"], valid) == ["D1:5", "D2:6"]
    assert normalise_evidence(["D03:1"], valid) == ["D3:1"]
    assert normalise_evidence(["D9:99", "D2:7"], valid) == ["D2:7"]
    # a question with no valid evidence is not asked
    assert all(q.evidence for q in conv.questions)
    assert "What is Priya's favourite food on Mars?" not in [q.question for q in conv.questions]


async def test_small_run_clears_a_floor(tmp_path: Path) -> None:
    result = await run_locomo(DATA, db_url=f"sqlite:///{tmp_path}/mini.db", settings={"embedder": "hash"}, baselines=True)
    ours = result["systems"]["deepcontext"]
    assert ours["questions"] == 14
    assert set(ours["recall"]) == set(KS)
    # 21 turns: a working pipeline finds nearly everything in its top 10; a broken one (no
    # provenance, another user's index, nothing indexed) finds nothing
    assert ours["recall"][10] >= 70.0, ours
    assert ours["recall"][50] >= 90.0, ours
    assert ours["recall"][5] <= ours["recall"][10] <= ours["recall"][25] <= ours["recall"][50]
    assert set(result["systems"]) == {"deepcontext", "keyword (BM25)", "vector (cosine)", "naive hybrid (RRF)"}
    for name, ratios in result["ratio_ours_over"].items():
        assert all(r is None or r > 0 for r in ratios.values()), name
    assert {"single-hop", "multi-hop", "temporal"} <= set(ours["by_category"])
