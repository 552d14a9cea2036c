"""Extraction quality against a labelled set: per-fact precision and recall, memories that still need
their conversation, grammar defects.

The set (``deepcontext_bench/data/extraction.jsonl``, written for this project) holds conversations,
one JSON object a line: ``id``, ``topic``, ``said_at`` (when the turns were said), ``user_name`` (the
user's display name), ``turns`` (``role``, ``content``) and ``facts``: what a careful person would note,
each as the turn it comes from and its *keys*, the words and values a memory must say to state it
(``["Jo", "Initech", "2025-06-16"]``; ``"a|b"`` accepts either).

Matching rule (entailment by key words and values, not exact strings): a memory *states* a fact when
every key is found in the memory's text: each word of a key, stemmed (Snowball English), appears
among the memory's stemmed words, in any order; keys in Chinese (or with digits and dashes, such as
dates) must appear as substrings. Per conversation, a memory is a true positive when it states at
least one of the conversation's facts; a fact is recalled when at least one memory states it.
Precision = true-positive memories / memories; recall = recalled facts / facts. Unresolved pronouns and
relative dates and grammar defects come from :mod:`deepcontext.extract.grammar`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from deepcontext.errors import ValidationError
from deepcontext.extract.grammar import defects, unresolved
from deepcontext.extract.interface import ExtractionContext, Extractor, MessageIn

__all__ = ["ExtractionReport", "load_gold", "run_extraction", "states"]

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_LITERAL_RE = re.compile(r"[\u4e00-\u9fff]|\d[-:]\d|\d{4}-\d\d")


def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


_CJK_RE = re.compile(r"([\u4e00-\u9fff])")


def _stems(text: str, stem: Any) -> set[str]:
    text = _CJK_RE.sub(r" \1 ", text)  # a Chinese character is a word of its own
    return set(stem.stemWords([w.lower() for w in _WORD_RE.findall(text)]))


def states(memory: str, keys: Sequence[str], stem: Any | None = None) -> bool:
    """Whether ``memory`` states a fact with these keys (the matching rule in the module docstring)."""
    stem = stem or _stemmer()
    have = _stems(memory, stem)
    low = memory.lower()
    for key in keys:
        ok = False
        for alt in key.split("|"):
            alt = alt.strip()
            if not alt:
                continue
            if _LITERAL_RE.search(alt):
                ok = alt.lower() in low
            else:
                ok = _stems(alt, stem) <= have
            if ok:
                break
        if not ok:
            return False
    return True


def load_gold(path: Path | None = None) -> list[dict[str, Any]]:
    """The labelled conversations (the packaged set by default)."""
    if path is None:
        text = resources.files("deepcontext_bench").joinpath("data/extraction.jsonl").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            conv = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"line {n}: not JSON ({exc.msg})") from exc
        if not isinstance(conv, dict) or not isinstance(conv.get("turns"), list) or not isinstance(conv.get("facts"), list):
            raise ValidationError(f"line {n}: a conversation needs 'turns' and 'facts'")
        out.append(conv)
    return out


@dataclass
class ExtractionReport:
    conversations: int = 0
    turns: int = 0
    facts: int = 0
    memories: int = 0
    true_positive_memories: int = 0
    recalled_facts: int = 0
    unresolved_pronouns: int = 0
    unresolved_dates: int = 0
    grammar_defects: int = 0
    seconds: float = 0.0
    by_topic: dict[str, dict[str, float]] = field(default_factory=dict)
    #: memories that state no fact, facts no memory states, unresolved and defective memories
    misses: dict[str, list[str]] = field(default_factory=lambda: {"extra": [], "missed": [], "unresolved": [], "grammar": []})

    @property
    def precision(self) -> float:
        return self.true_positive_memories / self.memories if self.memories else 1.0

    @property
    def recall(self) -> float:
        return self.recalled_facts / self.facts if self.facts else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations,
            "turns": self.turns,
            "facts": self.facts,
            "memories": self.memories,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "unresolved_pronouns": self.unresolved_pronouns,
            "unresolved_dates": self.unresolved_dates,
            "grammar_defects": self.grammar_defects,
            "seconds": round(self.seconds, 3),
            "by_topic": self.by_topic,
            "misses": self.misses,
        }


def run_extraction(extractor: Extractor, gold: list[dict[str, Any]]) -> ExtractionReport:
    """Run ``extractor`` (its synchronous path when it has one) over each labelled conversation and score it."""
    import asyncio

    stem = _stemmer()
    rep = ExtractionReport()
    topics: dict[str, list[int]] = {}
    for conv in gold:
        said = datetime.fromisoformat(conv["said_at"])
        msgs = [
            MessageIn(index=i, role=t["role"], content=t["content"], said_at=said, name=t.get("name"))
            for i, t in enumerate(conv["turns"])
        ]
        ctx = ExtractionContext(
            user_id="bench", conversation_id=str(conv.get("id", "")), now=said, user_name=conv.get("user_name")
        )
        t0 = time.perf_counter()
        sync = getattr(extractor, "extract_sync", None)
        result = sync(msgs, ctx) if sync is not None else asyncio.run(extractor.extract(msgs, ctx))
        rep.seconds += time.perf_counter() - t0
        texts = [f.text for f in result.facts]
        facts = [f["keys"] for f in conv["facts"]]
        rep.conversations += 1
        rep.turns += len(msgs)
        rep.facts += len(facts)
        rep.memories += len(texts)
        tp = [t for t in texts if any(states(t, k, stem) for k in facts)]
        recalled = [k for k in facts if any(states(t, k, stem) for t in texts)]
        rep.true_positive_memories += len(tp)
        rep.recalled_facts += len(recalled)
        cid = conv.get("id", "?")
        rep.misses["extra"] += [f"{cid}: {t}" for t in texts if t not in tp]
        rep.misses["missed"] += [f"{cid}: {'; '.join(k)}" for k in facts if k not in recalled]
        for t in texts:
            u = unresolved(t)
            rep.unresolved_pronouns += "pronoun" in u
            rep.unresolved_dates += "relative-date" in u
            if u:
                rep.misses["unresolved"].append(f"{cid}: {t} ({', '.join(u)})")
            d = defects(t)
            rep.grammar_defects += len(d)
            if d:
                rep.misses["grammar"].append(f"{cid}: {t} ({'; '.join(d)})")
        acc = topics.setdefault(str(conv.get("topic", "other")), [0, 0, 0, 0])
        acc[0] += len(tp)
        acc[1] += len(texts)
        acc[2] += len(recalled)
        acc[3] += len(facts)
    rep.by_topic = {
        t: {
            "precision": round(a[0] / a[1], 4) if a[1] else 1.0,
            "recall": round(a[2] / a[3], 4) if a[3] else 1.0,
            "facts": a[3],
            "memories": a[1],
        }
        for t, a in sorted(topics.items())
    }
    return rep
