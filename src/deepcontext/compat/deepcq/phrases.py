"""``deepcq.phrases``."""

from deepcontext.query.plan import extract_phrases

__all__ = ["extract_phrases"]
