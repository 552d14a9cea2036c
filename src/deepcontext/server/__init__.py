"""The REST API (FastAPI) and the MCP server.

``create_app(settings_or_ctx)`` builds the ASGI app; ``deepcontext serve`` runs it under uvicorn and
``deepcontext mcp`` runs the MCP server. FastAPI and the MCP SDK are imported only when these are
used (``pip install 'deepcontext[server]'``): importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepcontext.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from deepcontext.server.app import create_app

        return create_app
    raise AttributeError(f"module 'deepcontext.server' has no attribute {name!r}")
