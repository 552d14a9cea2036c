"""DeepContext 0.1's ``alembic upgrade head`` / ``current`` / ``downgrade`` over deepcontext's own
migrations.

deepcontext's schema is not a chain of alembic revisions: it is the ordered, transactional steps of
:mod:`deepcontext.store.migrations`, applied when a database is opened and recorded in ``dc_meta``.
The repository's ``alembic.ini`` points alembic at an ``env.py`` that hands its command to
:func:`run`, so the commands 0.1's documentation taught keep working where they mean something:

- ``alembic upgrade head`` applies the missing migrations (what opening the database does);
- ``alembic current`` prints the schema version and whether it is the latest;
- ``alembic downgrade ...`` and every other command (``revision``, ``stamp``, ``--sql``) refuse with
  one message saying what to do instead: the migrations only go forward, and there are no
  revision files to generate.

The database is ``-x db=...`` (a SQLite path or URL), else ``sqlalchemy.url`` in ``alembic.ini``,
else deepcontext's settings (``DEEPCONTEXT_DATABASE_URL``, default ``~/.deepcontext/memory.db``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["HEAD_TARGETS", "run"]

#: the upgrade targets that mean "every migration"
HEAD_TARGETS = ("head", "heads")

_FORWARD_ONLY = (
    "deepcontext's schema migrations only go forward, so there is no downgrade: to go back, restore "
    "the copy of the database taken before the upgrade (or `deepcontext export` each user there and "
    "`deepcontext import` into a database of the older version)"
)
_NOT_ALEMBIC = (
    "deepcontext's schema is its own list of ordered migrations (deepcontext.store.migrations), not "
    "alembic revisions; they are applied when a database is opened. Supported here: `alembic upgrade "
    "head` (apply them now) and `alembic current` (show the schema version)"
)


def _command(context: Any) -> str:
    """The alembic command running this env.py: from the command line's options, else from the
    callback alembic hands the environment (when a command is called from Python)."""
    opts = getattr(context.config, "cmd_opts", None)
    cmd = getattr(opts, "cmd", None)
    if cmd:
        return str(getattr(cmd[0], "__name__", ""))
    env = getattr(context, "_proxy", None)
    fn = getattr(env, "context_opts", {}).get("fn")
    name = str(getattr(fn, "__name__", ""))
    return "current" if name == "display_version" else name


def _target(context: Any) -> str:
    """The revision asked for, as typed (alembic resolves "head" to None in a directory without
    revision files)."""
    opts = getattr(context.config, "cmd_opts", None)
    if getattr(opts, "cmd", None):
        return str(getattr(opts, "revision", "") or "")
    env = getattr(context, "_proxy", None)
    return str(getattr(env, "context_opts", {}).get("destination_rev") or "")


def _database_url(context: Any) -> str:
    url = context.get_x_argument(as_dictionary=True).get("db") or context.config.get_main_option("sqlalchemy.url") or ""
    url = url.strip()
    if url and "://" not in url:  # a bare path, as the deepcontext CLI's --db takes it
        url = f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


def run(context: Any) -> None:
    """Carry out the alembic command of ``context`` (alembic's ``context`` module in env.py)."""
    from alembic.util import CommandError

    from deepcontext.errors import DeepContextError

    command = _command(context)
    try:
        if command == "upgrade":
            target = _target(context)
            if context.is_offline_mode():
                raise CommandError(
                    "`alembic upgrade --sql` is not available: deepcontext's migrations are run against "
                    "the database (some steps read it first); run `alembic upgrade head` on a copy instead"
                )
            if target not in HEAD_TARGETS:
                raise CommandError(
                    f"`alembic upgrade {target}` is not available: deepcontext applies all of its "
                    "migrations at once; run `alembic upgrade head`"
                )
            _upgrade(context)
        elif command == "current":
            _current(context)
        elif command == "downgrade":
            raise CommandError(_FORWARD_ONLY)
        else:
            raise CommandError(f"`alembic {command or '...'}` is not available: {_NOT_ALEMBIC}")
    except (DeepContextError, ValueError) as exc:  # settings errors (pydantic's) are ValueErrors
        raise CommandError(str(exc)) from exc


def _settings(context: Any) -> Any:
    from deepcontext.settings import DeepContextSettings

    url = _database_url(context)
    return DeepContextSettings(database_url=url) if url else DeepContextSettings()


def _open(settings: Any) -> tuple[Any, Any]:
    """The store deepcontext would open for ``settings`` (its vectors sized by the configured
    embedder, as they would be), and that embedder."""
    from deepcontext.embed import build_embedder
    from deepcontext.store import open_store

    embedder = build_embedder(settings)
    try:
        return open_store(settings, embedder.dimensions), embedder
    except BaseException:
        embedder.close()
        raise


def _where(settings: Any) -> str:
    from deepcontext.store import shown_url

    return shown_url(settings.resolved_database_url)


def _upgrade(context: Any) -> None:
    from deepcontext.store import latest_version

    settings = _settings(context)
    if not settings.database_url:
        settings.data_dir.mkdir(parents=True, exist_ok=True)  # as deepcontext does for its default file
    store, embedder = _open(settings)
    try:
        before = store.schema_version()
        after = store.migrate()
    finally:
        store.close()
        embedder.close()
    head = latest_version()
    if before == after:
        context.config.print_stdout(f"{_where(settings)}: deepcontext schema version {after} (head), nothing to do")
    else:
        context.config.print_stdout(
            f"{_where(settings)}: deepcontext schema upgraded from version {before} to {after}"
            + (" (head)" if after == head else "")
        )


def _current(context: Any) -> None:
    from deepcontext.store import latest_version, sqlite_path

    settings = _settings(context)
    path = sqlite_path(settings.resolved_database_url)
    if settings.backend == "sqlite" and (path is None or not path.is_file()):
        # opening would create an empty file; say there is none instead
        context.config.print_stdout(f"{_where(settings)}: no database (`alembic upgrade head` creates it)")
        return
    store, embedder = _open(settings)
    try:
        version = store.schema_version()
    finally:
        store.close()
        embedder.close()
    head = latest_version()
    if version == head:
        state = " (head)"
    elif version < head:
        state = f" (head is {head}: run `alembic upgrade head`, or open it with deepcontext)"
    else:
        state = f" (newer than this deepcontext's {head}: upgrade deepcontext)"
    context.config.print_stdout(f"{_where(settings)}: deepcontext schema version {version}{state}")
