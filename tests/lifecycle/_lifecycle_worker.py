"""Run by test_lifecycle_processes in separate processes (a real second process, its own engine).

python _lifecycle_worker.py DB_URL consolidate BARRIER_DIR NAME FAKE_URL   -> one consolidation, JSON report
python _lifecycle_worker.py DB_URL loop STOP_FILE                          -> lifecycle runs until STOP_FILE exists
python _lifecycle_worker.py DB_URL add N                                   -> N adds of one fact each
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder
from tests.lifecycle.helpers import ScriptedExtractor

KEY = "sk-test-0123456789abcdef"
TRICKS = (
    "sit", "roll over", "fetch the newspaper", "shake hands", "play dead", "spin around", "wave goodbye",
    "open doors", "ring a bell", "find the remote", "carry a basket", "jump through hoops", "bow politely",
    "crawl under chairs", "balance a treat", "close drawers", "tidy up toys", "weave between poles",
    "high five", "speak softly",
)  # fmt: skip


def open_ctx(url: str, **kw: object) -> DeepContext:
    kw.setdefault("llm_provider", "none")
    kw.setdefault("dedup_threshold", 0.999)
    return DeepContext(database_url=url, embedder=HashEmbedder(256), extractor=ScriptedExtractor(), auto_consolidate=False, **kw)


async def consolidate(url: str, barrier: str, name: str, fake_url: str) -> None:
    llm = {"llm_provider": "openai", "llm_base_url": fake_url, "llm_api_key": KEY, "llm_model": "fake-model"}
    async with open_ctx(url, llm_max_retries=0, llm_timeout=60, **llm) as ctx:
        Path(barrier, name).touch()
        while len(list(Path(barrier).iterdir())) < 2:  # both processes ready: start together
            await asyncio.sleep(0.01)
        report = await ctx.consolidate("u", wait=120)
    print(json.dumps(report))


async def loop(url: str, stop: str) -> None:
    runs = merged = 0
    async with open_ctx(url) as ctx:
        while not Path(stop).exists():
            r = await ctx.run_lifecycle("u", consolidate=True, wait=120)
            runs += 1
            merged += r["memories_consolidated"]
            Path(stop + ".ran").touch()  # the test stops the loop only after one whole run
    print(json.dumps({"runs": runs, "merged": merged}))


async def add(url: str, n: int) -> None:
    async with open_ctx(url) as ctx:
        for i in range(n):
            meta = {"type": "semantic", "importance": 0.5, "entities": ["Pixel"]}
            await ctx.add([{"role": "user", "content": f"Pixel learned to {TRICKS[i]}", "metadata": meta}], "u", "c")


if __name__ == "__main__":
    url, mode, *args = sys.argv[1:]
    if mode == "consolidate":
        asyncio.run(consolidate(url, *args))
    elif mode == "loop":
        asyncio.run(loop(url, args[0]))
    else:
        asyncio.run(add(url, int(args[0])))
