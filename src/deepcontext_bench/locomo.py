"""Retrieval quality on LoCoMo (the LoCoMo paper's "recall accuracy" protocol).

Each conversation is ingested as one user through the public API (``DeepContext.add``, one call per
session, each session's date as the time of its turns) with the engine's settings exactly as a user
gets them (a setting differs only when the caller passes it); every question with evidence is asked
through ``DeepContext.search``; results map back to dialogue ids through provenance.

Three figures per question, each averaged overall, per category and per conversation:

- *memory* recall@k: |evidence ∩ turns cited by the top k results| / |evidence| (``limit=50``; a
  memory counts for every turn it cites);
- *user view* recall@k: ``search(limit=k)``, the cited turns of its results flattened in rank order
  and cut at k turns (a memory citing many turns gains nothing);
- *context* recall@B: the share of the evidence that ``context(question, budget_tokens=B)``
  includes (verbatim or through a memory citing it), beside the conversation's size in tokens.

Baselines run in the same process on the same turns: BM25 alone, cosine alone (the same embedder)
and the naive hybrid (both fused by RRF k=60, one document per turn "speaker: text").

Search latency (p50/p95/p99 ms per question) is reported for every system as a caller would pay
it, the question's embedding included: ours and mem0 through their search calls, the cosine
baseline as embedding plus scan, the naive hybrid as embedding, BM25, scan and fusion.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepcontext_bench.baselines import BM25, cosine_rank, rrf_merge
from deepcontext_bench.calibration import CalibrationData, calibration_report
from deepcontext_bench.locomo_data import CATEGORIES, Conversation, load

__all__ = ["BUDGETS", "KS", "Record", "SystemResult", "ingest", "peer_ratios", "run_locomo", "user_view"]

KS = (5, 10, 25, 50)
#: context budgets (tokens) whose recall is reported
BUDGETS = (1000, 2000, 4000)


@dataclass
class Record:
    """One question's figures."""

    conversation: str
    category: int
    memory: dict[int, float]
    user: dict[int, float] = field(default_factory=dict)
    context: dict[int, float] = field(default_factory=dict)


def recall_at(evidence: Sequence[str], cited_in_order: Sequence[Sequence[str]], ks: Sequence[int] = KS) -> dict[int, float]:
    """recall@k for each k: the share of ``evidence`` cited by the first k results."""
    ev = set(evidence)
    return {k: len(ev & {d for group in cited_in_order[:k] for d in group}) / len(ev) for k in ks}


def user_view(evidence: Sequence[str], cited_in_order: Sequence[Sequence[str]], k: int) -> float:
    """Recall of the first ``k`` distinct turns cited by the results, in rank order."""
    turns = list(dict.fromkeys(d for group in cited_in_order for d in group))[:k]
    return len(set(evidence) & set(turns)) / len(set(evidence))


def _mean(values: list[dict[int, float]], keys: Sequence[int]) -> dict[int, float]:
    return {k: 100 * statistics.fmean(v[k] for v in values) for k in keys} if values else {}


@dataclass
class SystemResult:
    name: str
    records: list[Record] = field(default_factory=list)
    ingest_seconds: float = 0.0
    turns: int = 0
    search_ms: list[float] = field(default_factory=list)
    #: distinct turns cited by the top 10 (a merged memory citing many turns raises recall: shown openly)
    turns_at_10: list[int] = field(default_factory=list)

    def add(self, conversation: str, category: int, evidence: list[str], cited_in_order: list[list[str]]) -> Record:
        self.turns_at_10.append(len({d for group in cited_in_order[:10] for d in group}))
        rec = Record(conversation, category, recall_at(evidence, cited_in_order))
        self.records.append(rec)
        return rec

    def _figures(self, recs: list[Record]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(recs), "memory": _mean([r.memory for r in recs], KS)}
        users = [r.user for r in recs if r.user]
        if users:
            out["user"] = _mean(users, KS)
        contexts = [r.context for r in recs if r.context]
        if contexts:
            out["context"] = _mean(contexts, sorted(contexts[0]))
        return out

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.search_ms)
        whole = self._figures(self.records)
        return {
            "questions": len(self.records),
            "recall": whole["memory"],
            "user_recall": whole.get("user"),
            "context_recall": whole.get("context"),
            "by_category": {
                CATEGORIES.get(cat, str(cat)): self._figures([r for r in self.records if r.category == cat])
                for cat in sorted({r.category for r in self.records})
            },
            "by_conversation": {
                conv: self._figures([r for r in self.records if r.conversation == conv])
                for conv in dict.fromkeys(r.conversation for r in self.records)
            },
            "ingest_seconds": round(self.ingest_seconds, 3),
            "search_ms_p50": round(lat[len(lat) // 2], 3) if lat else None,
            "search_ms_p95": round(lat[int(len(lat) * 0.95)], 3) if lat else None,
            "search_ms_p99": round(lat[int(len(lat) * 0.99)], 3) if lat else None,
            "ingest_turns_per_s": round(self.turns / self.ingest_seconds, 1) if self.turns and self.ingest_seconds else None,
            "turns_cited_at_10": round(statistics.fmean(self.turns_at_10), 2) if self.turns_at_10 else None,
        }


def user_of(conv: Conversation) -> str:
    return f"locomo-{conv.sample_id}"


async def ingest(ctx: Any, conv: Conversation, tick: Callable[[str], None] = lambda _: None) -> dict[int, str]:
    """One conversation as one user, a session per ``add``; returns turn id -> dialogue id."""
    user = user_of(conv)
    await ctx.delete_user(user)
    dia_of: dict[int, str] = {}
    for n, date, turns in conv.sessions:
        if not turns:
            continue
        msgs = [{"role": "user", "name": t.speaker, "content": t.text, "timestamp": t.said_at} for t in turns]
        r = await ctx.add(msgs, user, f"session_{n}", timestamp=date)
        for tid, t in zip(r.turn_ids, turns, strict=True):
            dia_of[tid] = t.dia_id
        tick("ingest")
    await ctx.flush()  # background consolidation of this conversation, so runs are reproducible
    return dia_of


def cited(results: Sequence[Any], dia_of: dict[int, str]) -> list[list[str]]:
    """Per result, the dialogue ids of the turns it cites (oldest first)."""
    return [[dia_of[s.turn_id] for s in hit.sources if s.turn_id in dia_of] for hit in results]


async def _context_recall(
    ctx: Any,
    question: str,
    user: str,
    evidence: list[str],
    budgets: Sequence[int],
    dia_of: dict[int, str],
    cache: dict[int, list[str]],
) -> dict[int, float]:
    out: dict[int, float] = {}
    ev = set(evidence)
    for budget in budgets:
        res = await ctx.context(question, user, budget_tokens=budget)
        got: set[str] = set()
        for item in res.items:
            got.update(dia_of[t] for t in item.turn_ids if t in dia_of)
            if item.memory_id is not None:
                if item.memory_id not in cache:
                    mem = await ctx.get(item.memory_id, user)
                    cache[item.memory_id] = [dia_of[s.turn_id] for s in mem.sources if s.turn_id in dia_of]
                got.update(cache[item.memory_id])
        out[budget] = len(ev & got) / len(ev)
    return out


async def _run_ours(
    convs: list[Conversation],
    db_url: str,
    settings: dict[str, Any],
    tick: Callable[[str], None],
    *,
    user_ks: Sequence[int],
    budgets: Sequence[int],
    observed: CalibrationData | None = None,
) -> tuple[SystemResult, Any, dict[str, int]]:
    from deepcontext import DeepContext
    from deepcontext.context.tokens import TokenCounter

    res = SystemResult("deepcontext")
    ctx = DeepContext(database_url=db_url, **settings)
    await ctx.init()
    counter = TokenCounter(ctx.embedder)
    sizes: dict[str, int] = {}
    for ci, conv in enumerate(convs):
        user = user_of(conv)
        sizes[conv.sample_id] = counter.count("\n".join(f"{t.speaker}: {t.text}" for t in conv.turns))
        t0 = time.perf_counter()
        dia_of = await ingest(ctx, conv, tick)
        res.turns += len(conv.turns)
        res.ingest_seconds += time.perf_counter() - t0
        cache: dict[int, list[str]] = {}
        for q in conv.questions:
            t1 = time.perf_counter()
            out = await ctx.search(q.question, user, limit=max(KS))
            res.search_ms.append((time.perf_counter() - t1) * 1000)
            got = cited(out.results, dia_of)
            rec = res.add(conv.sample_id, q.category, q.evidence, got)
            if observed is not None:
                observed.observe(ci, out.results, got, q.evidence)
            for k in user_ks:
                top = await ctx.search(q.question, user, limit=k)
                rec.user[k] = user_view(q.evidence, cited(top.results, dia_of), k)
            if budgets:
                rec.context = await _context_recall(ctx, q.question, user, q.evidence, budgets, dia_of, cache)
            tick("search")
    if observed is not None and len(convs) > 1:
        # each question asked again of the next conversation, where nothing answers it: a score
        # must also tell a query that nothing stored answers
        for ci, conv in enumerate(convs):
            other = (ci + 1) % len(convs)
            for q in conv.questions:
                out = await ctx.search(q.question, user_of(convs[other]), limit=max(KS))
                observed.observe(ci, out.results, [[] for _ in out.results], q.evidence, haystack=other)
                tick("search")
    return res, ctx, sizes


def _run_baselines(convs: list[Conversation], embedder: Any, tick: Callable[[str], None]) -> list[SystemResult]:
    """BM25, cosine and their naive hybrid on the same turns. Search latency is what each would
    cost a caller per question: the question is embedded on its own (the embedder's cache cleared
    first, so no vector is reused from our run) for cosine and the hybrid, and the hybrid pays
    BM25, cosine and the fusion."""
    kw, vec, hyb = SystemResult("keyword (BM25)"), SystemResult("vector (cosine)"), SystemResult("naive hybrid (RRF)")
    embedder.clear_cache()
    for conv in convs:
        turns = conv.turns
        docs = [f"{t.speaker}: {t.text}" for t in turns]
        t0 = time.perf_counter()
        bm = BM25(docs)
        kw.ingest_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        mat = embedder.embed(docs)
        vec.ingest_seconds += time.perf_counter() - t0
        hyb.ingest_seconds = kw.ingest_seconds + vec.ingest_seconds
        for system in (kw, vec, hyb):
            system.turns += len(turns)
        for q in conv.questions:
            t1 = time.perf_counter()
            qv = embedder.embed_one(q.question)
            embed_ms = (time.perf_counter() - t1) * 1000
            t1 = time.perf_counter()
            rk = bm.rank(q.question, 100)
            bm25_ms = (time.perf_counter() - t1) * 1000
            t1 = time.perf_counter()
            rv = cosine_rank(mat, qv, 100)
            cosine_ms = (time.perf_counter() - t1) * 1000
            t1 = time.perf_counter()
            rh = rrf_merge([rv, rk], k=60)
            fuse_ms = (time.perf_counter() - t1) * 1000
            kw.search_ms.append(bm25_ms)
            vec.search_ms.append(embed_ms + cosine_ms)
            hyb.search_ms.append(embed_ms + bm25_ms + cosine_ms + fuse_ms)
            for system, ranking in ((kw, rk), (vec, rv), (hyb, rh)):
                rec = system.add(conv.sample_id, q.category, q.evidence, [[turns[i].dia_id] for i in ranking])
                rec.user = dict(rec.memory)  # one turn per result: both figures are the same
            tick("baselines")
    return [kw, vec, hyb]


def peer_ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Our figures over the peer's: recall@k and ingest turns/s (higher is better for us), search
    latency percentiles (lower is better for us)."""

    def ratio(a: Any, b: Any) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    out: dict[str, Any] = {f"recall@{k}": ratio(ours["recall"].get(k), theirs["recall"].get(k)) for k in KS}
    out["ingest_turns_per_s"] = ratio(ours["ingest_turns_per_s"], theirs["ingest_turns_per_s"])
    for p in ("p50", "p95", "p99"):
        out[f"search_ms_{p}"] = ratio(ours[f"search_ms_{p}"], theirs[f"search_ms_{p}"])
    return out


def _run_mem0(convs: list[Conversation], embedder: Any, tick: Callable[[str], None]) -> SystemResult:
    """mem0 (``infer=False``) on the same sessions, one memory per turn ("speaker: text", as the
    baselines index it), the same questions; see :mod:`deepcontext_bench.mem0_peer`."""
    from deepcontext_bench.mem0_peer import Mem0Peer, network_guard

    embedder.clear_cache()  # the baselines embedded the same "speaker: text" documents
    with network_guard():
        peer = Mem0Peer(embedder)
        res = SystemResult(f"mem0 {peer.version}")
        try:
            for conv in convs:
                user = f"locomo-{conv.sample_id}"
                dia_of: dict[str, str] = {}
                t0 = time.perf_counter()
                for _, _, turns in conv.sessions:
                    if not turns:
                        continue
                    ids = peer.add(user, [{"role": "user", "content": f"{t.speaker}: {t.text}"} for t in turns])
                    dia_of.update(zip(ids, (t.dia_id for t in turns), strict=True))
                    res.turns += len(turns)
                    tick("mem0")
                res.ingest_seconds += time.perf_counter() - t0
                for q in conv.questions:
                    t1 = time.perf_counter()
                    hits = peer.search(user, q.question, max(KS))
                    res.search_ms.append((time.perf_counter() - t1) * 1000)
                    res.add(conv.sample_id, q.category, q.evidence, [[dia_of[h]] for h in hits if h in dia_of])
                    tick("mem0")
        finally:
            peer.close()
    return res


async def run_locomo(
    path: str | Path,
    *,
    conversations: int | None = None,
    questions: int | None = None,
    db_url: str | None = None,
    settings: dict[str, Any] | None = None,
    baselines: bool = True,
    user_ks: Sequence[int] = KS,
    budgets: Sequence[int] = BUDGETS,
    progress: Callable[[str, int], None] | None = None,
    calibration: bool = False,
    peer: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; returns a JSON-ready dict (systems, ratios, run facts). ``settings`` are
    passed to the engine as they are (none: the defaults); ``user_ks`` and ``budgets`` choose the
    user-view and context figures (empty: not measured); with ``calibration``, also how well the
    search scores are calibrated (see :mod:`.calibration`); ``peer="mem0"`` adds mem0 on the same
    turns and questions (it must be installed)."""
    convs = load(path)
    if conversations is not None:
        convs = convs[:conversations]
    if questions is not None:
        for c in convs:
            c.questions = c.questions[:questions]
    n_sessions = sum(1 for c in convs for _, _, ts in c.sessions if ts)
    n_questions = sum(len(c.questions) for c in convs)
    if progress:
        progress(
            "total", (n_sessions + n_questions) * (1 + bool(peer)) + n_questions * (baselines + (calibration and len(convs) > 1))
        )

    def tick(_: str) -> None:
        if progress:
            progress("advance", 1)

    tmp = None
    if db_url is None:
        tmp = tempfile.TemporaryDirectory(prefix="dc-locomo-")
        db_url = f"sqlite:///{Path(tmp.name) / 'locomo.db'}"
    try:
        observed = CalibrationData() if calibration else None
        ours, ctx, sizes = await _run_ours(
            convs, db_url, dict(settings or {}), tick, user_ks=user_ks, budgets=budgets, observed=observed
        )
        try:
            systems = [ours]
            if baselines:
                systems += _run_baselines(convs, ctx.embedder, tick)
            if peer == "mem0":
                systems.append(_run_mem0(convs, ctx.embedder, tick))
            embedder = ctx.embedder.model_id
            backend = ctx.store.backend
        finally:
            await ctx.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    summaries = {s.name: s.summary() for s in systems}
    ratios = {
        s.name: {k: (summaries[ours.name]["recall"][k] / v if v else None) for k, v in summaries[s.name]["recall"].items()}
        for s in systems[1:]
    }
    peer_name = systems[-1].name if peer else None
    out: dict[str, Any] = {
        "benchmark": "locomo",
        "peer": peer_name,
        "ours_over_peer": peer_ratios(summaries[ours.name], summaries[peer_name]) if peer_name else None,
        "data": str(path),
        "conversations": [c.sample_id for c in convs],
        "conversation_tokens": sizes,
        "turns": sum(len(c.turns) for c in convs),
        "questions": n_questions,
        "embedder": embedder,
        "backend": backend,
        "settings": dict(settings or {}),
        "systems": summaries,
        "ratio_ours_over": ratios,
    }
    if observed is not None:
        out["calibration"] = calibration_report(observed)
    return out
