"""DeepContext 0.1 users move over: a 0.1 database is recognised before anything is migrated, and
imported (memories, entities, relations, summaries of every user). The fixture was written by
deepcontext 0.1.0 itself (tests/fixtures/build_deepcontext_01_db.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from deepcontext import DeepContext, LegacyDatabaseError, MemoryEngine, MigrationError
from deepcontext.embed import HashEmbedder
from deepcontext.types import HistoryEvent, MemoryStatus
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
V01 = ROOT / "tests" / "fixtures" / "deepcontext-0.1.db"


def test_memory_engine_is_the_engine_again() -> None:
    assert MemoryEngine is DeepContext


async def test_a_v01_database_is_recognised_before_migrating(tmp_path: Path) -> None:
    old = tmp_path / "memory.db"
    shutil.copy(V01, old)
    before = old.read_bytes()
    ctx = DeepContext(database_url=f"sqlite:///{old}", embedder=HashEmbedder(64))
    with pytest.raises(LegacyDatabaseError, match="import-0.1") as err:
        await ctx.init()
    assert isinstance(err.value, MigrationError) and str(old) in str(err.value)
    assert "already exists" not in str(err.value)
    assert old.read_bytes() == before  # untouched: not even switched to WAL
    assert not Path(f"{old}-wal").exists()


@pytest.mark.postgres
async def test_a_v01_schema_on_postgres_is_recognised(pg_database) -> None:
    import psycopg

    url = pg_database()
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute("CREATE TABLE memories (id serial PRIMARY KEY, user_id text, text text, is_active boolean)")
        conn.execute("CREATE TABLE relationships (id serial PRIMARY KEY, user_id text, relation text)")
    ctx = DeepContext(database_url=url, embedder=HashEmbedder(64))
    with pytest.raises(LegacyDatabaseError, match="DeepContext 0.1") as err:
        await ctx.init()
    await ctx.close()
    # import-0.1 reads SQLite files: the message must not send a server URL to it, nor promise a backup
    message = str(err.value)
    assert "import-0.1 postgresql" not in message and ".bak" not in message, message
    assert "new database" in message


async def test_import_moves_memories_entities_relations_and_summaries(tmp_path: Path) -> None:
    async with DeepContext(database_url=f"sqlite:///{tmp_path / 'new.db'}", embedder=HashEmbedder(64)) as ctx:
        counts = await ctx.import_v01(V01)
        assert set(counts) == {"user_1", "user_2"}
        assert counts["user_1"]["memories"] == 4 and counts["user_1"]["relations"] == 3
        assert sorted(await ctx.users()) == ["user_1", "user_2"]

        res = await ctx.search("Where does Ana work?", "user_1")
        top = next(r for r in res.results if "Acme Corp" in r.text)
        assert top.tier.value == "long_term" and top.memory_type.value == "semantic"
        assert {"Ana", "Acme Corp"} <= set(top.entities)
        assert all(r.text != "Bo lives in Oslo" for r in res.results)  # users stay apart

        hood = await ctx.get_entity_graph("user_1", "Ana", depth=1)
        assert {(h["entity"], h["relation"], h["direction"]) for h in hood[1:]} == {
            ("Acme Corp", "works_at", "out"), ("Lisbon", "lives_in", "out"), ("Python", "uses", "out"),
        }  # fmt: skip

        page = await ctx.list("user_1", include_inactive=True)
        by_text = {m.text: m for m in page.memories}
        assert by_text["To deploy, Ana runs make release"].status is MemoryStatus.DELETED  # 0.1's soft delete
        assert by_text["Ana flew to Berlin on 2 March 2025"].memory_type.value == "episodic"
        assert by_text["Ana works at Acme Corp as a Python developer"].metadata == {"source": "chat"}
        assert (await ctx.list("user_1")).total == 3
        history = await ctx.history(top.memory_id, "user_1")
        assert history[-1].event is HistoryEvent.IMPORT
        assert await ctx.summary("user_1", "conv_1") == "Ana introduced herself."

        with pytest.raises(ValueError, match="not a DeepContext 0.1"):
            await ctx.import_v01(tmp_path / "new.db")


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env={"HOME": str(home), "DEEPCONTEXT_EMBEDDER": "hash"})


def test_cli_imports_a_v01_database_at_the_default_path(tmp_path: Path) -> None:
    default = tmp_path / ".deepcontext" / "memory.db"
    default.parent.mkdir()
    shutil.copy(V01, default)
    p = _cli(tmp_path, "users")
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "DeepContext 0.1 database" in p.stderr and "import-0.1" in p.stderr, p.stderr

    p = _cli(tmp_path, "import-0.1", str(default))
    assert p.returncode == 0, p.stderr
    assert "user_1: 4 entities, 3 relations" in p.stdout, p.stdout
    backup = default.with_name("memory.db.v0.1.bak")
    assert backup.read_bytes() == V01.read_bytes()
    p = _cli(tmp_path, "users")
    assert p.returncode == 0 and p.stdout.split() == ["user_1", "user_2"], p.stderr
    p = _cli(tmp_path, "import-0.1", str(default))  # the new database is not a 0.1 one
    assert p.returncode != 0 and "not a DeepContext 0.1 database" in p.stderr
