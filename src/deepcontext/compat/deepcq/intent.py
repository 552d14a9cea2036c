"""``deepcq.intent``."""

from deepcontext.query.intent import SCHEMA_SOURCE, score_sections, score_sections_detailed, select_sections
from deepcontext.query.tokens import tokenize

__all__ = ["SCHEMA_SOURCE", "score_sections", "score_sections_detailed", "select_sections", "tokenize"]
