"""LLM classification behind the :class:`~deepcontext.extract.interface.Classifier` seam.

:class:`LLMClassifier` decides ADD / UPDATE / REPLACE / DELETE / NOOP for a batch of candidates in one
call; a decision naming a memory that was not shown for its candidate is rejected and replaced by the
offline rule (:func:`offline_decision`). It raises the :class:`~deepcontext.errors.LLMError` of a
failed call unless told to fall back, and never writes anything.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from pydantic import BaseModel

from deepcontext.errors import ConfigurationError, LLMError
from deepcontext.extract.interface import Classifier, Decision, ExistingMemory, ExtractedFact, ExtractionContext
from deepcontext.llm import prompts
from deepcontext.llm.client import LLM
from deepcontext.types import ToolAction

__all__ = ["ClassificationAnswer", "LLMClassifier", "offline_decision"]

logger = logging.getLogger("deepcontext.extract")


class _Decision(BaseModel):
    candidate: int
    action: str
    memory_id: int | None = None
    text: str | None = None
    reason: str | None = None


class ClassificationAnswer(BaseModel):
    """The JSON the classification prompt asks for."""

    decisions: list[_Decision]


def offline_decision(neighbours: list[ExistingMemory], threshold: float = 0.95, *, why: str = "") -> Decision:
    """The rule used without an LLM, or when an LLM decision is rejected: NOOP against the most
    similar neighbour if its similarity is at least ``threshold``, else ADD."""
    prefix = f"{why}; " if why else ""
    best = max(neighbours, key=lambda n: n.similarity, default=None)
    if best is not None and best.similarity >= threshold:
        return Decision(
            action=ToolAction.NOOP.value,
            memory_id=best.id,
            reason=f"{prefix}offline rule: NOOP (similarity {best.similarity:.3f} >= {threshold})",
        )
    return Decision(action=ToolAction.ADD.value, reason=f"{prefix}offline rule: ADD")


class LLMClassifier(Classifier):
    """ADD / UPDATE / REPLACE / DELETE / NOOP by an LLM, one call per batch of candidates.

    ``await classifier.classify(candidates, neighbours, context)`` returns one :class:`Decision` per
    candidate. Candidates without neighbours are ADDed without asking. A decision whose memory_id is
    not among the memories shown for its candidate, whose action is unknown, an UPDATE without text or
    a missing decision is replaced by :func:`offline_decision`, with the rejection in its ``reason``.
    ``on_error="rules"`` applies the offline rule to the whole batch when the LLM call fails, instead
    of raising.
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        dedup_threshold: float = 0.95,
        max_candidates_per_call: int = 40,
        on_error: Literal["raise", "rules"] = "raise",
        timeout: float | None = None,
    ) -> None:
        if not isinstance(llm, LLM):
            raise ConfigurationError("LLMClassifier needs an LLM (see deepcontext.llm.build_llm)")
        if on_error not in ("raise", "rules"):
            raise ConfigurationError("on_error must be 'raise' or 'rules'")
        self.llm = llm
        self.dedup_threshold = dedup_threshold
        self.max_candidates_per_call = max(1, max_candidates_per_call)
        self.on_error = on_error
        self.timeout = timeout
        #: decisions rejected since this classifier was built
        self.rejected_total = 0

    def _prompt(
        self,
        asked: list[int],
        candidates: list[ExtractedFact],
        neighbours: list[list[ExistingMemory]],
        context: ExtractionContext,
    ) -> list[dict[str, str]]:
        blocks = [f"Current time: {prompts.format_time(context.now)}"]
        for i in asked:
            c = candidates[i]
            when = f", about {prompts.format_time(c.occurred_at)}" if c.occurred_at else ""
            lines = [f'Candidate {i} ({c.memory_type.value}{when}): "{c.text}"', f"Memories shown for candidate {i}:"]
            for n in neighbours[i]:
                said = f", said {prompts.format_time(n.said_at)}" if n.said_at else ""
                lines.append(f'  - id {n.id} (similarity {n.similarity:.2f}{said}): "{n.text}"')
            blocks.append("\n".join(lines))
        return [
            {"role": "system", "content": prompts.CLASSIFY_SYSTEM},
            {"role": "user", "content": "\n\n".join(blocks)},
        ]

    async def classify(
        self,
        candidates: list[ExtractedFact],
        neighbours: list[list[ExistingMemory]],
        context: ExtractionContext,
    ) -> list[Decision]:
        """One decision per candidate, in order."""
        if len(neighbours) != len(candidates):
            from deepcontext.errors import ValidationError

            raise ValidationError("neighbours must have one list per candidate", field="neighbours")
        decisions: list[Decision | None] = [None] * len(candidates)
        asked = [i for i, ns in enumerate(neighbours) if ns]
        for i, ns in enumerate(neighbours):
            if not ns:
                decisions[i] = Decision(action=ToolAction.ADD.value, reason="no similar memory")
        batches = [asked[k : k + self.max_candidates_per_call] for k in range(0, len(asked), self.max_candidates_per_call)]
        try:
            answers = await asyncio.gather(
                *(
                    self.llm.complete_json(
                        self._prompt(b, candidates, neighbours, context), ClassificationAnswer, timeout=self.timeout
                    )
                    for b in batches
                )
            )
        except LLMError as exc:
            if self.on_error == "raise":
                raise
            logger.warning("LLM classification failed (%s); offline rule for %d candidate(s)", exc, len(asked))
            for i in asked:
                decisions[i] = offline_decision(neighbours[i], self.dedup_threshold, why="LLM unavailable")
            return [d for d in decisions if d is not None]
        given: dict[int, _Decision] = {}
        for answer in answers:
            for d in answer.decisions:
                given.setdefault(d.candidate, d)
        rejected = 0
        for i in asked:
            decision, problem = self._check(given.get(i), candidates[i], neighbours[i])
            if decision is None:
                rejected += 1
                decision = offline_decision(neighbours[i], self.dedup_threshold, why=f"rejected LLM decision: {problem}")
            decisions[i] = decision
        if rejected:
            self.rejected_total += rejected
            logger.warning("LLM classification for user %s: %d decision(s) rejected", context.user_id, rejected)
        return [d for d in decisions if d is not None]

    @staticmethod
    def _check(d: _Decision | None, candidate: ExtractedFact, shown: list[ExistingMemory]) -> tuple[Decision | None, str]:
        """The decision if valid, else (None, what is wrong)."""
        if d is None:
            return None, "no decision was given for this candidate"
        action = d.action.strip().upper()
        if action not in ToolAction.__members__:
            return None, f"unknown action {d.action!r}"
        ids = {n.id for n in shown}
        reason = (d.reason or "").strip() or None
        if action == "ADD":
            return Decision(action=action, reason=reason), ""
        if d.memory_id is None:
            if action == "NOOP":
                best = max(shown, key=lambda n: n.similarity)
                return Decision(action=action, memory_id=best.id, reason=reason), ""
            return None, f"{action} without a memory id"
        if d.memory_id not in ids:
            return (
                None,
                f"{action} names memory id {d.memory_id}, which was not among the memories shown for this candidate",
            )
        text = (d.text or "").strip() or None
        if action == "UPDATE" and text is None:
            return None, "UPDATE without the new text"
        if action == "REPLACE" and text is None:
            text = candidate.text
        if action in ("DELETE", "NOOP"):
            text = None
        return Decision(action=action, memory_id=d.memory_id, text=text, reason=reason), ""
