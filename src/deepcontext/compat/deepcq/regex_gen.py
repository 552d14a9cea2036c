"""``deepcq.regex_gen``: the regex of a query's words that deepcq matched against free-text tiers.

deepcontext scores cache entries and history turns one by one instead of including a tier whole
when this pattern matches; the pattern is still reported as ``QueryResult.content_pattern``.
Its words are Snowball stems and CJK bigrams besides the words themselves.
"""

from __future__ import annotations

import re

from deepcontext.errors import ValidationError
from deepcontext.query.plan import content_pattern_string as _pattern_string

__all__ = ["build_content_pattern", "content_pattern_string"]


def content_pattern_string(query: str) -> str:
    """The pattern's source text (never matches anything when the query has no words)."""
    if not isinstance(query, str):
        raise ValidationError("query must be a string", field="query")
    return _pattern_string(query)


def build_content_pattern(query: str) -> re.Pattern[str]:
    """The compiled pattern, case-insensitive as in deepcq."""
    return re.compile(content_pattern_string(query), re.IGNORECASE)
