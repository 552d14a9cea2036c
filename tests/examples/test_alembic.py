"""DeepContext 0.1's documented alembic commands, run with the real ``alembic`` against temp SQLite
files: ``upgrade head`` applies deepcontext's migrations, ``current`` reports the version, the rest
refuse with one message saying what to do instead."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.util import CommandError

from deepcontext import SyncDeepContext
from deepcontext.store.migrations import latest_version
from tests.examples.conftest import ROOT, Run

pytestmark = pytest.mark.slow  # example programs run as processes, as a user runs them

HEAD = latest_version()


def alembic(run: Run, db: Path, *args: str) -> tuple[int, str]:
    p = run(["-m", "alembic", "-x", f"db={db}", *args])
    return p.returncode, p.stdout + p.stderr


def test_upgrade_head_creates_and_migrates_then_current_reports_it(run: Run, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    code, out = alembic(run, db, "current")
    assert code == 0 and "no database" in out
    assert not db.exists()  # asking does not create it

    code, out = alembic(run, db, "upgrade", "head")
    assert code == 0, out
    assert f"upgraded from version 0 to {HEAD} (head)" in out
    code, out = alembic(run, db, "current")
    assert code == 0 and f"schema version {HEAD} (head)" in out
    code, out = alembic(run, db, "upgrade", "head")
    assert code == 0 and "nothing to do" in out

    # the database is deepcontext's, ready to use
    with SyncDeepContext(database_url=f"sqlite:///{db}", embedder="hash") as ctx:
        assert ctx.store.schema_version() == HEAD
        ctx.add([{"role": "user", "content": "I work at Acme Corp"}], user_id="u1")
        assert ctx.search("where do I work?", user_id="u1").total >= 1


def test_the_database_comes_from_the_settings_without_x_db(run: Run, tmp_path: Path) -> None:
    db = tmp_path / "from-env.db"
    p = run(["-m", "alembic", "upgrade", "head"], env={"DEEPCONTEXT_DATABASE_URL": f"sqlite:///{db}"})
    assert p.returncode == 0, p.stderr
    assert db.is_file() and str(db) in p.stdout


def test_downgrade_and_other_commands_refuse_with_what_to_do(run: Run, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    assert alembic(run, db, "upgrade", "head")[0] == 0
    before = db.read_bytes()

    code, out = alembic(run, db, "downgrade", "-1")
    assert code != 0 and "only go forward" in out and "restore" in out
    for args, says in [
        (("upgrade", "+1"), "run `alembic upgrade head`"),
        (("upgrade", "head", "--sql"), "`alembic upgrade --sql` is not available"),
        (("revision", "--autogenerate", "-m", "x"), "not alembic revisions"),
        (("revision", "-m", "x"), "not alembic revisions"),
        (("stamp", "head"), "not alembic revisions"),
    ]:
        code, out = alembic(run, db, *args)
        assert code != 0, args
        assert says in out, (args, out)
        assert "Traceback" not in out
    assert not (ROOT / "scripts" / "alembic" / "versions").exists()  # no revision file was written
    assert db.read_bytes() == before


def test_a_deepcontext_01_database_is_refused_naming_the_import_command(run: Run, tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(ROOT / "tests" / "fixtures" / "deepcontext-0.1.db", db)
    before = db.read_bytes()
    for args in (("upgrade", "head"), ("current",)):
        code, out = alembic(run, db, *args)
        assert code != 0
        assert f"deepcontext import-0.1 {db}" in out
    assert db.read_bytes() == before  # not migrated, not touched


def test_the_commands_called_from_python_behave_the_same(tmp_path: Path) -> None:
    out = io.StringIO()
    cfg = Config(str(ROOT / "alembic.ini"), stdout=out)
    cfg.set_main_option("sqlalchemy.url", f"sqlite:///{tmp_path}/api.db")
    command.upgrade(cfg, "head")
    command.current(cfg)
    assert f"upgraded from version 0 to {HEAD} (head)" in out.getvalue()
    assert f"schema version {HEAD} (head)" in out.getvalue()
    with pytest.raises(CommandError, match="only go forward"):
        command.downgrade(cfg, "-1")
