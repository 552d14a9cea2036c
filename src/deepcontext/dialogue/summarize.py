"""An extractive summariser: the offline stand-in for an LLM summary (deterministic, no model).

The text is cut into sentences (Latin and CJK punctuation, line breaks). Each sentence is scored by
how central its terms are (terms frequent across the whole text count more; the sum is normalised
by the square root of the sentence's distinct terms, so long sentences do not win by length), with
a bonus for exact content worth keeping verbatim (numbers, formulas, decisions). The best ones, up
to a character budget, are returned in their original order with their speaker; sentences with no
content word ("Ok.", "Thanks.") are dropped unless there is nothing else.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from deepcontext.text import keyword_terms, normalize_for_hash

__all__ = ["extractive_summary", "split_sentences"]

_LATIN_END = re.compile(r"(?<=[.!?;])\s+(?=\S)")
_CJK_END = re.compile(r"(?<=[。！？；])")
_EXACT = re.compile(r"\d|[=+*/^<>≤≥≈∑∫√|⟩⟨]|\b(?:defin|formula|decid|conclu|remember|important|prefer|must)\w*", re.IGNORECASE)
_EXACT_CJK = re.compile(r"公式|定义|结论|决定|记住|重要|喜欢|必须")

_LABELS = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split at line breaks, at ``.!?;`` followed by space, after ``。！？；``."""
    out: list[str] = []
    for line in text.splitlines():
        for part in _LATIN_END.split(line):
            for piece in _CJK_END.split(part):
                s = piece.strip(" \t-*•")
                if s:
                    out.append(s)
    return out


def extractive_summary(
    messages: Sequence[tuple[str, str]],
    *,
    max_chars: int = 800,
    max_sentences: int = 12,
) -> str:
    """Summarise ``(role, text)`` messages by keeping their most informative sentences.

    Returns lines ``"User: ..."`` / ``"Assistant: ..."`` in conversation order; an empty string
    when there is no text. The same input always gives the same output.
    """
    sentences: list[tuple[int, str, str, list[str]]] = []  # (message index, role, sentence, terms)
    for i, (role, text) in enumerate(messages):
        for s in split_sentences(text or ""):
            sentences.append((i, role, s, keyword_terms(s)))
    if not sentences:
        return ""
    tf: Counter[str] = Counter()
    for *_, terms in sentences:
        tf.update(set(terms))
    scored: list[tuple[float, int]] = []
    for k, (_, _, s, terms) in enumerate(sentences):
        uniq = set(terms)
        centrality = sum(math.log1p(tf[t]) for t in uniq) / math.sqrt(len(uniq)) if uniq else 0.0
        exact = 1.0 if (_EXACT.search(s) or _EXACT_CJK.search(s)) else 0.0
        scored.append((centrality + exact, k))
    scored.sort(key=lambda x: (-x[0], x[1]))

    chosen: set[int] = set()
    seen: set[str] = set()
    used = 0
    for score, k in scored:
        if len(chosen) >= max_sentences or (score <= 0 and chosen):
            break  # sentences without a content word ("Ok.", "Thanks.") only when nothing else exists
        s = sentences[k][2]
        key = normalize_for_hash(s)
        if key in seen:
            continue
        if chosen and used + len(s) > max_chars:
            continue
        if not chosen and len(s) > max_chars:
            s = s[: max(1, max_chars - 1)].rstrip() + "…"
            sentences[k] = (sentences[k][0], sentences[k][1], s, sentences[k][3])
        seen.add(key)
        chosen.add(k)
        used += len(s)

    lines: list[str] = []
    last_msg = -1
    for k in sorted(chosen):
        i, role, s, _ = sentences[k]
        if i == last_msg:
            lines[-1] += " " + s
        else:
            lines.append(f"{_LABELS.get(role, role.capitalize())}: {s}")
            last_msg = i
    return "\n".join(lines)
