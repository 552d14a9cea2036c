"""Fit when a change that names no old thing ("Switched to a Pixel 8") replaces a standing fact of
the user's ("I'm on an iPhone 12 at the moment"): the cosine, under the default embedder, between
the change and the most similar standing fact, at or above which that fact is replaced.

    python benchmarks/fit_switches.py        # prints the threshold for deepcontext.language.same_kind

``tests/bench/test_fit_switches.py`` checks that the shipped threshold is the one this fit chooses.

Data (written for the project): ``benchmarks/data/switches.jsonl``, each line a group of standing
statements, a later change and which statement it replaces (``null``: none, the change is of another
kind). Each statement is read by the rule extractor and the same functions the engine uses
(:func:`~deepcontext.extract.replacements.standing_thing`, :func:`~deepcontext.extract.replacements.switched_to`),
so the groups whose change the rules do not read are counted and left out.

The texts compared (the things alone, the facts, or the mean of both cosines) and the threshold are chosen
together by 5-fold cross-validation, maximising F0.5 on the held-out folds (precision counts twice:
a wrong replacement hides a true fact, a missed one leaves an old fact beside the new). The figures
printed are those out-of-fold decisions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from deepcontext.embed.minilm import MiniLMEmbedder
from deepcontext.extract.interface import ExtractionContext, MessageIn
from deepcontext.extract.replacements import ended_things, standing_thing, switched_to
from deepcontext.extract.rules import RuleExtractor

ROOT = Path(__file__).resolve().parent
THRESHOLDS = tuple(float(t) for t in np.round(np.arange(0.20, 0.80, 0.01), 3))
FOLDS = 5
BETA = 0.5
NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


def facts_of(extractor: RuleExtractor, text: str) -> list[str]:
    ctx = ExtractionContext(user_id="u", conversation_id="c", now=NOW)
    return [f.text for f in extractor.extract_sync([MessageIn(index=0, role="user", content=text, said_at=NOW)], ctx).facts]


def read_group(extractor: RuleExtractor, g: dict) -> dict | None:
    """The change's new thing and each standing statement's fact and thing, as the engine reads them."""
    change = [(f, s) for f in facts_of(extractor, g["change"]) if not ended_things(f) and (s := switched_to(f))]
    if not change:
        return None
    fact, switch = change[0]
    olds = []
    for i, text in enumerate(g["standing"]):
        for f in facts_of(extractor, text):
            thing = standing_thing(switch.subject, f)
            if thing:
                olds.append((i, f, thing))
                break
    return {"id": g["id"], "fact": fact, "new": switch.new, "olds": olds, "replaces": g["replaces"]}


def f_beta(tp: int, fp: int, fn: int) -> float:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return (1 + BETA**2) * p * r / (BETA**2 * p + r) if p + r else 0.0


def decide(best: list[tuple[int | None, float]], labels: list[int | None], t: float) -> tuple[int, int, int]:
    """(right replacements, wrong ones, missed ones) when the most similar standing thing is replaced at
    cosine ``t`` or above."""
    tp = fp = fn = 0
    for (i, sim), y in zip(best, labels, strict=True):
        said = i if i is not None and sim >= t else None
        tp += said is not None and said == y
        fp += said is not None and said != y
        fn += y is not None and said != y
    return tp, fp, fn


def fit(data: Path, report: Callable[[str], None] = print) -> tuple[str, float]:
    """The texts to compare and the threshold chosen for the groups of ``data`` (see the module)."""
    groups = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    extractor = RuleExtractor()
    read = [r for g in groups if (r := read_group(extractor, g)) is not None]
    found = sum(r["replaces"] is None or any(i == r["replaces"] for i, _, _ in r["olds"]) for r in read)
    report(f"{len(groups)} groups; the change read in {len(read)}; the replaced statement's thing read in {found} of those")
    emb = MiniLMEmbedder()

    def cos(a: list[str], b: list[str]) -> np.ndarray:
        return emb.embed(a) @ emb.embed(b).T if a and b else np.zeros((len(a), len(b)))

    variants: dict[str, list[tuple[int | None, float]]] = {}
    for name in ("things", "facts", "both"):
        best: list[tuple[int | None, float]] = []
        for r in read:
            if not r["olds"]:
                best.append((None, -1.0))
                continue
            things = cos([r["new"]], [t for _, _, t in r["olds"]])[0]
            facts = cos([r["fact"]], [f for _, f, _ in r["olds"]])[0]
            sims = {"things": things, "facts": facts, "both": (things + facts) / 2}[name]
            j = int(np.argmax(sims))
            best.append((r["olds"][j][0], float(sims[j])))
        variants[name] = best
    labels = [r["replaces"] for r in read]

    rng = np.random.default_rng(0)
    fold = rng.permutation(len(read)) % FOLDS
    scores = {}
    for name, best in variants.items():
        tp = fp = fn = 0
        chosen = []
        for k in range(FOLDS):
            train = [i for i in range(len(read)) if fold[i] != k]
            test = [i for i in range(len(read)) if fold[i] == k]
            t = max(THRESHOLDS, key=lambda t: f_beta(*decide([best[i] for i in train], [labels[i] for i in train], t)))
            chosen.append(t)
            a, b, c = decide([best[i] for i in test], [labels[i] for i in test], t)
            tp, fp, fn = tp + a, fp + b, fn + c
        full = max(THRESHOLDS, key=lambda t: f_beta(*decide(best, labels, t)))
        p, rcl = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
        scores[name] = (f_beta(tp, fp, fn), full)
        report(
            f"{name:7} out-of-fold F0.5 {f_beta(tp, fp, fn):.3f}, precision {p:.3f}, recall {rcl:.3f} "
            f"(right {tp}, wrong {fp}, missed {fn}); fold thresholds {chosen}; on all groups {full}"
        )
    name = max(scores, key=lambda n: scores[n][0])
    report(f"chosen: {name}, threshold {scores[name][1]}")
    return name, scores[name][1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "switches.jsonl")
    fit(ap.parse_args().data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
