"""locate(): ordering, verbatim text, max_candidates, anchors, recency, CJK, linear work."""

from __future__ import annotations

import itertools

import pytest

from deepcontext.errors import ValidationError
from deepcontext.query import Recency, linear_decay, locate, locate_with_stats

DOC = (
    "  Rate limits apply per API key.  \n\n"
    "\n\n"
    "The sliding window counter resets every minute.\n\n"
    "Rate limiting uses a sliding window; see RFC 6585 for status 429.\n\n"
    "Billing happens monthly."
)


def test_candidates_are_in_text_order_with_verbatim_text() -> None:
    found = locate(DOC, "rate limiting sliding window")
    assert [c.index for c in found] == [0, 1, 2]  # the empty chunk is not counted
    assert found[0].text == "Rate limits apply per API key."
    assert all(c.text in DOC for c in found)
    assert found[2].score == 1.0 and found[2].matched_tokens == ["limiting", "rate", "sliding", "window"]
    assert [c.score for c in found] == [0.5, 0.5, 1.0]


def test_max_candidates_keeps_the_best_in_text_order() -> None:
    found = locate(DOC, "rate limiting sliding window", max_candidates=2)
    assert [c.index for c in found] == [0, 2]  # tie at 0.5: the earlier chunk wins
    assert locate(DOC, "rate limiting sliding window", max_candidates=0) == []


def test_threshold_and_anchor() -> None:
    assert [c.index for c in locate(DOC, "rate limiting sliding window", confidence_threshold=0.75)] == [2]
    found = locate(DOC, 'what does status "429" mean?')
    assert [c.index for c in found] == [2]
    assert found[0].literal_hit and found[0].matched_anchors == ["429"] and found[0].score == 1.0


def test_recency_by_chunk_index() -> None:
    recency = {0: Recency(0.0, linear_decay(100.0))}
    found = locate(DOC, "rate limit", recency=recency, now=50.0)
    assert [(c.index, c.score) for c in found] == [(0, 0.5), (2, 1.0)]


def test_custom_separator_and_empty_inputs() -> None:
    assert [c.text for c in locate("a cat---the dog---a cat again", "cat", chunk_on="---")] == ["a cat", "a cat again"]
    assert locate("", "anything") == []
    assert locate("some text", "") == []  # a query without terms matches nothing


def test_cjk_chunks() -> None:
    doc = "认证服务在每个请求上验证令牌。\n\n速率限制按每个API密钥使用滑动窗口计数器。\n\n数据库迁移工具按顺序应用更改。"
    found = locate(doc, "速率限制是怎么工作的？")
    assert [c.index for c in found] == [1]


@pytest.mark.parametrize(
    "kwargs",
    [{"text": None}, {"query": 3}, {"chunk_on": ""}, {"confidence_threshold": "high"}, {"max_candidates": -1}],
)
def test_invalid_arguments(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"text": DOC, "query": "rate", **kwargs}
    with pytest.raises(ValidationError):
        locate(**args)  # type: ignore[arg-type]


def test_work_grows_linearly_with_the_text() -> None:
    block = "\n\n".join(
        [
            "Rate limiting is enforced per API key with a sliding window.",
            "Unlimited plans are priced differently and delimited by region.",
            "The database migration tool applies schema changes in order.",
        ]
    )
    stats = []
    for copies in (50, 200, 800):
        found, s = locate_with_stats("\n\n".join([block] * copies), "how does rate limiting work?")
        assert len(found) == copies
        stats.append(s)
    for small, big in itertools.pairwise(stats):
        assert big.chunks == 4 * small.chunks
        assert big.chars == pytest.approx(4 * small.chars, rel=0.01)
        assert big.needle_passes == small.needle_passes  # one pass over the text per search needle
        assert big.candidates == 4 * small.candidates  # occurrences looked at
        assert big.words_checked == 4 * small.words_checked
        assert big.chunks_scored == 4 * small.chunks_scored
