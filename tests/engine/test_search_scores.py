"""Search scores are calibrated relevance in [0, 1], in rank order, and min_score cuts on them."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import numpy as np
import pytest

from deepcontext import DeepContext, ManualClock, SyncDeepContext, ValidationError
from deepcontext.embed import HashEmbedder
from deepcontext.retrieve.calibration import (
    FEATURES,
    calibrate,
    default_calibration,
    feature_vector,
    fit_logistic,
    non_increasing,
    reliability,
)

SAID = datetime(2024, 2, 3, 10, 30, tzinfo=UTC)
CHAT = [
    {"role": "user", "name": "Maya", "content": "I work as a data engineer at Northwind Labs in Lisbon."},
    {"role": "assistant", "content": "Nice to meet you, Maya!"},
    {"role": "user", "name": "Maya", "content": "My sister Lena lives in Berlin and works as a nurse."},
    {"role": "user", "name": "Maya", "content": "On weekends I climb at the bouldering gym near the river."},
    {"role": "user", "name": "Maya", "content": "Our cat Pixel sleeps on the radiator all winter."},
    {"role": "user", "name": "Maya", "content": "I drink two espressos every morning before work."},
]


@pytest.fixture
async def maya(db_url: str) -> AsyncIterator[DeepContext]:
    # access tracking off: the same search twice must rank the same
    c = DeepContext(database_url=db_url, embedder=HashEmbedder(256), clock=ManualClock(SAID), track_access=False)
    await c.init()
    await c.add(CHAT, user_id="maya", conversation_id="c1", timestamp=SAID)
    try:
        yield c
    finally:
        await c.close()


async def test_scores_are_probabilities_in_rank_order_with_ranks_in_legs(maya: DeepContext) -> None:
    res = await maya.search("Northwind Labs data engineer", "maya", limit=20)
    assert len(res.results) >= 5
    scores = [r.score for r in res.results]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert "Northwind Labs" in res.results[0].text
    for r in res.results:
        assert r.legs["fused"] >= 1  # the rank in the fusion, before rescoring
        assert set(r.legs) <= {"fused", "vector", "keyword", "graph"}
        assert (r.similarity is not None) == ("vector" in r.legs)
        if r.similarity is not None:
            assert -1.0 <= r.similarity <= 1.0 + 1e-6
    # comparable across queries: a match on meaning and words outscores the best a query about
    # nothing that was said can find
    nothing = await maya.search("quantum chromodynamics lattice gauge", "maya", limit=5)
    assert nothing.results and nothing.results[0].score < res.results[0].score


async def test_min_score_keeps_exactly_the_results_at_or_above_it(maya: DeepContext) -> None:
    full = await maya.search("Where does Maya work?", "maya", limit=20)
    scores = sorted({r.score for r in full.results}, reverse=True)
    assert len(scores) >= 2
    bar = (scores[0] + scores[1]) / 2
    cut = await maya.search("Where does Maya work?", "maya", limit=20, min_score=bar)
    assert [r.memory_id for r in cut.results] == [r.memory_id for r in full.results if r.score >= bar]
    assert 1 <= cut.total < full.total
    assert (await maya.search("Where does Maya work?", "maya", limit=20, min_score=0)).total == full.total
    assert (await maya.search("Where does Maya work?", "maya", limit=20, min_score=1)).results == []


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf, True, "0.5", [0.5]])
async def test_min_score_is_validated(maya: DeepContext, bad: object) -> None:
    with pytest.raises(ValidationError, match="min_score"):
        await maya.search("Maya", "maya", min_score=bad)  # type: ignore[arg-type]


def test_sync_search_takes_min_score(tmp_path) -> None:
    with SyncDeepContext(database_url=f"sqlite:///{tmp_path}/s.db", embedder=HashEmbedder(256)) as ctx:
        ctx.add(CHAT, user_id="maya")
        assert ctx.search("Northwind Labs", "maya", min_score=1.0).results == []
        assert all(r.score >= 0.01 for r in ctx.search("Northwind Labs", "maya", min_score=0.01).results)


# --- the calibration's parts ------------------------------------------------------------------------


def test_non_increasing_pools_adjacent_violators() -> None:
    assert non_increasing([0.9, 0.5, 0.1]) == [0.9, 0.5, 0.1]
    assert non_increasing([0.2, 0.6, 0.1]) == pytest.approx([0.4, 0.4, 0.1])
    assert non_increasing([0.1, 0.2, 0.3]) == pytest.approx([0.2, 0.2, 0.2])
    rng = np.random.default_rng(7)
    for _ in range(50):
        v = rng.random(int(rng.integers(1, 30))).tolist()
        out = non_increasing(v)
        assert all(a >= b for a, b in zip(out, out[1:], strict=False))
        assert sum(out) == pytest.approx(sum(v))  # pooling keeps the mean


def test_logistic_fit_recovers_known_constants() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20000, len(FEATURES)))
    true_w = np.linspace(-1.5, 1.5, len(FEATURES))
    p = 1.0 / (1.0 + np.exp(-(-0.7 + x @ true_w)))
    y = (rng.random(len(p)) < p).astype(float)
    model = fit_logistic(x, y, l2=0.0)
    assert model.intercept == pytest.approx(-0.7, abs=0.1)
    assert np.allclose(model.weights, true_w, atol=0.1)


def test_reliability_bins_brier_and_ece() -> None:
    rel = reliability([0.05, 0.05, 0.95, 0.95, 0.95], [False, False, True, True, False])
    assert [b["count"] for b in rel["bins"]] == [2, 3]
    assert rel["bins"][1]["observed"] == pytest.approx(2 / 3)
    assert rel["brier"] == pytest.approx((0.05**2 * 2 + 0.05**2 * 2 + 0.95**2) / 5)
    assert rel["ece"] == pytest.approx(2 / 5 * 0.05 + 3 / 5 * abs(2 / 3 - 0.95))


def test_committed_constants_rank_better_evidence_higher() -> None:
    model = default_calibration()
    assert len(model.weights) == len(FEATURES)
    strong = feature_vector(1, {"fused": 1, "vector": 1, "keyword": 1}, 0.8)
    weak = feature_vector(30, {"fused": 40, "vector": 35}, 0.1)
    p = model.probabilities(np.array([strong, weak]))
    assert 0.0 < p[1] < p[0] < 1.0
    assert calibrate([]) == []


async def test_older_versions_keep_scores_in_rank_order(tmp_path) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path}/u.db", embedder=HashEmbedder(256), clock=ManualClock(SAID)) as c:
        await c.add([{"role": "user", "content": "I rent a small apartment in Madrid, close to the Retiro park."}], user_id="ana")
        await c.add([{"role": "user", "content": "We finally relocated to Porto in the spring."}], user_id="ana")
        res = await c.search("Where does the user live?", "ana", include_superseded=True)
        assert any(r.superseded_by is not None for r in res.results)  # an older version was added
        scores = [r.score for r in res.results]
        assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
