"""What the chat sends the LLM for one message, and what it shows of it (``context``).

:func:`build_turn` asks the context builder for the message within the chat's token budget; the
LLM receives a system message (system prompt, then the context) and the user's message. After
``branch <node>`` the conversation's path ends at that node, so it is packed here, within the
conversation's share of the budget, newest rounds first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepcontext.context.results import ContextResult
    from deepcontext.types import Provenance

__all__ = ["DEFAULT_SYSTEM_PROMPT", "TurnContext", "UsedMemory", "build_turn"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a long-term memory of the user. Below is what you remember that "
    "bears on the user's next message: memories (with the dates they were said) and the conversation so far. "
    "Use them when they are relevant, say so when you do not know, and never invent memories. Answer concisely."
)


@dataclass(slots=True)
class UsedMemory:
    """A memory that went into the context."""

    memory_id: int
    #: ``pinned`` or ``memories``
    part: str
    score: float | None
    text: str
    why: str
    #: the turns it was derived from (turn id, conversation, speaker, time said)
    cites: list[Provenance] = field(default_factory=list)


@dataclass(slots=True)
class TurnContext:
    """The context of one message: what the LLM receives, and how it was put together."""

    query: str
    result: ContextResult
    #: exactly what an LLM receives (system message with the context, then the user's message)
    messages: list[dict[str, str]]
    memories: list[UsedMemory]
    #: the conversation nodes shown, oldest first
    path_node_ids: list[int]
    #: the node the message continues from when it branches (``branch <node>``), else None
    branch_from: int | None = None

    @property
    def text(self) -> str:
        return self.result.text


async def build_turn(
    ctx: Any,
    message: str,
    user_id: str,
    conversation_id: str,
    *,
    budget_tokens: int,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    branch_from: int | None = None,
) -> TurnContext:
    """The context for ``message`` (see the module docstring). A message longer than the
    ``max_query_chars`` setting is looked up by its beginning; the LLM still gets all of it."""
    query = message[: ctx.settings.max_query_chars]
    if branch_from is None:
        result = await ctx.context(query, user_id, conversation_id, budget_tokens=budget_tokens)
    else:
        result = await _branch_context(ctx, query, user_id, conversation_id, budget_tokens, branch_from)
    system = system_prompt if not result.text else f"{system_prompt}\n\n{result.text}"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": message}]
    used = [i for p in result.parts if p.name in ("pinned", "memories") for i in p.items if i.memory_id is not None]
    sources: dict[int, list[Provenance]] = {}
    if used:
        found = await asyncio.to_thread(ctx.store.get_memories, user_id, [i.memory_id for i in used])
        sources = {m.id: list(m.sources) for m in found}
    memories = [
        UsedMemory(
            memory_id=int(i.memory_id),  # type: ignore[arg-type]
            part=i.part,
            score=i.score,
            text=i.text,
            why=i.why,
            cites=sources.get(int(i.memory_id), []),  # type: ignore[arg-type]
        )
        for i in used
    ]
    path = [int(i.node_id) for i in result.part("conversation").items if i.node_id is not None]
    return TurnContext(
        query=message, result=result, messages=messages, memories=memories, path_node_ids=path, branch_from=branch_from
    )


async def _branch_context(ctx: Any, message: str, user_id: str, conversation_id: str, budget: int, node_id: int) -> ContextResult:
    """The builder's pinned, memories and tiers parts, plus the path to ``node_id`` in the
    conversation's share of the budget."""
    from deepcontext.context import (
        ContextItem,
        ContextPart,
        ContextShares,
        TokenCounter,
    )
    from deepcontext.context.build import TITLES
    from deepcontext.context.results import DEFAULT_CONVERSATION_NODES

    share = ContextShares().normalised()["conversation"]
    allotted = int(budget * share)
    counter = TokenCounter(ctx.embedder)
    path = await ctx.conversation_path(user_id, conversation_id, node_id=node_id, max_nodes=DEFAULT_CONVERSATION_NODES)
    header = f"\n## {TITLES['conversation']}\n"
    header_tokens = counter.count(header)
    chosen: list[ContextItem] = []
    used = header_tokens
    for age, node in enumerate(reversed(path.nodes), start=1):  # newest first, a contiguous run
        lines = [
            f"(summary of earlier turns) {content.strip()}" if role == "summary" else f"{role}: {content.strip()}"
            for role, content in node.messages
        ]
        if not lines:
            continue
        text = "\n".join(lines)
        cost = counter.count(text + "\n")
        if used + cost > allotted:
            break
        used += cost
        kind = "summary of earlier rounds" if node.is_summary else "round"
        chosen.append(
            ContextItem(
                part="conversation",
                id=f"node:{node.id}",
                text=text,
                tokens=cost,
                why=f"conversation path to the branch point [{node_id}]: {kind}, {age} from the end",
                node_id=node.id,
                turn_ids=list(node.turn_ids),
            )
        )
    chosen.reverse()
    conv_tokens = used if chosen else 0
    rest = await ctx.context(message, user_id, None, budget_tokens=max(1, budget - conv_tokens), shares={"conversation": 0})
    part = ContextPart(
        name="conversation",
        title=TITLES["conversation"],
        share=round(share, 6),
        allotted_tokens=allotted,
        tokens=conv_tokens,
        header_tokens=header_tokens if chosen else 0,
        items=chosen,
        left_out={"budget": len(path.nodes) - len(chosen)} if len(path.nodes) > len(chosen) else {},
    )
    text = rest.text
    if chosen:
        block = f"## {TITLES['conversation']}\n" + "\n".join(i.text for i in chosen)
        text = f"{text}\n\n{block}" if text else block
    parts = [part if p.name == "conversation" else p for p in rest.parts]
    return rest.model_copy(
        update={
            "conversation_id": conversation_id,
            "budget_tokens": budget,
            "total_tokens": rest.total_tokens + conv_tokens,
            "text_tokens": counter.count(text),
            "text": text,
            "parts": parts,
        }
    )
