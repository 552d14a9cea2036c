"""Rules that spot key memories in a message without a model (English and Chinese cues).

- formulas and equations (``=`` between terms, math symbols, LaTeX): pinned, not packable (their
  context is never compressed), tag ``formula``;
- things the user asks to remember: pinned, tag ``note``;
- preferences (``I prefer / like / always / never``, ``我喜欢``...): tag ``preference``;
- who the user is (``my name is``, ``call me``, ``我叫``): tag ``profile``;
- definitions and conclusions (``is defined as``, ``therefore``, ``结论``...): tag ``conclusion``.

Each memory also gets up to two keyword tags from its sentence, so tag search finds it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from deepcontext.dialogue.summarize import split_sentences
from deepcontext.text import keyword_terms

__all__ = ["RuleMemory", "extract_key_memories", "formula_key"]


@dataclass(slots=True)
class RuleMemory:
    content: str
    tags: list[str] = field(default_factory=list)
    pinned: bool = False
    packable: bool = True


_FORMULA = re.compile(r"[\w)\]|⟩²³]\s*(?:=|≈|≤|≥)\s*[\w(\[|⟨√∑∫-]|[∑∫√]|\\(?:frac|sum|int|sqrt|alpha|beta|psi)\b")
_NOTE = re.compile(r"\b(?:remember|don'?t forget|keep in mind|note that)\b|记住|请记得|别忘了|注意", re.IGNORECASE)
_PREF = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:prefer|like|love|hate|dislike|enjoy|always|never|usually)\b|\bmy\s+favou?rite\b"
    r"|我(?:很|最|不)?(?:喜欢|偏好|讨厌|习惯|爱)",
    re.IGNORECASE,
)
_PROFILE = re.compile(r"\bmy name is\b|\bcall me\b|\bi am a\b|\bi work (?:at|as|for)\b|我叫|我的名字|我是一", re.IGNORECASE)
_CONCLUSION = re.compile(
    r"\b(?:is defined as|by definition|in conclusion|therefore|the answer is|we conclude)\b|定义为|结论|因此|所以答案",
    re.IGNORECASE,
)


_MATHY = re.compile(r"[=+*/^|⟩⟨²³√∑∫\\<>≤≥≈]|\d|(?<=\w)-(?=\w)")
_OPERATOR_START = re.compile(r"^[=+*/^<>≤≥≈-]")
_OPERATOR_END = re.compile(r"[=+*/^<>≤≥≈-]$")


def formula_key(text: str) -> str:
    """A canonical form of the formula in ``text`` for deduplication.

    The formula is the run of words from the first to the last one holding math (operators,
    digits, brackets such as ``|ψ⟩``), plus the word before it when the run starts with an operator
    (``E`` in ``E = mc^2``) and the word after it when the run ends with one. Case, spacing, brackets, ``^`` and LaTeX commands do not matter;
    superscript digits count as digits (``mc²`` = ``mc^2``).
    """
    words = unicodedata.normalize("NFKC", text).casefold().split()  # NFKC turns ² into 2
    mathy = [i for i, w in enumerate(words) if _MATHY.search(w)]
    if mathy:
        start, end = mathy[0], mathy[-1]
        if start > 0 and _OPERATOR_START.match(words[start]):
            start -= 1
        if end < len(words) - 1 and _OPERATOR_END.search(words[end]):
            end += 1
        words = words[start : end + 1]
    t = re.sub(r"\\[a-z]+", "", " ".join(words))
    t = re.sub(r"[\s{}()\[\]$|⟨⟩<>^]", "", t)
    return re.sub(r"[^\w=+\-*/.]", "", t).strip(".")


def _keyword_tags(sentence: str, n: int = 2) -> list[str]:
    return [t for t in keyword_terms(sentence) if len(t) > 2 and not t.isdigit()][:n]


def extract_key_memories(text: str, *, from_user: bool = True, limit: int = 5) -> list[RuleMemory]:
    """Key memories in ``text``. Preferences, profile facts and notes only count when the user
    said them (``from_user``); formulas and conclusions count from anyone."""
    out: list[RuleMemory] = []
    seen: set[str] = set()
    for s in split_sentences(text or ""):
        if len(out) >= limit:
            break
        mem: RuleMemory | None = None
        if _FORMULA.search(s):
            mem = RuleMemory(s, ["formula"], pinned=True, packable=False)
        elif from_user and _NOTE.search(s):
            mem = RuleMemory(s, ["note"], pinned=True)
        elif from_user and _PROFILE.search(s):
            mem = RuleMemory(s, ["profile"])
        elif from_user and _PREF.search(s):
            mem = RuleMemory(s, ["preference"])
        elif _CONCLUSION.search(s):
            mem = RuleMemory(s, ["conclusion"])
        if mem is None:
            continue
        key = s.casefold()
        if key in seen:
            continue
        seen.add(key)
        mem.tags += [t for t in _keyword_tags(s) if t not in mem.tags]
        out.append(mem)
    return out
