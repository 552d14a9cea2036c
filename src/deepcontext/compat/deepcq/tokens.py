"""``deepcq.tokens``: Snowball stems (PyStemmer), Unicode and CJK tokens."""

from deepcontext.query.tokens import content_words, stem, tokenize

__all__ = ["content_words", "stem", "tokenize"]
