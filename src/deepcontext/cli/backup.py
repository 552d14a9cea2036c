"""``backup`` and ``restore``: a consistent copy of a SQLite database, and putting one back.

PostgreSQL has its own tools for this (pg_dump, pg_restore); both commands print them."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import console, database_url, fail, sqlite_file, state

#: pages copied per step of the online backup: small enough that a writer waits only briefly
PAGES_PER_STEP = 256
#: the files SQLite keeps beside a database in WAL mode (or a rollback journal)
SIDE_FILES = ("-wal", "-shm", "-journal")


def _target_url() -> str:
    from deepcontext.settings import DeepContextSettings

    url = database_url(state.db)
    settings = DeepContextSettings(database_url=url) if url else DeepContextSettings()
    return settings.resolved_database_url


def _pg_conninfo(url: str) -> str:
    """The URL as libpq tools read it: no driver suffix, and no password (they take PGPASSWORD)."""
    from deepcontext.store import libpq_conninfo

    return libpq_conninfo(url)


def _postgres_advice(url: str, command: str, path: str) -> None:
    import shlex

    conninfo = shlex.quote(_pg_conninfo(url))
    out = console(stderr=True)
    if command == "backup":
        line = f"pg_dump --format=custom --file={shlex.quote(path)} {conninfo}"
    else:
        line = f"pg_restore --clean --if-exists --no-owner --dbname={conninfo} {shlex.quote(path)}"
    out.print(f"this database is PostgreSQL: `deepcontext {command}` copies SQLite files only; run", markup=False)
    typer.echo(line)
    out.print("(set PGPASSWORD if the server asks for a password)", markup=False)
    raise typer.Exit(2)


def _copy(source: sqlite3.Connection, dest: Path, label: str) -> None:
    """Copy an open database into ``dest`` page by page (SQLite's online backup). The source's
    read transaction stays open from the first page to the last: in WAL mode the copy is that one
    snapshot while writers go on, instead of starting over each time a writer commits."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TimeElapsedColumn

    columns = ("{task.description}", BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    source.execute("BEGIN")
    source.execute("SELECT count(*) FROM sqlite_master").fetchall()
    target = sqlite3.connect(dest)
    try:
        with Progress(*columns, console=console(stderr=True), transient=True) as progress:
            task = progress.add_task(label, total=None)

            def step(_status: int, remaining: int, total: int) -> None:
                progress.update(task, total=total, completed=total - remaining)

            source.backup(target, pages=PAGES_PER_STEP, progress=step)
        # one self-contained file: reading it later leaves no -wal/-shm beside it (the store
        # turns WAL back on when it opens the database)
        target.execute("PRAGMA journal_mode = DELETE")
        problems = [row[0] for row in target.execute("PRAGMA integrity_check")]
    finally:
        target.close()
        source.execute("COMMIT")
    if problems != ["ok"]:
        dest.unlink(missing_ok=True)
        fail(f"the copy failed its integrity check ({'; '.join(problems[:3])}); nothing written")


def _schema_version(conn: sqlite3.Connection) -> int | None:
    """The schema version a deepcontext database records, or None for another file."""
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dc_meta'").fetchone():
            return None
        row = conn.execute("SELECT value FROM dc_meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row else None


def _open_readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60, isolation_level=None)


def _partial(dest: Path) -> Path:
    return dest.with_name(dest.name + ".partial")


def _sqlite_target(verb: str, other: Path) -> Path:
    """The SQLite file of --db; for PostgreSQL, print the pg_dump / pg_restore command and stop."""
    url = _target_url()
    path = sqlite_file(url)
    if path is None:
        if url.startswith("postgres"):
            _postgres_advice(url, verb, str(other))
        what, tool = ("back up", "pg_dump") if verb == "backup" else ("restore into", "pg_restore")
        fail(f"cannot {what} {url}: only a SQLite file or PostgreSQL (with {tool})")
    assert path is not None
    return path


@app.command()
def backup(
    dest: str = typer.Argument(..., help="File to write the copy to"),
    force: bool = typer.Option(False, "--force", help="Replace DEST if it exists"),
) -> None:
    """Copy the database (--db) to DEST while it stays in use: SQLite's online backup, checked
    with PRAGMA integrity_check. For PostgreSQL it prints the pg_dump command to run."""
    target = Path(dest).expanduser()
    path = _sqlite_target("backup", target)
    if not path.exists():
        fail(f"no database at {path}: check --db (or DEEPCONTEXT_DATABASE_URL)")
    if target.is_dir():
        fail(f"{target} is a folder: give the file to write")
    if target.resolve() == path.resolve():
        fail("DEST is the database itself")
    if target.exists() and not force:
        fail(f"{target} already exists: pass --force to replace it")
    if not target.parent.is_dir():
        fail(f"no folder {target.parent}")
    source = _open_readonly(path)
    try:
        if _schema_version(source) is None:
            fail(f"{path} is not a deepcontext database")
        partial = _partial(target)
        partial.unlink(missing_ok=True)
        _copy(source, partial, "backup")
    finally:
        source.close()
    partial.replace(target)
    size = target.stat().st_size
    console().print(f"backed up {path} to {target} ({size / 1e6:.1f} MB, integrity check ok)", markup=False, soft_wrap=True)


@app.command()
def restore(
    src: str = typer.Argument(..., help="A copy made by `deepcontext backup`"),
    force: bool = typer.Option(False, "--force", help="Replace an existing database (kept as <name>.before-restore)"),
) -> None:
    """Put a backup in place of the database (--db). An existing database is replaced only with
    --force and kept beside it as <name>.before-restore; saved vector graphs are removed (they are
    rebuilt). Stop servers using the database first. For PostgreSQL it prints the pg_restore command."""
    source_path = Path(src).expanduser()
    path = _sqlite_target("restore", source_path)
    if not source_path.is_file():
        fail(f"no file at {source_path}")
    if source_path.resolve() == path.resolve():
        fail("SRC is the database itself")
    from deepcontext.store import latest_version

    try:
        source = _open_readonly(source_path)
    except sqlite3.Error as exc:
        fail(f"cannot open {source_path}: {exc}")
        return
    try:
        version = _schema_version(source)
        if version is None:
            fail(f"{source_path} is not a deepcontext database")
        elif version > latest_version():
            fail(
                f"{source_path} has schema version {version}, newer than this deepcontext supports "
                f"({latest_version()}): upgrade deepcontext to restore it"
            )
        if path.exists() and not force:
            fail(f"a database exists at {path}: pass --force to replace it (it is kept as {path.name}.before-restore)")
        if not path.parent.is_dir():
            fail(f"no folder {path.parent}")
        partial = _partial(path)
        partial.unlink(missing_ok=True)
        _copy(source, partial, "restore")
    finally:
        source.close()
    kept = None
    if path.exists():
        # fold the WAL into the file first: what it held belongs to the copy kept aside
        old = sqlite3.connect(path, timeout=60)
        try:
            old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.DatabaseError:
            pass  # not a database after all: it is kept aside as it is
        finally:
            old.close()
        kept = path.with_name(path.name + ".before-restore")
        path.replace(kept)
    # the old side files must not meet the new file; kept with the old one, whatever they still hold
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.exists() and kept is not None:
            side.replace(f"{kept}{suffix}")
        side.unlink(missing_ok=True)
    partial.replace(path)
    # saved HNSW graphs describe the replaced rows: the next start rebuilds them from the database
    shutil.rmtree(Path(f"{path}.vectors"), ignore_errors=True)
    out = console()
    out.print(f"restored {source_path} to {path} (schema version {version})", markup=False, soft_wrap=True)
    if kept is not None:
        out.print(f"the replaced database is kept as {kept}", markup=False, soft_wrap=True)
