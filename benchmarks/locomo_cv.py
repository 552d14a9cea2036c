"""Leave-one-conversation-out cross-validation of search settings on LoCoMo.

Each conversation is ingested once (``--db`` keeps the database for ``--reuse``); every candidate
configuration (the product of the ``--vary FIELD=V1,V2,...`` options over the default
:class:`~deepcontext.SearchConfig`) answers every question. For each held-out conversation the
candidate with the best mean recall on the other conversations is chosen, and the held-out
conversation's questions are scored with it: the cross-validated figure is the mean over all
questions of those held-out scores. The objective is the mean of recall@5/10/25/50, memory and
user-view figures alike (the user view at k ranks each leg cut to the depth it has for ``limit=k``).

    python benchmarks/locomo_cv.py --data locomo-dev.json --db cv.db --vary rrf_k=20,60 --vary keyword_weight=0.25,0.4

An ingest setting is fitted the same way with ``--ingest-vary KEY=V1,V2``: the conversations are
ingested once per value (into ``--db`` with the value in its name) and every (value, search
configuration) pair is a candidate.

The legs run once per question, as deep as ``search(limit=--gather-limit)`` reads them (default
50); each candidate only re-ranks what they found, cut to the depth each limit asks for
(``min_leg_k``, ``vector_min_k`` and the ``*_k_factor`` fields can be fitted up to the gathered depths;
``graph_depth`` cannot); the neighbour turns of its best results (``neighbour_turns``) are read
from the database for each candidate, as search does. "in candidates" is the share of evidence turns that some leg found at
all (at the limit-50 depths), the ceiling of any re-ranking. Access tracking is off, so candidates do not influence each
other (the default ranking does not use access counts).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pickle
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from deepcontext import DeepContext
from deepcontext.language.standing_model import model_for
from deepcontext.retrieve import SearchConfig
from deepcontext.retrieve.search import MAX_SOURCES, Candidates, gather, leg_k, neighbour_reader, rank
from deepcontext.services.validation import parse_filters
from deepcontext_bench.locomo import KS, ingest, recall_at, user_of, user_view
from deepcontext_bench.locomo_data import CATEGORIES, load


def _value(raw: str) -> Any:
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(raw)
    except ValueError:
        return float(raw)


def candidates(vary: list[str]) -> list[dict[str, Any]]:
    axes: list[tuple[str, list[Any]]] = []
    for item in vary:
        key, sep, values = item.partition("=")
        if not sep or key not in SearchConfig.model_fields:
            sys.exit(f"--vary takes FIELD=V1,V2 with a SearchConfig field, got {item!r}")
        axes.append((key, [_value(v) for v in values.split(",")]))
    return [dict(zip([k for k, _ in axes], combo, strict=True)) for combo in itertools.product(*[v for _, v in axes])]


def objective(row: dict[str, Any]) -> float:
    return statistics.fmean([*row["memory"].values(), *row["user"].values()])


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="LoCoMo-format JSON")
    ap.add_argument("--db", required=True, help="SQLite file for the ingested conversations")
    ap.add_argument("--reuse", action="store_true", help="The database already holds the conversations")
    ap.add_argument("--vary", action="append", default=[], help="FIELD=V1,V2,... (repeatable; the product is searched)")
    ap.add_argument("--set", action="append", default=[], help="An engine setting KEY=VALUE for the ingest (repeatable)")
    ap.add_argument(
        "--ingest-vary",
        default=None,
        help="KEY=V1,V2,...: an engine setting fitted too, the conversations ingested once per value",
    )
    ap.add_argument(
        "--cache", default=None, help="Keep the legs' candidates in this file and reuse them (same code, same database)"
    )
    ap.add_argument("--out", default=None, help="Write the per-candidate and per-fold figures as JSON here")
    ap.add_argument(
        "--gather-limit",
        type=int,
        default=max(KS),
        help="The limit the legs run for once (deeper than 50 lets candidates fit deeper legs: *_k_factor, min_leg_k, vector_min_k)",
    )
    args = ap.parse_args()
    settings = {k: v for k, _, v in (s.partition("=") for s in args.set)}
    convs = load(args.data)
    search_cands = candidates(args.vary) or [{}]
    variants: list[tuple[dict[str, str], Path, Path | None]] = [({}, Path(args.db), Path(args.cache) if args.cache else None)]
    if args.ingest_vary:
        key, sep, values = args.ingest_vary.partition("=")
        if not sep or not values:
            sys.exit(f"--ingest-vary takes KEY=V1,V2, got {args.ingest_vary!r}")

        def named(path: Path, v: str) -> Path:
            return path.with_name(f"{path.stem}-{key}-{v}{path.suffix}")

        variants = [
            ({key: v}, named(Path(args.db), v), named(Path(args.cache), v) if args.cache else None) for v in values.split(",")
        ]
    cands: list[dict[str, Any]] = []
    rows: list[dict[str, list[dict[str, Any]]]] = []
    for extra, db, cache in variants:
        got = await _evaluate(convs, {**settings, **extra}, db, cache, args.reuse, args.gather_limit, search_cands)
        cands += [{**extra, **c} for c in search_cands]
        rows += got
        for c, per in zip(search_cands, got, strict=True):
            print(f"{({**extra, **c}) or 'defaults'}: {_fmt([r for v in per.values() for r in v])}", file=sys.stderr)
    held: list[dict[str, Any]] = []
    folds = {}
    for conv in convs:
        train = [c.sample_id for c in convs if c.sample_id != conv.sample_id]
        scores = [statistics.fmean(objective(r) for t in train for r in rows[i][t]) for i in range(len(cands))]
        best = max(range(len(cands)), key=lambda i: scores[i])
        folds[conv.sample_id] = cands[best]
        held += rows[best][conv.sample_id]
    print("fold choices:", json.dumps(folds))
    print(f"cross-validated: {_fmt(held)}")
    for cat in sorted({r["category"] for r in held}):
        print(f"  {CATEGORIES.get(cat, cat)}: {_fmt([r for r in held if r['category'] == cat])}")
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "candidates": cands,
                    "folds": folds,
                    "per_candidate": [_summary([r for v in p.values() for r in v]) for p in rows],
                    "cv": _summary(held),
                },
                indent=1,
            )
        )


async def _evaluate(
    convs: list[Any],
    settings: dict[str, Any],
    db: Path,
    cache: Path | None,
    reuse: bool,
    gather_limit: int,
    cands: list[dict[str, Any]],
) -> list[dict[str, list[dict[str, Any]]]]:
    """Ingest (or read) the conversations into ``db`` under ``settings``; per search candidate, per
    conversation, each question's figures."""
    ctx = DeepContext(database_url=f"sqlite:///{db.resolve()}", track_access=False, **settings)
    await ctx.init()
    try:
        dia: dict[str, dict[int, str]] = {}
        for conv in convs:
            t0 = time.perf_counter()
            dia[conv.sample_id] = await _dia_from_db(ctx, conv) if reuse else await ingest(ctx, conv)
            print(f"{'read' if reuse else 'ingested'} {conv.sample_id} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        base = SearchConfig.from_settings(ctx.settings)
        # the legs run once per question (their depth does not depend on the candidates); each
        # candidate configuration then only ranks what they found
        t0 = time.perf_counter()
        found: dict[str, list[tuple[Any, Any, dict[int, list[str]]]]] = {}
        now = ctx.clock.now()
        filters = parse_filters()
        if cache is not None and cache.exists():
            now, found = pickle.loads(cache.read_bytes())
        for conv in [] if found else convs:
            user = user_of(conv)
            found[conv.sample_id] = []
            for q in conv.questions:
                vector = ctx.embedder.embed_one(q.question)
                with ctx.store.reading():
                    got = gather(
                        ctx.store,
                        user,
                        q.question,
                        vector,
                        limit=gather_limit,
                        filters=filters,
                        config=base,
                        now=now,
                        standing=model_for(ctx.embedder.model_id),
                    )
                    ids = list(got.fields)
                    mems, _ = ctx.store.result_details(user, ids, max_sources=MAX_SOURCES, links_per_memory=0)
                turns = {
                    mid: [dia[conv.sample_id][s.turn_id] for s in m.sources if s.turn_id in dia[conv.sample_id]]
                    for mid, m in mems.items()
                }
                found[conv.sample_id].append((q, got, turns))
        if cache is not None and not cache.exists():
            cache.write_bytes(pickle.dumps((now, found)))
        print(f"legs of every question in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

        def cited_by(conv_id: str, mids: list[int], into: dict[int, list[str]]) -> None:
            """The dialogue ids cited by memories the legs did not find (neighbours), into ``into``."""
            if mids:
                conv = next(c for c in convs if c.sample_id == conv_id)
                mems, _ = ctx.store.result_details(user_of(conv), mids, max_sources=MAX_SOURCES, links_per_memory=0)
                for mid, m in mems.items():
                    into[mid] = [dia[conv_id][s.turn_id] for s in m.sources if s.turn_id in dia[conv_id]]

        rows: list[dict[str, list[dict[str, Any]]]] = []
        for cand in cands:
            cfg = base.model_copy(update=cand)
            per: dict[str, list[dict[str, Any]]] = {}
            for conv in convs:
                out = []
                for q, got, turns in found[conv.sample_id]:
                    # search(limit=k): each leg as deep as it would be for k (a prefix of its
                    # ranking at the gathered depth)
                    def cut(k: int) -> Candidates:
                        legs = {leg: ids[: _depth(cfg, leg, k)] for leg, ids in got.legs.items()}
                        seen = set(legs.get("vector", []))
                        return Candidates(got.query, legs, got.fields, {m: s for m, s in got.sims.items() if m in seen})

                    def ranked(k: int) -> list[list[str]]:
                        # as hybrid_search: the neighbours of the best k join (read from the store)
                        top = rank(cut(k), cfg, now, k, neighbour_reader(ctx.store, user_of(conv), filters, now))
                        cited_by(conv.sample_id, [r.memory_id for r in top if r.memory_id not in turns], turns)
                        return [turns.get(r.memory_id, []) for r in top]

                    deepest = cut(max(KS))
                    c = ranked(max(KS))
                    pool = {d for ids in deepest.legs.values() for m in ids for d in turns.get(m, [])}
                    seen_by_user = {k: user_view(q.evidence, ranked(k), k) for k in KS}
                    reach = len(set(q.evidence) & pool) / len(set(q.evidence))
                    out.append({"category": q.category, "memory": recall_at(q.evidence, c), "user": seen_by_user, "reach": reach})
                per[conv.sample_id] = out
            rows.append(per)
        return rows
    finally:
        await ctx.close()


def _depth(cfg: SearchConfig, leg: str, k: int) -> int:
    """How deep ``leg`` reads for ``limit=k`` (the profile leg: as deep as the vector leg)."""
    return leg_k(cfg, k, "vector" if leg == "profile" else leg)


async def _dia_from_db(ctx: Any, conv: Any) -> dict[int, str]:
    """Turn id -> dialogue id of an ingested conversation (sessions in order, turns in order)."""
    out: dict[int, str] = {}
    for n, _, turns in conv.sessions:
        if not turns:
            continue
        stored = await ctx.turns(user_of(conv), f"session_{n}", limit=10_000)
        for st, t in zip(stored, turns, strict=True):
            out[st.id] = t.dia_id
    return out


def _summary(rs: list[dict[str, Any]]) -> dict[str, Any]:
    return {fig: {k: round(100 * statistics.fmean(r[fig][k] for r in rs), 2) for k in KS} for fig in ("memory", "user")}


def _fmt(rs: list[dict[str, Any]]) -> str:
    s = _summary(rs)
    reach = 100 * statistics.fmean(r["reach"] for r in rs) if rs else 0.0
    return " | ".join(f"{fig} " + " / ".join(f"{v:.1f}" for v in s[fig].values()) for fig in s) + f" | in candidates {reach:.1f}"


if __name__ == "__main__":
    asyncio.run(main())
