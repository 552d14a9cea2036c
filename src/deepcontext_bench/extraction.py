"""Extraction quality against a labelled set: per-fact precision and recall, memories that still need
their conversation, grammar defects.

The set (``deepcontext_bench/data/extraction.jsonl``, written for this project) holds conversations,
one JSON object a line: ``id``, ``topic``, ``said_at`` (when the turns were said), ``user_name`` (the
user's display name), ``turns`` (``role``, ``content``) and ``facts``: what a careful person would note,
each as the turn it comes from and its *keys*, the words and values a memory must say to state it
(``["Jo", "Initech", "2025-06-16"]``; ``"a|b"`` accepts either) and, for facts whose person could
be mistaken, ``subject``: ``"user"`` or the word that names the other person (``"brother"``,
``"Jo"``).

Matching rule (entailment by key words and values, not exact strings): a memory *states* a fact when
every key is found in the memory's text: each word of a key, stemmed (Snowball English), appears
among the memory's stemmed words, in any order; keys in Chinese (or with digits and dashes, such as
dates) must appear as substrings. Per conversation, a memory is a true positive when it states at
least one of the conversation's facts; a fact is recalled when at least one memory states it.
Precision = true-positive memories / memories; recall = recalled facts / facts. Unresolved pronouns and
relative dates and grammar defects come from :mod:`deepcontext.extract.grammar`; possessive chains
(with a subject's own things named by its name) and glued episodes are also counted on their own.

A memory has the *wrong subject* when it says a labelled fact's values (its keys but the one naming
its subject) of another person of the conversation: a fact of the user's brother said of the user
("Lena moved to Utrecht" for "My brother moved to Utrecht"), or the user's fact said of someone
they named. Whom a memory is about is the person its sentence opens with.
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
from deepcontext.extract.replacements import subject_of
from deepcontext.language.unnamed import parsed

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


_LEAD_TIME_RE = re.compile(
    r"^(?:(?:On|In|Since|During|By|Last|This|Next)\s+)?(?:[\w-]+\s+){0,3}?(?:\d{4}(?:-\d\d){0,2}|"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|week|month|year|Yesterday|Today)\b,?\s+"
)


def _about(text: str) -> str:
    """Whom a memory is about, lower case: the person its sentence opens with ("user", "ana's brother")."""
    return subject_of(_LEAD_TIME_RE.sub("", parsed(text), count=1)).lower()


def _wrong_subject(text: str, conv: dict[str, Any], stem: Any) -> dict[str, Any] | None:
    """The labelled fact ``text`` says of another person of the conversation, if any (see the module
    docstring)."""
    me = {"user", str(conv.get("user_name") or "user").lower()}
    who = _about(text)
    if not who:
        return None
    others = {str(f["subject"]).lower() for f in conv["facts"] if f.get("subject") not in (None, "user")}
    about_me = who in me
    about = next((o for o in others if _stems(o, stem) <= _stems(who, stem)), None)
    for f in conv["facts"]:
        subject = f.get("subject")
        if subject is None:
            continue
        subject = str(subject).lower()
        values = [k for k in f["keys"] if not (_stems(k, stem) & (_stems(subject, stem) | me))]
        if not values or not states(text, values, stem):
            continue
        if (subject != "user" and about_me) or (subject == "user" and about is not None):
            return f
    return None


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
    possessive_chains: int = 0
    glued: int = 0
    wrong_subject: int = 0
    seconds: float = 0.0
    by_topic: dict[str, dict[str, float]] = field(default_factory=dict)
    #: memories that state no fact, facts no memory states, unresolved and defective memories
    misses: dict[str, list[str]] = field(
        default_factory=lambda: {"extra": [], "missed": [], "unresolved": [], "grammar": [], "wrong subject": []}
    )

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
            "possessive_chains": self.possessive_chains,
            "glued": self.glued,
            "wrong_subject": self.wrong_subject,
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
            rep.possessive_chains += sum(x.startswith(("possessive-chain", "self-possessive")) for x in d)
            rep.glued += "glued" in d
            if (fact := _wrong_subject(t, conv, stem)) is not None:
                rep.wrong_subject += 1
                rep.misses["wrong subject"].append(f"{cid}: {t} (about: {'; '.join(fact['keys'])})")
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
