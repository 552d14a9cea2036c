"""``deepcontext serve``: the REST API under uvicorn."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import fail, settings_kwargs, state


def server_settings(**overrides: Any) -> Any:
    """Settings from the global options, the environment and ``overrides`` (None values skipped);
    a clean CLI error when they do not validate."""
    from deepcontext.errors import ConfigurationError
    from deepcontext.settings import DeepContextSettings, explain_settings_error

    kw = {**settings_kwargs(), **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return DeepContextSettings(**kw)
    except Exception as exc:
        from pydantic import ValidationError as PydanticValidationError
        from pydantic_settings import SettingsError

        if isinstance(exc, PydanticValidationError | SettingsError):
            fail(explain_settings_error(exc))
        if isinstance(exc, ConfigurationError):
            fail(f"invalid settings: {exc}")
        raise


def export_settings(settings: Any, names: list[str]) -> None:
    """Put settings into ``DEEPCONTEXT_*`` environment variables, for worker processes."""
    import json

    for name in names:
        value = getattr(settings, name)
        if value is None:
            continue
        if hasattr(value, "value"):
            value = value.value
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, dict)):
            text = json.dumps(value)
        else:
            text = str(value)
        os.environ[f"DEEPCONTEXT_{name.upper()}"] = text


@app.command()
def serve(
    host: str = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1, setting server_host)"),
    port: int = typer.Option(None, "--port", help="Port (default 8000, setting server_port)"),
    workers: int = typer.Option(None, "--workers", help="Worker processes (default 1, setting server_workers)"),
    no_auth: bool = typer.Option(False, "--no-auth", help="Serve without API keys: loopback addresses and clients only"),
    cors_origin: list[str] = typer.Option(None, "--cors-origin", help="Allow this browser origin (repeat; default: CORS off)"),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level"),
    log_format: str = typer.Option(
        None, "--log-format", help="text or json: one JSON object per line with the request id (setting log_format)"
    ),
) -> None:
    """Run the REST API (uvicorn). API keys are required unless --no-auth on a loopback address."""
    try:
        import uvicorn
    except ImportError:
        fail("the server needs its extra: pip install 'deepcontext[server]'")
    from deepcontext.errors import DeepContextError
    from deepcontext.server.app import check_bind, create_app

    settings = server_settings(
        server_host=host,
        server_port=port,
        server_workers=workers,
        require_auth=False if no_auth else None,
        cors_origins=cors_origin or None,
        log_format=log_format,
    )
    try:
        check_bind(settings.server_host, settings.require_auth)
        _prepare_database(settings)
    except DeepContextError as exc:
        if state.debug:
            raise
        fail(str(exc), code=2)
    from deepcontext.server.logs import log_config

    common = {
        "host": settings.server_host,
        "port": settings.server_port,
        "log_level": log_level,
        "log_config": log_config(settings.log_format, settings.log_query_strings),
        "proxy_headers": False,
    }
    if settings.server_workers == 1:
        uvicorn.run(create_app(settings), **common)  # type: ignore[arg-type]
        return
    export_settings(
        settings,
        ["database_url", "embedder", "server_host", "server_port", "require_auth", "cors_origins", "debug", "metrics_enabled"],
    )
    with _shared_metrics(settings.metrics_enabled):
        uvicorn.run(
            "deepcontext.server.app:create_app_from_env",
            factory=True,
            workers=settings.server_workers,
            **common,  # type: ignore[arg-type]
        )


@contextmanager
def _shared_metrics(enabled: bool) -> Iterator[None]:
    """A folder where the workers' metrics meet (prometheus-client's multiprocess mode), removed
    when the server stops; one the environment already names is used as it is."""
    if not enabled or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="deepcontext-metrics-") as folder:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
        try:
            yield
        finally:
            del os.environ["PROMETHEUS_MULTIPROC_DIR"]


def _prepare_database(settings: Any) -> None:
    """Open the database once before serving: migrations run here, not in racing workers, and a
    bad URL fails now with a clear message."""
    import asyncio

    from deepcontext.core import DeepContext

    async def go() -> None:
        async with DeepContext(settings=settings):
            pass

    asyncio.run(go())
