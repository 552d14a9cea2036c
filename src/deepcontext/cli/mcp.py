"""``deepcontext mcp``: the MCP server over stdio (default) or streamable HTTP (``--http``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import fail, state
from deepcontext.cli.serve import server_settings

if TYPE_CHECKING:
    from deepcontext.settings import DeepContextSettings


@app.command()
def mcp(
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"),
    host: str = typer.Option(None, "--host", help="HTTP address (default 127.0.0.1, setting server_host)"),
    port: int = typer.Option(None, "--port", help="HTTP port (default 8000, setting server_port)"),
    no_auth: bool = typer.Option(False, "--no-auth", help="HTTP without API keys: loopback addresses and clients only"),
    user: str = typer.Option(None, "--user", "-u", help="Default user of the tools (setting mcp_default_user)"),
    tenant: str = typer.Option(None, "--tenant", help="Tenant of keyless calls: stdio, --no-auth (setting local_tenant)"),
) -> None:
    """Run the MCP server (tools: add_memories, search_memories, get_context, list_memories,
    delete_memory, graph_neighbours)."""
    try:
        import mcp as _mcp_sdk  # noqa: F401
    except ImportError:
        fail("the MCP server needs its extra: pip install 'deepcontext[server]'")
    import asyncio

    from deepcontext.errors import DeepContextError

    settings = server_settings(
        server_host=host,
        server_port=port,
        require_auth=False if no_auth else None,
        mcp_default_user=user,
        local_tenant=tenant,
    )
    try:
        asyncio.run(_serve_http(settings) if http else _serve_stdio(settings))
    except DeepContextError as exc:
        if state.debug:
            raise
        fail(str(exc), code=2)


async def _serve_stdio(s: DeepContextSettings) -> None:
    from deepcontext.core import DeepContext
    from deepcontext.server.mcp_server import build_mcp_server, local_scope_resolver
    from deepcontext.server.tenancy import check_external_user

    if s.mcp_default_user is not None:
        check_external_user(s.mcp_default_user)
    async with DeepContext(settings=s) as ctx:
        server = build_mcp_server(
            ctx,
            local_scope_resolver(s.local_tenant),
            default_user=s.mcp_default_user,
        )
        await server.run_stdio_async()


async def _serve_http(s: DeepContextSettings) -> None:
    import uvicorn

    from deepcontext.core import DeepContext
    from deepcontext.server.app import check_bind
    from deepcontext.server.mcp_server import http_app
    from deepcontext.server.tenancy import check_external_user

    check_bind(s.server_host, s.require_auth)
    if s.mcp_default_user is not None:
        check_external_user(s.mcp_default_user)
    async with DeepContext(settings=s) as ctx:
        app = http_app(
            ctx,
            require_auth=s.require_auth,
            local_tenant=s.local_tenant,
            default_user=s.mcp_default_user,
            host=s.server_host,
        )
        config = uvicorn.Config(app, host=s.server_host, port=s.server_port, proxy_headers=False, log_level="info")
        await uvicorn.Server(config).serve()
