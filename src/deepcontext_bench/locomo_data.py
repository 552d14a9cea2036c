"""Loading LoCoMo-format files (the public benchmark's ``locomo10.json`` shape) with its quirks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["CATEGORIES", "Conversation", "Question", "Turn", "load", "parse_session_date"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    said_at: datetime


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]
    answer: Any = None


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: list[tuple[int, datetime, list[Turn]]]
    questions: list[Question] = field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        return [t for _, _, ts in self.sessions for t in ts]


def parse_session_date(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    v = " ".join(value.replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M%p on %d %B %Y", "%H:%M on %d %B %Y"):
        try:
            return datetime.strptime(v, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unrecognised session date {value!r}")


def normalise_evidence(raw: Any, valid: set[str]) -> list[str]:
    """Every D<s>:<t> token of the evidence strings, leading zeros dropped, unknown ids removed."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for s, t in _DIA.findall(str(item)):
            dia = f"D{int(s)}:{int(t)}"
            if dia in valid and dia not in out:
                out.append(dia)
    return out


def _turn_text(t: dict[str, Any]) -> str:
    text = str(t.get("text", "")).strip()
    caption = t.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]" if text else f"[shares a photo: {caption}]"
    return text


def load(path: str | Path) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError("a LoCoMo file is a JSON list of samples")
    out: list[Conversation] = []
    for sample in data:
        conv = sample["conversation"]
        sessions = []
        nums = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list))
        for n in nums:
            date = parse_session_date(conv[f"session_{n}_date_time"])
            turns = []
            for i, t in enumerate(conv[f"session_{n}"]):
                text = _turn_text(t)
                if not text:
                    continue
                m = _DIA.fullmatch(str(t["dia_id"]))
                dia = f"D{int(m.group(1))}:{int(m.group(2))}" if m else str(t["dia_id"])
                turns.append(Turn(dia_id=dia, speaker=str(t["speaker"]), text=text, said_at=date + timedelta(seconds=i)))
            sessions.append((n, date, turns))
        c = Conversation(sample_id=str(sample["sample_id"]), speakers=(conv["speaker_a"], conv["speaker_b"]), sessions=sessions)
        valid = {t.dia_id for t in c.turns}
        for qa in sample.get("qa", []):
            ev = normalise_evidence(qa.get("evidence", []), valid)
            if ev:
                c.questions.append(
                    Question(
                        question=str(qa["question"]),
                        category=int(qa["category"]),
                        evidence=ev,
                        answer=qa.get("answer", qa.get("adversarial_answer")),
                    )
                )
        out.append(c)
    return out
