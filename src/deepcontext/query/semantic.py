"""Optional semantic scoring: blend lexical intent with embedding similarity.

Off by default. With ``MemorySchema(semantic=SemanticScoring(embedder))`` a section's score becomes
``(1 - weight) * lexical + weight * semantic``, where *semantic* is ``(cos - floor) / (best -
floor)`` clamped to [0, 1]: ``cos`` the best cosine between the query and the section's pieces
(name, keywords, text cut into pieces of at most ``max_piece_chars``) and ``best`` the highest among
the sections scored. Relative, because absolute cosines of a short query overlap between relevant
and irrelevant sections. Queries with CJK terms stay lexical unless ``cjk_queries`` is set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deepcontext.errors import ValidationError

if TYPE_CHECKING:
    from deepcontext.embed.embedder import Embedder

__all__ = ["SemanticScoring", "split_pieces"]


def split_pieces(text: str, max_chars: int) -> list[str]:
    """Lines of ``text`` grouped into pieces of at most ``max_chars`` (a blank line always cuts)."""
    pieces: list[str] = []
    cur: list[str] = []
    size = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            if cur:
                pieces.append(" ".join(cur))
                cur, size = [], 0
            continue
        while len(line) > max_chars:
            if cur:
                pieces.append(" ".join(cur))
                cur, size = [], 0
            cut = line.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            pieces.append(line[:cut].strip())
            line = line[cut:].strip()
        if cur and size + len(line) + 1 > max_chars:
            pieces.append(" ".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += len(line) + 1
    if cur:
        pieces.append(" ".join(cur))
    return [p for p in pieces if p]


@dataclass
class SemanticScoring:
    """How to blend embedding similarity into section scores (see the module docstring)."""

    embedder: Embedder
    weight: float = 0.3
    floor: float = 0.2
    max_piece_chars: int = 500
    #: blend queries written in CJK scripts too (the default model, all-MiniLM-L6-v2, is English-only:
    #: its similarities for Chinese, Japanese or Korean are noise, so such queries stay lexical)
    cjk_queries: bool = False

    def __post_init__(self) -> None:
        from deepcontext.embed.embedder import Embedder

        if not isinstance(self.embedder, Embedder):
            raise ValidationError("SemanticScoring.embedder must be a deepcontext Embedder", field="embedder")
        for name in ("weight", "floor"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValidationError(f"{name} must be a number", field=name)
        if not 0.0 <= self.weight <= 1.0:
            raise ValidationError("weight must be in [0, 1]", field="weight")
        if not -1.0 <= self.floor < 1.0:
            raise ValidationError("floor must be in [-1, 1)", field="floor")
        if isinstance(self.max_piece_chars, bool) or not isinstance(self.max_piece_chars, int) or self.max_piece_chars < 20:
            raise ValidationError("max_piece_chars must be an integer >= 20", field="max_piece_chars")

    def relative(self, cosines: Sequence[float]) -> list[float]:
        """Each cosine relative to the best one: ``(cos - floor) / (best - floor)`` in [0, 1]."""
        if not cosines:
            return []
        best = max(cosines)
        if best <= self.floor:
            return [0.0] * len(cosines)
        return [round(min(1.0, max(0.0, (c - self.floor) / (best - self.floor))), 4) for c in cosines]

    def blend(self, lexical: float, semantic: float) -> float:
        return (1.0 - self.weight) * lexical + self.weight * semantic

    def cosines(self, query: str, items: Sequence[Sequence[str]]) -> list[float]:
        """For each item (a list of texts), the best cosine between ``query`` and its pieces
        (-1.0 for an item without text)."""
        import numpy as np

        piece_lists = [[p for t in item for p in split_pieces(t, self.max_piece_chars)] for item in items]
        flat = [p for pl in piece_lists for p in pl]
        if not flat or not query.strip():
            return [-1.0] * len(piece_lists)
        vecs = self.embedder.embed([query, *flat])
        sims = vecs[1:] @ vecs[0]
        out: list[float] = []
        pos = 0
        for pl in piece_lists:
            out.append(float(np.max(sims[pos : pos + len(pl)])) if pl else -1.0)
            pos += len(pl)
        return out

    def scores(self, query: str, items: Sequence[Sequence[str]]) -> list[float]:
        """Relative semantic scores of ``items`` for ``query`` (see the module docstring)."""
        return self.relative(self.cosines(query, items))
