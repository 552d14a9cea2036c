"""Two processes adding to the same database at once lose nothing and never see 'database is locked'."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deepcontext import DeepContext
from deepcontext.embed import HashEmbedder

WORKER = Path(__file__).with_name("_concurrent_worker.py")


@pytest.mark.slow  # two worker processes on one database
async def test_two_processes_lose_nothing(db_url: str) -> None:
    n = 25
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), db_url, w, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for w in ("A", "B")
    ]
    errors = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        if p.returncode != 0:
            errors.append(err.decode())
    assert not errors, errors
    async with DeepContext(database_url=db_url, embedder=HashEmbedder(256)) as ctx:
        turns = await ctx.turns("shared", "same", limit=1000)
        assert len(turns) == 2 * n * 2
        contents = {t.content for t in turns}
        for w in ("A", "B"):
            for i in range(n):
                assert f"Noted {w}-{i}." in contents
        # the conversation is still one valid chain: every turn but the first has one parent
        ids = {t.id for t in turns}
        roots = [t for t in turns if not t.parent_ids]
        assert len(roots) == 1
        assert all(p in ids for t in turns for p in t.parent_ids)
        assert len({t.parent_ids[0] for t in turns if t.parent_ids}) == len(turns) - 1


async def test_cache_sees_writes_of_another_instance(tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/shared.db"
    async with (
        DeepContext(database_url=url, embedder=HashEmbedder(256)) as a,
        DeepContext(database_url=url, embedder=HashEmbedder(256)) as b,
    ):
        await a.add([{"role": "user", "content": "I keep my bicycle in the garage."}], user_id="u")
        assert (await a.search("bicycle garage", user_id="u", config="vector")).results  # a's cache is warm
        r = await b.add([{"role": "user", "content": "My kayak is orange and lives on the roof."}], user_id="u")
        res = await a.search("orange kayak roof", user_id="u", config="vector", limit=3)
        assert res.results[0].memory_id in r.memory_ids
        for mid in r.memory_ids:
            await b.delete(mid, "u")
        res = await a.search("orange kayak roof", user_id="u", config="vector", limit=10)
        assert not set(r.memory_ids) & {x.memory_id for x in res.results}
        await b.delete_user("u")
        assert (await a.search("bicycle", user_id="u", config="vector")).results == []
        # a re-created user never sees the old vectors
        await b.add([{"role": "user", "content": "Brand new life, nothing about bikes."}], user_id="u")
        res = await a.search("bicycle garage", user_id="u", config="vector", limit=10)
        assert all("bicycle" not in x.text for x in res.results)
