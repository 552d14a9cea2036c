"""Fit the embedding models of :mod:`deepcontext.language.standing_model` on the labelled sentences.

    python benchmarks/fit_standing.py            # writes src/deepcontext/language/standing_model.npz

Data (written for the project, in careful and in chat English): ``benchmarks/data/standing-train.jsonl``
(``{"text", "kind"}``, kind one of the standing kinds or null) and
``benchmarks/data/requests-train.jsonl`` (``{"text", "request"}``). Statements are embedded as the
turn memories they become (``User: ...``), requests as the queries they are.

Every number is chosen by stratified 5-fold cross-validation: the regularisation ``C`` and the
probability threshold together, maximising F0.5 on the out-of-fold predictions (precision counts
twice: a false standing fact or request costs every later search a little, a missed one only the
searches that need it). The figures printed are those out-of-fold predictions.
Needs scikit-learn (the ``bench`` extra); the package reads the weights with numpy alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from deepcontext.embed.minilm import MiniLMEmbedder

ROOT = Path(__file__).resolve().parent
KINDS = ("", "allergy", "diet", "preference", "habit", "constraint", "instruction")
C_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
THRESHOLDS = tuple(np.round(np.arange(0.30, 0.96, 0.025), 3))
FOLDS = 5
BETA = 0.5


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def f_beta(tp: float, fp: float, fn: float) -> float:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return (1 + BETA**2) * p * r / (BETA**2 * p + r) if p + r else 0.0


def out_of_fold(x: np.ndarray, y: np.ndarray, c: float) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    proba = np.zeros((len(y), len(np.unique(y))))
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(x, y):
        clf = LogisticRegression(C=c, max_iter=5000).fit(x[train], y[train])
        proba[test] = clf.predict_proba(x[test])
    return proba


def kind_scores(proba: np.ndarray, y: np.ndarray, t: float) -> tuple[float, float, float]:
    """F0.5, precision and recall of 'states kind K' (a right kind counts, a wrong one is a miss)."""
    best = proba.argmax(axis=1)
    said = (best != 0) & (proba[np.arange(len(y)), best] >= t)
    tp = float(np.sum(said & (best == y)))
    fp = float(np.sum(said & (best != y)))
    fn = float(np.sum((y != 0) & ~(said & (best == y))))
    return f_beta(tp, fp, fn), tp / max(tp + fp, 1), tp / max(tp + fn, 1)


def fit(x: np.ndarray, y: np.ndarray, label: str) -> tuple[object, float]:
    from sklearn.linear_model import LogisticRegression

    best = (-1.0, 0.0, 0.0, 0.0, 0.0)
    for c in C_GRID:
        proba = out_of_fold(x, y, c)
        for t in THRESHOLDS:
            f, p, r = kind_scores(proba, y, t)
            if f > best[0]:
                best = (f, c, t, p, r)
    f, c, t, p, r = best
    print(f"{label}: C {c}, threshold {t}: out-of-fold F0.5 {f:.3f}, precision {p:.3f}, recall {r:.3f}")
    return LogisticRegression(C=c, max_iter=5000).fit(x, y), t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--standing", type=Path, default=ROOT / "data" / "standing-train.jsonl")
    ap.add_argument("--requests", type=Path, default=ROOT / "data" / "requests-train.jsonl")
    ap.add_argument("--out", type=Path, default=ROOT.parent / "src" / "deepcontext" / "language" / "standing_model.npz")
    args = ap.parse_args()

    emb = MiniLMEmbedder()
    st = read(args.standing)
    bad = sorted({str(r["kind"]) for r in st} - {k or "None" for k in KINDS})
    if bad:
        sys.exit(f"{args.standing}: unknown kinds {bad}")
    xs = emb.embed([f"User: {r['text'].strip()}" for r in st])
    ys = np.array([KINDS.index(r["kind"] or "") for r in st])
    kind_clf, kind_t = fit(xs, ys, f"standing kinds ({len(st)} sentences)")

    rq = read(args.requests)
    xr = emb.embed([r["text"].strip() for r in rq])
    yr = np.array([int(bool(r["request"])) for r in rq])
    req_clf, req_t = fit(xr, yr, f"requests ({len(rq)} queries)")

    np.savez_compressed(
        args.out,
        model_id=np.array(emb.model_id),
        kinds=np.array([KINDS[c] for c in kind_clf.classes_]),  # type: ignore[attr-defined]
        kind_w=kind_clf.coef_.T.astype(np.float32),  # type: ignore[attr-defined]
        kind_b=kind_clf.intercept_.astype(np.float32),  # type: ignore[attr-defined]
        kind_threshold=np.array(kind_t),
        request_w=req_clf.coef_[0].astype(np.float32),  # type: ignore[attr-defined]
        request_b=np.array(float(req_clf.intercept_[0])),  # type: ignore[attr-defined]
        request_threshold=np.array(req_t),
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
