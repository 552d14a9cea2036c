"""Literal anchors: substrings of a query that must be matched verbatim (deepcq's ``anchors.py``).

Quoted phrases, version strings, percentages, identifiers, numbers and emoji runs are dropped or
mangled by a tokenizer; when a section contains one of them verbatim, its score is raised to the
weight of the place it was found (1.0 by default). Pass your own patterns to extend the set::

    ticket = re.compile(r"\\bTICKET-\\d+\\b")
    MemorySchema(sections=[...], anchor_patterns=[*DEFAULT_ANCHOR_PATTERNS, ticket])
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "DATE_PATTERN",
    "DEFAULT_ANCHOR_PATTERNS",
    "EMOJI_SYMBOL_PATTERN",
    "IDENTIFIER_PATTERN",
    "NUMBER_PATTERN",
    "PERCENTAGE_PATTERN",
    "QUOTED_PATTERN",
    "TIME_PATTERN",
    "VERSION_PATTERN",
    "extract_literal_anchors",
]

EMOJI_SYMBOL_PATTERN = re.compile(
    "[\U0001f1e6-\U0001f1ff\U0001f300-\U0001faff\U00002190-\U000021ff\U00002600-\U000027bf\U00002b00-\U00002bff\u200d\ufe0f]+"
)
# "straight", 'single', “curly”, and the CJK 「corner」 and «guillemet» quotes.
QUOTED_PATTERN = re.compile(r'"([^"\n]{2,80})"|\'([^\'\n]{2,80})\'|“([^”\n]{2,80})”|「([^」\n]{1,80})」|«([^»\n]{2,80})»')
#: clock times "02:15", "14:30:05", kept whole
TIME_PATTERN = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
#: ISO dates "2025-03-14"
DATE_PATTERN = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
#: dotted version-like strings: "v2.3.1", "1.0.0"
VERSION_PATTERN = re.compile(r"\bv?\d+(?:\.\d+){1,3}\b")
#: "42%", "3.5%" (tried before NUMBER_PATTERN so the '%' is kept)
PERCENTAGE_PATTERN = re.compile(r"\b\d+(?:\.\d+)?%")
#: hyphen/underscore identifiers: "circuit-breaker-v2", "user_id_9"
IDENTIFIER_PATTERN = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b")
#: decimals, or integers of 2+ digits (single digits are too common to anchor on)
NUMBER_PATTERN = re.compile(r"\b\d+\.\d+\b|\b\d{2,}\b")

DEFAULT_ANCHOR_PATTERNS: tuple[re.Pattern[str], ...] = (
    EMOJI_SYMBOL_PATTERN,
    QUOTED_PATTERN,
    DATE_PATTERN,
    TIME_PATTERN,
    VERSION_PATTERN,
    PERCENTAGE_PATTERN,
    IDENTIFIER_PATTERN,
    NUMBER_PATTERN,
)


def _match_text_and_span(m: re.Match[str]) -> tuple[str, tuple[int, int]]:
    if m.lastindex:
        for i, g in enumerate(m.groups(), start=1):
            if g is not None:
                return g, m.span(i)
    return m.group(0), m.span()


def extract_literal_anchors(text: str, patterns: Sequence[re.Pattern[str]] | None = None) -> list[str]:
    """Verbatim anchors of ``text``, in pattern order then position, without duplicates.

    Patterns claim the spans they match; a later pattern's match overlapping a claimed span is
    skipped (so "15%" does not also yield "15").
    """
    anchors: list[str] = []
    seen: set[str] = set()
    claimed: list[tuple[int, int]] = []
    for pattern in DEFAULT_ANCHOR_PATTERNS if patterns is None else patterns:
        for m in pattern.finditer(text):
            anchor, (start, end) = _match_text_and_span(m)
            if not anchor or any(start < ce and cs < end for cs, ce in claimed):
                continue
            claimed.append((start, end))
            if anchor not in seen:
                seen.add(anchor)
                anchors.append(anchor)
    return anchors
