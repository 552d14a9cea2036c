"""Counting tokens offline: the embedder's tokenizer, or an estimate.

``Embedder.count_tokens`` counts: the local MiniLM embedder with its WordPiece tokenizer, others
estimate one token per four characters. Neither is the reading LLM's tokenizer (tiktoken would
download its encodings at run time), so leave the model some headroom when choosing a budget.

Both counters are subadditive over pieces ending with a line break (counting pieces one by one never
gives less than counting their concatenation), so a context charged piece by piece never exceeds its
budget.
"""

from __future__ import annotations

from collections.abc import Callable

from deepcontext.embed.embedder import Embedder

__all__ = ["TokenCounter"]

_ELLIPSIS = " …"


class TokenCounter:
    """``count(text)`` with the embedder's tokenizer (or its estimate), and ``clip`` to a size."""

    def __init__(self, embedder: Embedder) -> None:
        self._count: Callable[[str], int] = embedder.count_tokens
        own = type(embedder).count_tokens is not Embedder.count_tokens
        self.description = (
            f"{embedder.model_id} tokenizer (approximates the LLM's count)" if own else "estimate: 1 token per 4 characters"
        )

    def count(self, text: str) -> int:
        return int(self._count(text)) if text else 0

    def clip(self, text: str, max_tokens: int, suffix: str = "\n") -> str | None:
        """The longest prefix of ``text`` (cut at a space when one is near) that, with ``" …"``
        and ``suffix``, counts at most ``max_tokens``; None when not even a little fits."""
        if max_tokens <= 0:
            return None
        if self.count(text + suffix) <= max_tokens:
            return text
        lo, hi = 0, len(text)  # invariant: text[:lo] fits, text[:hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(text[:mid].rstrip() + _ELLIPSIS + suffix) <= max_tokens:
                lo = mid
            else:
                hi = mid
        cut = text[:lo]
        space = cut.rfind(" ")
        if space >= len(cut) * 3 // 4:
            cut = cut[:space]
        cut = cut.rstrip()
        if not cut:
            return None
        return cut + _ELLIPSIS
