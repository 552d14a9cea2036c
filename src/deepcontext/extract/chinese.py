"""Chinese sentences in the first person: 我 becomes the speaker, relative dates are written as
dates, everything else stays verbatim."""

from __future__ import annotations

import functools
import re
from typing import Any

from deepcontext.extract.batch import BatchAcc
from deepcontext.extract.entities import find_entities
from deepcontext.extract.interface import ExtractedFact, MessageIn
from deepcontext.extract.resolve import absolute_time_zh
from deepcontext.language.timeparse import resolve_time
from deepcontext.types import EntityType, MemoryType

__all__ = ["chinese_fact", "cjk_patterns"]


@functools.cache
def cjk_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """CJK, kana-or-hangul and Han character patterns, compiled on the first non-ASCII sentence
    (wide character ranges are slow to compile)."""
    return (
        re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"),
        re.compile(r"[\u3040-\u30ff\uac00-\ud7af]"),
        re.compile(r"[\u4e00-\u9fff]"),
    )


_ZH_QUESTION_RE = re.compile(r"[？?]|[吗呢吧][。！!\s]*$|什么|怎么|为什么|哪|谁|几[个点]|多少")
_ZH_FILLER_RE = re.compile(r"^(?:你好|您好|谢谢|多谢|哈哈|嘿嘿|再见|拜拜|好的|嗯|早上好|晚安|晚上好|没问题|不客气|对|是的|好吧)")
_ZH_ME_RE = re.compile(r"我(?!们)")
_ZH_PAST_RE = re.compile(r"了|过|昨天|前天|上周|上个|去年")
_ZH_FUTURE_RE = re.compile(r"会|要|将|明天|后天|下周|下个|明年|打算|计划")


def chinese_fact(msg: MessageIn, raw: str, speaker: str, known: dict[str, EntityType | None], acc: BatchAcc) -> None:
    """A Chinese sentence in the first person: 我 -> the speaker; everything else verbatim."""
    _, kana_hangul, han = cjk_patterns()
    if msg.role != "user" or kana_hangul.search(raw) or not han.search(raw):
        return
    s = raw.strip()
    if _ZH_QUESTION_RE.search(s) or _ZH_FILLER_RE.match(s) or not _ZH_ME_RE.search(s):
        return
    if len(han.findall(s)) < 5:
        return
    text = _ZH_ME_RE.sub(speaker, s)
    tense = "past" if _ZH_PAST_RE.search(s) else ("future" if _ZH_FUTURE_RE.search(s) else "present")
    when = resolve_time(s, msg.said_at, tense)
    mtype = MemoryType.EPISODIC if (when is not None or "了" in s) else MemoryType.SEMANTIC
    spans = find_entities(text, known, first_is_initial=False)
    index = msg.index
    names = [acc.entity(speaker, EntityType.PERSON, index)]
    names += [acc.entity(sp.name, sp.type, index, sp.attributes) for sp in spans]
    metadata: dict[str, Any] = {"speaker": speaker, "role": msg.role, "language": "zh"}
    if when is not None:
        metadata["time_expression"] = when.text
        metadata["time_granularity"] = when.granularity
    if when is not None and not when.explicit and when.text in text and (zh := absolute_time_zh(when)):
        k = text.find(when.text)
        sep = " " if k > 0 and text[k - 1].isascii() and text[k - 1].isalpha() else ""
        text = text[:k] + sep + zh + text[k + len(when.text) :]  # the memory says the date, not 昨天
    text = text.rstrip("。！!. ") + "。"
    acc.fact(
        ExtractedFact(
            text=text,
            memory_type=mtype,
            importance=0.5,
            confidence=0.8,
            entities=list(dict.fromkeys(names)),
            source_indices=[index],
            occurred_at=when.when if when is not None else None,
            metadata=metadata,
        )
    )
