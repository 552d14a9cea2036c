"""Benchmark deepcontext.dialogue: ancestor chains and context building on big conversation graphs.

Scenarios, per backend (``memory``; ``sqlite``, a file in a temporary directory; ``postgres`` when
``--postgres-url`` names a database to write into):

- ``chain``: one conversation of ``--nodes`` message pairs (default 100,000) in a single chain.
  Timed: building it, ``get_ancestor_chain`` (longest / shortest / first; ``max_nodes`` 8 and all),
  ``get_all_ancestors``, ``build_linear_context(max_nodes=8)``, the first query of a freshly
  opened handle (store backends: loads the structure), a query right after another process
  appended one node (incremental refresh), and one ``ContextManager.chat`` round with the offline
  planner (candidates, packing of the over-long chain, context) and a trivial agent. Store backends
  also go through ``DeepContext.dialogue`` (``dc_*``): opening the session, a chat round with memory
  extraction (hash embedder), a recorded round, and ``conversation_path`` for a context builder.
- ``ladder``: ``--rungs`` diamonds in a row (default 1,000: 2**1000 root-to-bottom paths), each with
  a one-node and a two-node arm; longest / shortest / first chains of the bottom node.
- ``enumeration``: for contrast, the time to enumerate every root-to-node path (what a recursive
  path search does) on small ladders; it doubles with every diamond.

Each query is timed ``--repeat`` times (default 5; the median is reported). Writes
``bench_dialogue.json`` and ``bench_dialogue.md`` to ``--out`` (default ``benchmarks/results``).

    python benchmarks/bench_dialogue.py
    python benchmarks/bench_dialogue.py --nodes 20000 --backends memory,sqlite
    python benchmarks/bench_dialogue.py --postgres-url postgresql://postgres@127.0.0.1:5432/bench
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import multiprocessing as mp
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
DIM = 16
BATCH = 5000


def _pair(user: str, assistant: str) -> Any:
    from deepcontext.dialogue import LLMContext, LLMContextPair

    return LLMContextPair(LLMContext("user", user), LLMContext("assistant", assistant))


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time in ms over ``repeat`` runs, and the last result."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def _once(fn: Callable[[], Any]) -> tuple[float, Any]:
    return _timed(fn, 1)


class Backends:
    """Opens graphs on the chosen backends; every graph gets its own user id."""

    def __init__(self, tmp: Path, postgres_url: str | None) -> None:
        self.tmp = tmp
        self.postgres_url = postgres_url
        self.stores: dict[str, Any] = {}

    def store(self, kind: str) -> Any:
        if kind not in self.stores:
            if kind == "sqlite":
                from deepcontext.store.sqlite import SQLiteStore

                st: Any = SQLiteStore(self.url(kind), DIM)
            else:
                from deepcontext.store.postgres import PostgresStore

                st = PostgresStore(self.url(kind), DIM)
            st.migrate()
            self.stores[kind] = st
        return self.stores[kind]

    def url(self, kind: str) -> str:
        return f"sqlite:///{self.tmp / 'bench.db'}" if kind == "sqlite" else (self.postgres_url or "")

    def graph(self, kind: str, user_id: str | None = None) -> Any:
        from deepcontext.dialogue import LLMContextGraph
        from deepcontext.dialogue.sqlstore import StoreDialogueBackend

        if kind == "memory":
            return LLMContextGraph()
        user = user_id or f"bench-{uuid.uuid4().hex[:8]}"
        return LLMContextGraph(StoreDialogueBackend(self.store(kind), user_id=user, conversation_id="bench"))

    def close(self) -> None:
        for st in self.stores.values():
            st.close()


class Agent:
    async def fetch(
        self,
        msg: str,
        system_prompt: str | None = None,
        temperature: float = 0.4,
        max_tokens: int = 4096,
        prev_messages: Any = None,
    ) -> str:
        return "Summary of the earlier rounds." if msg.startswith("Summarise") else f"ok: {msg[:40]}"


def _append_worker(url: str, user: str, parent: int, queue: Any) -> None:
    from deepcontext.dialogue import LLMContextGraph
    from deepcontext.dialogue.sqlstore import StoreDialogueBackend

    if url.startswith("sqlite"):
        from deepcontext.store.sqlite import SQLiteStore

        store: Any = SQLiteStore(url, DIM)
    else:
        from deepcontext.store.postgres import PostgresStore

        store = PostgresStore(url, DIM)
    try:
        graph = LLMContextGraph(StoreDialogueBackend(store, user_id=user, conversation_id="bench"))
        queue.put(graph.add_node(_pair("one more", "appended by another process"), parent_ids={parent}))
    finally:
        store.close()


def _append_elsewhere(url: str, user: str, parent: int) -> int:
    """Append one node under ``parent`` from a separate process; returns its id."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_append_worker, args=(url, user, parent, queue))
    proc.start()
    node = int(queue.get(timeout=600))
    proc.join()
    return node


def bench_chain(backends: Backends, kind: str, n: int, repeat: int) -> dict[str, Any]:
    from deepcontext.dialogue import ContextManager

    user = f"bench-{uuid.uuid4().hex[:8]}"
    graph = backends.graph(kind, user)
    out: dict[str, Any] = {"backend": kind, "nodes": n}

    def build() -> list[int]:
        ids: list[int] = []
        for start in range(0, n, BATCH):
            contexts = [_pair(f"question {i} about topic{i % 97}", f"answer {i}") for i in range(start, min(n, start + BATCH))]
            ids += graph.add_chain(contexts, parent_ids=ids[-1:])
        return ids

    out["build_ms"], ids = _once(build)
    tip = ids[-1]
    for strategy in ("longest", "shortest", "first"):
        ms, chain = _timed(functools.partial(graph.get_ancestor_chain, tip, 8, strategy), repeat)
        assert chain == ids[-8:], (strategy, chain)
        out[f"chain8_{strategy}_ms"] = ms
    out["chain_all_longest_ms"], chain = _timed(lambda: graph.get_ancestor_chain(tip, max_nodes=None), repeat)
    assert len(chain) == n
    out["all_ancestors_ms"], anc = _timed(lambda: graph.get_all_ancestors(tip), repeat)
    assert len(anc) == n - 1
    out["linear_context8_ms"], ctx = _timed(lambda: graph.build_linear_context(tip, max_nodes=8), repeat)
    assert len(ctx) == 16
    if kind != "memory":
        fresh = backends.graph(kind, user)
        out["cold_open_first_query_ms"], chain = _once(lambda: fresh.get_ancestor_chain(tip))
        assert chain == ids[-8:]
        new = _append_elsewhere(backends.url(kind), user, tip)  # another process writes
        out["query_after_foreign_append_ms"], chain = _once(lambda: fresh.get_ancestor_chain(new))
        assert chain == [*ids[-7:], new]
        tip = new
    if kind != "memory":
        out.update(bench_deepcontext(backends.url(kind), user, tip))
    cm = ContextManager(Agent(), max_context_nodes=6, pack_keep_recent=2, backend=graph.backend)
    out["chat_round_ms"], _ = _once(lambda: asyncio.run(cm.chat("Back to topic5: what did we say?", parent_ids={tip})))
    report = cm.last_report
    out["chat_round_packed"] = bool(report and report.summary_nodes)
    out["chat_context_nodes"] = len(report.context_node_ids) if report else 0
    out["chat_prompt_messages"] = len(report.prompt_messages) if report else 0
    out["chat_planner_candidates"] = len(report.candidate_ids) if report else 0
    return out


def bench_deepcontext(url: str, user: str, tip: int) -> dict[str, Any]:
    """The same conversation through ``DeepContext.dialogue``: opening the session (loads the
    structure), one chat round (plan, pack, answer, store, memory extraction with the hash embedder),
    one recorded round, and the conversation path a context builder asks for."""
    from deepcontext import DeepContext
    from deepcontext.embed import HashEmbedder

    out: dict[str, Any] = {}

    async def run() -> None:
        async with DeepContext(database_url=url, embedder=HashEmbedder(DIM)) as ctx:
            t0 = time.perf_counter()
            session = await ctx.dialogue(user, "bench", fetcher=Agent(), max_context_nodes=6, pack_keep_recent=2)
            out["dc_open_session_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            node = await session.chat("Back to topic5: what did we say? Remember that x = 42.")
            out["dc_chat_round_ms"] = (time.perf_counter() - t0) * 1000
            report = session.last_report
            out["dc_chat_packed"] = bool(report and report.summary_nodes)
            out["dc_chat_memories_derived"] = session.last_derived.memories_added if session.last_derived else 0
            assert session.graph.get_ancestor_chain(node, 2)[-1] == node and node != tip
            t0 = time.perf_counter()
            await session.record("One more question about topic7", "One more answer.")
            out["dc_record_round_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            path = await ctx.conversation_path(user, "bench", max_nodes=8)
            out["dc_conversation_path_ms"] = (time.perf_counter() - t0) * 1000
            assert len(path.nodes) == 8

    asyncio.run(run())
    return out


def _ladder(graph: Any, rungs: int) -> tuple[int, int, int]:
    top = graph.add_node(_pair("top", "0"))
    for i in range(rungs):
        short = graph.add_node(_pair(f"short {i}", "s"), parent_ids=[top])
        long1 = graph.add_node(_pair(f"long {i}", "l"), parent_ids=[top])
        long2 = graph.add_node(_pair(f"long {i}b", "l"), parent_ids=[long1])
        top = graph.add_node(_pair(f"bottom {i}", "b"), parent_ids=[short, long2])
    return top, 3 * rungs + 1, 2 * rungs + 1


def bench_ladder(backends: Backends, kind: str, rungs: int, repeat: int) -> dict[str, Any]:
    graph = backends.graph(kind)
    out: dict[str, Any] = {"backend": kind, "rungs": rungs, "paths": f"2^{rungs}"}
    out["build_ms"], (bottom, longest, shortest) = _once(lambda: _ladder(graph, rungs))
    for strategy, expected in (("longest", longest), ("shortest", shortest), ("first", shortest)):
        ms, chain = _timed(functools.partial(graph.get_ancestor_chain, bottom, None, strategy), repeat)
        assert len(chain) == expected, (strategy, len(chain), expected)
        out[f"{strategy}_ms"] = ms
    return out


def bench_enumeration(max_rungs: int) -> list[dict[str, Any]]:
    """Enumerate every root -> bottom path of small ladders (an explicit stack, no recursion)."""
    from deepcontext.dialogue import LLMContextGraph

    rows = []
    for rungs in range(8, max_rungs + 1, 4):
        graph = LLMContextGraph()
        bottom, _, _ = _ladder(graph, rungs)
        with graph.backend.topology() as topo:
            parents = {k: list(v) for k, v in topo.parents.items()}
        t0 = time.perf_counter()
        count = 0
        stack = [bottom]
        while stack:
            node = stack.pop()
            ps = parents[node]
            if not ps:
                count += 1
            stack.extend(ps)
        rows.append({"rungs": rungs, "paths": count, "ms": (time.perf_counter() - t0) * 1000})
    return rows


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.1f}" if v >= 10 else f"{v:.2f}"
    return str(v)


def markdown(result: dict[str, Any]) -> str:
    lines = ["# deepcontext.dialogue benchmark", "", f"{result['machine']} · Python {result['python']} · {result['date']}", ""]
    lines += ["## One chain of message pairs (times in ms, median of repeats)", ""]
    chains = result["chain"]
    keys = [k for k in chains[0] if k not in ("backend",)] if chains else []
    keys = list(dict.fromkeys(k for c in chains for k in c if k != "backend"))
    lines.append("| measure | " + " | ".join(c["backend"] for c in chains) + " |")
    lines.append("|---|" + "---|" * len(chains))
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(_fmt(c.get(k, "")) for c in chains) + " |")
    lines += ["", "## Ladder of diamonds (times in ms)", ""]
    ladders = result["ladder"]
    keys = list(dict.fromkeys(k for c in ladders for k in c if k != "backend"))
    lines.append("| measure | " + " | ".join(c["backend"] for c in ladders) + " |")
    lines.append("|---|" + "---|" * len(ladders))
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(_fmt(c.get(k, "")) for c in ladders) + " |")
    lines += ["", "## For contrast: enumerating every path of a small ladder", "", "| diamonds | paths | ms |", "|---|---|---|"]
    for r in result["enumeration"]:
        lines.append(f"| {r['rungs']} | {r['paths']:,} | {_fmt(r['ms'])} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--rungs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backends", default="memory,sqlite", help="comma-separated: memory, sqlite, postgres")
    ap.add_argument("--postgres-url", default=None, help="a PostgreSQL database to write into (adds the postgres backend)")
    ap.add_argument("--enumerate-up-to", type=int, default=20, help="largest ladder whose paths are enumerated")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    kinds = [k.strip() for k in args.backends.split(",") if k.strip()]
    if args.postgres_url and "postgres" not in kinds:
        kinds.append("postgres")
    if "postgres" in kinds and not args.postgres_url:
        raise SystemExit("the postgres backend needs --postgres-url")

    with tempfile.TemporaryDirectory() as tmp:
        backends = Backends(Path(tmp), args.postgres_url)
        try:
            chain = []
            ladder = []
            for kind in kinds:
                print(f"[{kind}] chain of {args.nodes:,} nodes ...", flush=True)
                chain.append(bench_chain(backends, kind, args.nodes, args.repeat))
                print(f"[{kind}] ladder of {args.rungs:,} diamonds ...", flush=True)
                ladder.append(bench_ladder(backends, kind, args.rungs, args.repeat))
        finally:
            backends.close()
    result = {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "chain": chain,
        "ladder": ladder,
        "enumeration": bench_enumeration(args.enumerate_up_to),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_dialogue.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    md = markdown(result)
    (args.out / "bench_dialogue.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
