"""The budget packer on its own: shares, leftovers, contiguity, clipping, never over budget."""

from __future__ import annotations

import random

from deepcontext.context.packing import MIN_CLIP_TOKENS, Candidate, PartSpec, pack
from deepcontext.context.tokens import TokenCounter
from deepcontext.embed import HashEmbedder

COUNTER = TokenCounter(HashEmbedder(64))  # the estimate: 1 token per 4 characters
SHARES = {"pinned": 0.15, "memories": 0.35, "tiers": 0.2, "conversation": 0.3}


def cand(part: str, i: int, chars: int) -> Candidate:
    text = (f"{part}{i} " + "x" * chars)[:chars] if chars > 0 else f"{part}{i}"
    return Candidate(part=part, id=f"{part}:{i}", text=text, score=None, why="test", order=(i,))


def specs(sizes: dict[str, list[int]], header: int = 3) -> list[PartSpec]:
    return [
        PartSpec(p, p, [cand(p, i, n) for i, n in enumerate(sizes.get(p, []))], contiguous=p == "conversation",
                 header_tokens=header)
        for p in ("pinned", "memories", "tiers", "conversation")
    ]  # fmt: skip


def test_the_estimate_counts_a_token_per_four_characters() -> None:
    assert COUNTER.count("") == 0
    assert COUNTER.count("abcd") == 1 and COUNTER.count("abcde") == 2
    assert COUNTER.description.startswith("estimate")


def test_shares_then_leftovers() -> None:
    # only memories: they get the whole budget through the leftovers
    res = pack(specs({"memories": [39] * 10}), 100, SHARES, COUNTER)  # 10 tokens each
    assert res.allotted["memories"] == 35
    assert len(res.chosen["memories"]) == 9  # 3 header + 9 x 10 = 93 <= 100
    assert res.total == 93 and res.used["memories"] == 93
    assert [c.id for c, cause, _ in res.left_out] == ["memories:9"]
    assert all(cause == "budget" for _, cause, _ in res.left_out)


def test_every_part_gets_its_share_before_leftovers() -> None:
    sizes = {p: [39] * 20 for p in ("pinned", "memories", "tiers", "conversation")}
    res = pack(specs(sizes), 200, SHARES, COUNTER)
    assert res.total <= 200
    for p, share in SHARES.items():
        # within its share at least as many items as fit in it
        assert len(res.chosen[p]) >= (int(200 * share) - 3) // 10, p
    assert sum(res.used.values()) == res.total


def test_a_big_item_is_skipped_for_smaller_ones_except_in_the_conversation() -> None:
    res = pack(specs({"memories": [400, 39, 39], "conversation": [39, 400, 39]}), 100, SHARES, COUNTER)
    assert [c.id for c in res.chosen["memories"]] == ["memories:1", "memories:2"]
    # the conversation is a contiguous run of the newest nodes: it stops at the big one
    assert [c.id for c in res.chosen["conversation"]] == ["conversation:0"]
    left = {c.id: cause for c, cause, _ in res.left_out}
    assert left == {"memories:0": "budget", "conversation:1": "budget", "conversation:2": "budget"}


def test_a_part_whose_first_item_is_too_big_gets_it_clipped_to_its_share() -> None:
    long_text = "word " * 400  # ~500 tokens
    parts = specs({"memories": [39] * 30})
    parts[3].candidates = [Candidate("conversation", "node:9", long_text.strip(), None, "newest", (1,)),
                           Candidate("conversation", "node:8", "older round", None, "older", (0,))]  # fmt: skip
    res = pack(parts, 300, SHARES, COUNTER)
    (first,) = res.chosen["conversation"]
    assert first.clipped and first.text.endswith(" …") and first.id == "node:9"
    assert res.used["conversation"] <= res.allotted["conversation"]
    assert res.used["conversation"] >= res.allotted["conversation"] - 3  # filled up to its share
    assert "node:8" in {c.id for c, _, _ in res.left_out}  # nothing older after a clipped node
    assert res.total <= 300


def test_an_item_that_fits_with_the_leftovers_is_not_clipped() -> None:
    res = pack(specs({"conversation": [1000]}), 400, SHARES, COUNTER)  # 251 tokens > share 120
    (only,) = res.chosen["conversation"]
    assert not only.clipped and res.total == 251 + 3


def test_no_clipping_into_a_tiny_room() -> None:
    res = pack(specs({"pinned": [400]}), 100, SHARES, COUNTER)  # share 15 - header 3 < 16
    assert 15 - 3 < MIN_CLIP_TOKENS
    assert res.chosen["pinned"] == [] or res.chosen["pinned"][0].tokens + 3 <= 100


def test_duplicates_are_left_out_with_their_reason() -> None:
    parts = specs({"pinned": [20], "memories": [20, 20]})
    parts[1].candidates[0].id = "pinned:0"  # the same thing as the pinned one
    parts[1].duplicate = lambda c, chosen: "shown" if any(p.id == c.id for p in chosen["pinned"]) else None
    res = pack(parts, 100, SHARES, COUNTER)
    assert [c.id for c in res.chosen["memories"]] == ["memories:1"]
    assert [(c.id, cause, why) for c, cause, why in res.left_out] == [("pinned:0", "duplicate", "shown")]


def test_random_inputs_never_exceed_the_budget() -> None:
    rng = random.Random(7)
    for _ in range(300):
        sizes = {p: [rng.randint(1, 600) for _ in range(rng.randint(0, 12))] for p in SHARES}
        budget = rng.randint(1, 800)
        header = rng.randint(0, 5)
        raw = {p: rng.random() for p in SHARES}
        shares = {p: v / sum(raw.values()) for p, v in raw.items()}
        res = pack(specs(sizes, header=header), budget, shares, COUNTER)
        assert res.total <= budget
        for p, chosen in res.chosen.items():  # a part's tokens: its header (if shown) and its items
            assert res.used[p] == (header if chosen else 0) + sum(c.tokens for c in chosen)
            assert all(c.tokens == COUNTER.count(c.text + "\n") for c in chosen)
        n_in = sum(len(v) for v in res.chosen.values())
        assert n_in + len(res.left_out) == sum(len(v) for v in sizes.values())  # each reported once
