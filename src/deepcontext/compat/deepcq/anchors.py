"""``deepcq.anchors``."""

from deepcontext.query.anchors import (
    DEFAULT_ANCHOR_PATTERNS,
    EMOJI_SYMBOL_PATTERN,
    IDENTIFIER_PATTERN,
    NUMBER_PATTERN,
    PERCENTAGE_PATTERN,
    QUOTED_PATTERN,
    VERSION_PATTERN,
    extract_literal_anchors,
)

__all__ = [
    "DEFAULT_ANCHOR_PATTERNS",
    "EMOJI_SYMBOL_PATTERN",
    "IDENTIFIER_PATTERN",
    "NUMBER_PATTERN",
    "PERCENTAGE_PATTERN",
    "QUOTED_PATTERN",
    "VERSION_PATTERN",
    "extract_literal_anchors",
]
