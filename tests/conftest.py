"""Shared pytest fixtures."""

from __future__ import annotations

import functools
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # `tests.*` helpers import under plain `pytest` too, not only `python -m pytest`
    sys.path.insert(0, _ROOT)

# =====================================================================================================
# Database backends (store work, issue 9): `db_url` runs a test on SQLite and on PostgreSQL.
#
#   db_url           parametrized ["sqlite", "postgres"]: a fresh, empty database per test
#                    (SQLite: a file in tmp_path; PostgreSQL: CREATE DATABASE dct_<random>, dropped after)
#   pg_url           the PostgreSQL one only
#   pg_database      factory for more fresh PostgreSQL databases in one test
#
# The server: DEEPCONTEXT_TEST_POSTGRES_URL (default postgresql://postgres@127.0.0.1:5432/test), with
# the pgvector extension available. Missing server or extension: the PostgreSQL tests skip (one line
# in the summary says why), or FAIL when DEEPCONTEXT_REQUIRE_POSTGRES=1 (CI sets it).
# A fresh database costs ~25 ms to create and ~0.2 s to migrate here.
# =====================================================================================================

PG_ADMIN_URL = os.environ.get("DEEPCONTEXT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
PG_REQUIRED = os.environ.get("DEEPCONTEXT_REQUIRE_POSTGRES", "") == "1"


def _pg_conninfo(database: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(PG_ADMIN_URL)
    if database is not None:
        u = u.set(database=database)
    return u.set(drivername="postgresql").render_as_string(hide_password=False)


@functools.cache
def postgres_problem() -> str | None:
    """None when PostgreSQL answers and offers the vector extension; otherwise what is missing."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install 'deepcontext[postgres]')"
    try:
        with psycopg.connect(_pg_conninfo(), connect_timeout=3, autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
                return "the server has no pgvector extension (run scripts/install-pgvector.sh as root)"
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"no PostgreSQL server at {PG_ADMIN_URL} ({first})"
    return None


def require_postgres() -> None:
    """Skip (or fail, when DEEPCONTEXT_REQUIRE_POSTGRES=1) the calling test if PostgreSQL is unusable."""
    problem = postgres_problem()
    if problem is None:
        return
    if PG_REQUIRED:
        pytest.fail(f"DEEPCONTEXT_REQUIRE_POSTGRES=1 but {problem}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {problem}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # read from the skip reports, which reach the controller when tests run in several processes
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if reason.startswith("Skipped: PostgreSQL tests skipped") or reason.startswith("PostgreSQL tests skipped"):
            terminalreporter.write_line(reason.removeprefix("Skipped: "), yellow=True, bold=True)
            return


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The admin URL of a usable PostgreSQL server (skips or fails the test otherwise)."""
    require_postgres()
    return PG_ADMIN_URL


@pytest.fixture
def pg_database(postgres_server: str) -> Iterator[Callable[[], str]]:
    """A factory of fresh, empty PostgreSQL databases; each is dropped when the test ends."""
    import psycopg

    names: list[str] = []

    def create() -> str:
        name = f"dct_{secrets.token_hex(6)}"
        with psycopg.connect(_pg_conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        names.append(name)
        return _pg_conninfo(name)

    yield create
    with psycopg.connect(_pg_conninfo(), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_database: Callable[[], str]) -> str:
    """A fresh, empty PostgreSQL database."""
    return pg_database()


@pytest.fixture
def pg(pg_url: str) -> Iterator[Any]:
    """A migrated PostgresStore on a fresh database."""
    from deepcontext.store.postgres import PostgresStore
    from tests.store_helpers import open_test_store

    s = open_test_store(pg_url)
    assert isinstance(s, PostgresStore)
    yield s
    s.close()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'deepcontext.db'}"
    return request.getfixturevalue("pg_database")()


_PG_FIXTURES = {"postgres_server", "pg_database", "pg_url", "pg"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs PostgreSQL ``postgres`` (its fixtures, or a "postgres" parameter
    such as db_url's), so ``-m "not postgres"`` leaves them out of a quick SQLite-only run."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        if _PG_FIXTURES & set(getattr(item, "fixturenames", ())) or "postgres" in params:
            item.add_marker(pytest.mark.postgres)


# ==================================== end of the database section ====================================
