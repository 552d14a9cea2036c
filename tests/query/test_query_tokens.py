"""Tokens: Snowball stems, Unicode words, CJK grams, and the prefix rule the matcher relies on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deepcontext.query.matcher import Pattern, UnitIndex
from deepcontext.query.tokens import content_words, normalize, query_words, safe_prefixes, stem, tokenize


@pytest.mark.parametrize(
    ("a", "b"),
    [("connection", "connections"), ("status", "statuses"), ("running", "runs"), ("deployment", "deployments")],
)
def test_inflections_share_a_stem(a: str, b: str) -> None:
    # deepcq's suffix stripper gave connection -> connec, connections -> connect, status -> statu
    assert stem(a) == stem(b)


def test_stems_are_snowball() -> None:
    assert stem("connections") == "connect"
    assert stem("status") == "status"
    assert stem("spikes") == "spike"


def test_tokenize_keeps_unicode_words_and_drops_stopwords() -> None:
    toks = tokenize("Die Straße ist gesperrt, and the café is closed")
    assert "strasse" in toks and "café" in toks and "gesperrt" in toks
    assert "the" not in toks and "and" not in toks


def test_tokenize_splits_cjk_into_characters_and_bigrams() -> None:
    toks = tokenize("数据库连接")
    assert {"数", "据", "库", "数据", "据库", "连接"} <= set(toks)


def test_query_words_drop_cjk_particles_and_question_words() -> None:
    words = query_words("这周谁值班？")
    assert ("cjk", "值班") in words
    assert all("谁" not in w for _, w in words)


def test_normalize_folds_width_and_case() -> None:
    assert normalize("ＡＰＩ Key") == "api key"
    assert normalize("STRASSE") == normalize("straße") == "strasse"


def test_content_words_keep_order_and_repeats() -> None:
    assert content_words("rate limit, rate window") == ["rate", "limit", "rate", "window"]


def _vocabulary() -> set[str]:
    """Words from the Python sources on this machine: a large, varied English vocabulary."""
    words: set[str] = set()
    root = Path(re.__file__).parent.parent  # the standard library
    for path in sorted(root.glob("*.py")):
        words.update(re.findall(r"[^\W\d_]+", path.read_text(encoding="utf-8", errors="ignore").casefold()))
    words.update(["dying", "lying", "tying", "skies", "probability", "flexibility", "happily", "cries", "generalization"])
    return words


def test_every_word_starts_with_a_safe_prefix_of_its_stem() -> None:
    vocab = _vocabulary()
    assert len(vocab) > 10_000
    bad = [w for w in vocab if not any(w.startswith(p) for p in safe_prefixes(stem(w)))]
    assert bad == []


def test_matcher_finds_irregular_forms() -> None:
    index = UnitIndex(["the patient was dying", "clear skies tonight", "nothing here"])
    assert index.find(Pattern(stems=(stem("die"),))) == {0}
    assert index.find(Pattern(stems=(stem("sky"),))) == {1}


def test_matcher_respects_word_starts_and_multiword_patterns() -> None:
    index = UnitIndex(["unlimited plans", "rate of the limit", "limits apply", "the rate limit"])
    assert index.find(Pattern(stems=("limit",))) == {1, 2, 3}
    # adjacent content words, stopwords skipped ("rate of the limit" counts as adjacent)
    assert index.find(Pattern(stems=("rate", "limit"))) == {1, 3}
    assert index.find_verbatim("Rate") == set()
    assert index.find_verbatim("rate") == {1, 3}
