"""Database URLs as the rest of the package needs them: shown without a password, the SQLite file
they name, the connection string libpq tools read. Parsing is SQLAlchemy's, kept inside the store."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["libpq_conninfo", "shown_url", "sqlite_path"]


def shown_url(url: str) -> str:
    """``url`` without its password, for logs and messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: whoever opens it refuses it later
        return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite database URL (None for another backend, an in-memory database or a
    malformed URL, which the engine reports itself when it opens it)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


def libpq_conninfo(url: str) -> str:
    """A PostgreSQL URL as libpq tools read it: no driver suffix, and no password (they take
    PGPASSWORD)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url).set(drivername="postgresql")._replace(password=None)
    return parsed.render_as_string(hide_password=False)
