"""The LLM planner: a model decides what to load, pack, extract and query, checked before use.

The prompt is built from the bounded :class:`~deepcontext.dialogue.plan.PlanRequest` only (never
above ``max_prompt_chars``, whatever the graph's size). The answer's JSON is checked by
:func:`~deepcontext.dialogue.plan.validate_plan` against the ids the prompt showed; a rejected
answer is sent back once with the error; if that fails too, or the model cannot be reached, the
``fallback`` planner (the offline one by default) plans the round. ``last_outcome`` tells what
happened. ``llm`` is a deepcontext :class:`~deepcontext.llm.LLM` or anything with the seed's async
``fetch``; the prompts live in :mod:`deepcontext.llm.prompts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deepcontext.dialogue.agent import ask
from deepcontext.dialogue.offline_planner import OfflinePlanner
from deepcontext.dialogue.plan import (
    ContextPlan,
    PlanCandidate,
    Planner,
    PlanRequest,
    validate_plan,
)
from deepcontext.errors import (
    ConfigurationError,
    LLMError,
    LLMResponseError,
    ValidationError,
)

__all__ = ["LLMPlanner", "PlanOutcome", "plan_prompt"]

logger = logging.getLogger("deepcontext.dialogue")

#: characters of the new message / the last reply / one key memory shown to the planner
MESSAGE_CHARS = 2000
LAST_REPLY_CHARS = 400
MEMORY_CHARS = 200
#: key memories shown (pinned first) and chain ids listed
MAX_MEMORIES = 12
CHAIN_IDS = 12


@dataclass(slots=True)
class PlanOutcome:
    """What the last :meth:`LLMPlanner.plan` call did."""

    #: model calls made (0, 1 or 2)
    attempts: int = 0
    #: why each rejected answer (or failed call) was refused
    errors: list[str] = field(default_factory=list)
    #: True when the fallback planner made the plan
    fallback: bool = False
    #: size of the planning prompt (system + user message), in characters
    prompt_chars: int = 0
    #: the node ids the prompt showed (the ones a plan may cite)
    shown_ids: list[int] = field(default_factory=list)


def _clip(text: str, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _candidate_line(c: PlanCandidate) -> str:
    flags = []
    if c.on_chain:
        flags.append("on chain")
    if c.is_summary:
        flags.append(f"summary of {c.summarized_ids}" if c.summarized_ids else "summary")
    head = f"- [{c.id}] parents {c.parent_ids}" + (f" ({', '.join(flags)})" if flags else "")
    if c.is_summary:
        return f"{head}\n  Summary: {c.assistant}"
    parts = [f"  User: {c.user}"] if c.user else []
    if c.assistant:
        parts.append(f"  Assistant: {c.assistant}")
    return "\n".join([head, *parts])


def plan_prompt(request: PlanRequest, *, max_chars: int = 12_000) -> tuple[str, list[int]]:
    """The user message of the planning prompt and the node ids it shows.

    Its size depends on the request's bounded parts only (see the module docstring); when it would
    exceed ``max_chars``, the lowest-scored candidates that are not on the chain are left out.
    """
    chain = request.chain
    over = request.chain_length > request.max_context_nodes
    tail = chain[-CHAIN_IDS:]
    head = [
        "New message:",
        _clip(request.message, MESSAGE_CHARS),
        "",
        f"Continues from (anchors): {request.anchor_ids or 'nothing: a new conversation'}",
        f"Current chain: {request.chain_length} nodes; budget {request.max_context_nodes} nodes"
        + (" (over budget: consider packing the first anchor)" if over else " (within budget: pack nothing)"),
    ]
    if tail:
        head.append(("Last chain ids: ... → " if len(chain) > len(tail) else "Chain ids: ") + " → ".join(map(str, tail)))
    memories = sorted(request.memories, key=lambda m: (not m.pinned, -m.id))[:MAX_MEMORIES]
    tail_lines: list[str] = []
    if memories:
        tail_lines += ["", "Key memories already stored:"]
        for m in memories:
            tags = f" [{', '.join(sorted(m.tags))}]" if m.tags else ""
            tail_lines.append(f"- {'(pinned) ' if m.pinned else ''}{_clip(m.content, MEMORY_CHARS)}{tags}")
    if request.last_reply:
        tail_lines += ["", f"Last assistant reply: {_clip(request.last_reply, LAST_REPLY_CHARS)}"]

    candidates = list(request.candidates)
    ranked_off_chain = sorted((c for c in candidates if not c.on_chain), key=lambda c: (c.score, c.id))
    while True:
        lines = [*head, "", "Candidate nodes (id, parents, excerpt):"]
        lines += [_candidate_line(c) for c in candidates] or ["(none)"]
        text = "\n".join([*lines, *tail_lines])
        if len(text) <= max_chars or not ranked_off_chain:
            break
        drop = ranked_off_chain.pop(0)
        candidates = [c for c in candidates if c.id != drop.id]
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    shown = list(dict.fromkeys([*request.anchor_ids, *tail, *(c.id for c in candidates)]))
    return text, shown


class LLMPlanner:
    """A :class:`~deepcontext.dialogue.plan.Planner` asking a model, with validation, one retry and
    a safe fallback (see the module docstring)."""

    def __init__(
        self,
        llm: Any,
        *,
        fallback: Planner | None = None,
        max_prompt_chars: int = 12_000,
        max_tokens: int = 1024,
        timeout: float | None = None,
    ) -> None:
        if llm is None or not (hasattr(llm, "complete") or hasattr(llm, "fetch") or hasattr(llm, "chat")):
            raise ConfigurationError("LLMPlanner needs a deepcontext LLM or an object with an async fetch()")
        if max_prompt_chars < 1000:
            raise ValidationError("max_prompt_chars must be at least 1000", field="max_prompt_chars")
        self.llm = llm
        self.fallback: Planner = fallback or OfflinePlanner()
        self.max_prompt_chars = max_prompt_chars
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.last_outcome = PlanOutcome()

    @property
    def last_error(self) -> str | None:
        """Why the last plan came from the fallback planner (None when the model's plan was used)."""
        o = self.last_outcome
        return "; ".join(o.errors) if o.fallback and o.errors else None

    async def plan(self, request: PlanRequest) -> ContextPlan:
        """Ask the model; validate; retry once with the error; else the fallback planner's plan."""
        from deepcontext.llm import prompts

        user, shown = plan_prompt(request, max_chars=self.max_prompt_chars)
        allowed = set(shown) | set(request.chain)
        system = prompts.PLAN_SYSTEM + "\n\n" + prompts.json_instructions(_plan_schema())
        outcome = PlanOutcome(prompt_chars=len(system) + len(user), shown_ids=shown)
        self.last_outcome = outcome
        messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        for attempt in (1, 2):
            outcome.attempts = attempt
            try:
                text = await self._call(messages)
            except LLMError as exc:
                outcome.errors.append(f"the model could not be reached: {exc}")
                break
            try:
                return validate_plan(_json_of(text), allowed)
            except (ValidationError, LLMResponseError) as exc:
                error = str(exc)
                outcome.errors.append(error)
                logger.info("LLM plan rejected (attempt %d): %s", attempt, error)
                messages += [
                    {"role": "assistant", "content": _clip(text, 4000) or "(empty answer)"},
                    {"role": "user", "content": prompts.repair_message(error + f". Allowed node ids: {sorted(allowed)}")},
                ]
        outcome.fallback = True
        logger.warning("LLM planner fell back to %s: %s", type(self.fallback).__name__, "; ".join(outcome.errors))
        plan = await self.fallback.plan(request)
        reason = f"fallback ({type(self.fallback).__name__}) after: {outcome.errors[-1] if outcome.errors else 'no answer'}"
        return plan.model_copy(update={"reasoning": f"{reason}; {plan.reasoning}" if plan.reasoning else reason})

    async def _call(self, messages: Sequence[dict[str, str]]) -> str:
        from deepcontext.llm.client import LLM
        from deepcontext.llm.messages import ChatRequest, JSONFormat

        if isinstance(self.llm, LLM):
            request = ChatRequest.create(
                messages,
                temperature=0.0,
                max_tokens=self.max_tokens,
                timeout=self.timeout,
                response_format=JSONFormat(name="ContextPlan", schema=_plan_schema()),
            )
            return (await self.llm.complete(request)).text
        return await ask(
            self.llm,
            messages[-1]["content"],
            system_prompt=messages[0]["content"],
            temperature=0.0,
            max_tokens=self.max_tokens,
            prev_messages=list(messages[1:-1]),
        )


def _json_of(text: str) -> Any:
    from deepcontext.llm.structured import extract_json

    return extract_json(text)


_SCHEMA: dict[str, Any] | None = None


def _plan_schema() -> dict[str, Any]:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = ContextPlan.model_json_schema()
    return _SCHEMA
