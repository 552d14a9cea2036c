"""Fitting candidates into a token budget: shares first, then the leftovers, deterministically.

Each part brings its candidates in priority order; a candidate costs its text's tokens and a part's
header is charged with its first item. In the order pinned, conversation, memories, tiers: (1) each
part takes what fits in ``share x budget``, skipping what does not (the conversation stays a
contiguous run of the newest nodes); (2) each takes more from what the others left, except the
allotment of a still-empty part; (3) a part still empty because its first candidate is too large
gets it clipped (``clipped``) when :data:`MIN_CLIP_TOKENS` fit; (4) parts take more with whatever
is left. The rest is left out for ``budget``, or ``duplicate`` when a part's check refuses it. The
result never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deepcontext.context.tokens import TokenCounter

__all__ = ["FILL_ORDER", "MIN_CLIP_TOKENS", "Candidate", "PackResult", "PartSpec", "pack"]

#: the order in which parts take their share, and then the leftovers
FILL_ORDER: tuple[str, ...] = ("pinned", "conversation", "memories", "tiers")
#: the smallest room (tokens, beyond the header) worth clipping a candidate into
MIN_CLIP_TOKENS = 16


@dataclass
class Candidate:
    """Something that may go into the context."""

    part: str
    id: str
    #: as it would appear in the text (without the trailing line break)
    text: str
    score: float | None
    why: str
    #: rendering position within the part (lower first)
    order: tuple[Any, ...] = ()
    #: extra fields of the reported item (memory_id, said_at, tier, key, node_id, turn_ids...)
    meta: dict[str, Any] = field(default_factory=dict)
    #: cost: tokens of ``text + "\n"`` (set by :func:`pack`)
    tokens: int = 0
    clipped: bool = False


@dataclass
class PartSpec:
    """A part's header and candidates (priority order)."""

    name: str
    title: str
    candidates: list[Candidate]
    #: stop at the first candidate that does not fit (keeps a contiguous run)
    contiguous: bool = False
    #: why a candidate must not be shown, given what is chosen so far (None: it may)
    duplicate: Callable[[Candidate, dict[str, list[Candidate]]], str | None] | None = None
    header_tokens: int = 0


@dataclass
class PackResult:
    chosen: dict[str, list[Candidate]]
    #: (candidate, cause, why)
    left_out: list[tuple[Candidate, str, str]]
    allotted: dict[str, int]
    used: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.used.values())


class _State:
    def __init__(self, spec: PartSpec) -> None:
        self.spec = spec
        self.chosen: list[Candidate] = []
        self.pending: list[Candidate] = list(spec.candidates)
        self.duplicates: list[tuple[Candidate, str]] = []
        self.used = 0
        #: set once a contiguous part was clipped: nothing may follow it
        self.stopped = False

    def cost(self, c: Candidate) -> int:
        return c.tokens + (0 if self.chosen else self.spec.header_tokens)

    def fill(self, room: int, chosen_by_part: dict[str, list[Candidate]]) -> None:
        """Take pending candidates while ``self.used`` stays within ``room``."""
        keep: list[Candidate] = []
        blocked = self.stopped
        for i, c in enumerate(self.pending):
            if blocked:
                keep.extend(self.pending[i:])
                break
            why = self.spec.duplicate(c, chosen_by_part) if self.spec.duplicate else None
            if why is not None:
                self.duplicates.append((c, why))
                continue
            cost = self.cost(c)
            if self.used + cost <= room:
                self.chosen.append(c)
                self.used += cost
            else:
                keep.append(c)
                blocked = self.spec.contiguous
        self.pending = keep


def pack(parts: list[PartSpec], budget: int, shares: dict[str, float], counter: TokenCounter) -> PackResult:
    """Choose candidates of ``parts`` within ``budget`` tokens (see the module docstring)."""
    for spec in parts:
        for c in spec.candidates:
            c.tokens = counter.count(c.text + "\n")
    states = {s.name: _State(s) for s in parts}
    order = [p for p in FILL_ORDER if p in states] + [p for p in states if p not in FILL_ORDER]
    allotted = {p: int(budget * shares.get(p, 0.0)) for p in states}
    chosen = {p: states[p].chosen for p in states}

    def total() -> int:
        return sum(s.used for s in states.values())

    def starving(q: str) -> bool:  # empty, with candidates, and a share of its own
        st = states[q]
        return not st.chosen and bool(st.pending) and allotted[q] > 0 and not st.stopped

    # 1. shares
    for p in order:
        st = states[p]
        st.fill(min(allotted[p], st.used + budget - total()), chosen)
    # 2. leftovers, keeping the share of every part still empty (it may need clipping)
    for p in order:
        st = states[p]
        reserved = sum(allotted[q] for q in order if q != p and starving(q))
        st.fill(st.used + budget - total() - reserved, chosen)
    # 3. clipping: a part still empty because its first candidate is larger than its share
    for p in order:
        st = states[p]
        if not starving(p):
            continue
        first = st.pending[0]
        room = min(allotted[p], budget - total()) - st.spec.header_tokens
        if room < MIN_CLIP_TOKENS:
            continue
        cut = counter.clip(first.text, room)
        if cut is None:
            continue
        cost = counter.count(cut + "\n")
        if cost > room:
            continue
        first.text, first.tokens, first.clipped = cut, cost, cut != first.text
        st.pending.pop(0)
        st.chosen.append(first)
        st.used += cost + st.spec.header_tokens
        st.stopped = st.spec.contiguous
    # 4. what clipping left over
    for p in order:
        st = states[p]
        st.fill(st.used + budget - total(), chosen)

    left: list[tuple[Candidate, str, str]] = []
    for st in states.values():
        left.extend((c, "duplicate", why) for c, why in st.duplicates)
        for c in st.pending:
            need = st.cost(c)
            left.append((c, "budget", f"did not fit: needs {need} tokens, {budget - total()} of {budget} left"))
    return PackResult(chosen=chosen, left_out=left, allotted=allotted, used={p: s.used for p, s in states.items()})
