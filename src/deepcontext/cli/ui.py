"""``deepcontext ui``: the web inspector of the local database, on loopback."""

from __future__ import annotations

import typer

from deepcontext.cli.app import app
from deepcontext.cli.common import fail, state
from deepcontext.cli.serve import _prepare_database, server_settings


@app.command()
def ui(
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1 (default: a free one)"),
    auth: bool = typer.Option(
        False, "--auth", help="Require an API key (sign in with one) instead of serving this machine's clients without"
    ),
    open_browser: bool = typer.Option(False, "--open", help="Open the inspector in the default browser"),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level"),
) -> None:
    """Start the web inspector on 127.0.0.1 and print its address (Ctrl-C stops it)."""
    import socket

    try:
        import uvicorn
    except ImportError:
        fail("the inspector needs the server extra: pip install 'deepcontext[server]'")
    from deepcontext.errors import DeepContextError
    from deepcontext.server.app import create_app
    from deepcontext.server.inspector import available

    if not available():
        fail("the inspector needs jinja2: pip install 'deepcontext[server]'")
    settings = server_settings(server_host="127.0.0.1", server_port=port or None, require_auth=auth, server_workers=1)
    try:
        _prepare_database(settings)
    except DeepContextError as exc:
        if state.debug:
            raise
        fail(str(exc), code=2)
    # bind first: the address printed is the one served, even for a port the system picked
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", code=2)
    address = f"http://127.0.0.1:{sock.getsockname()[1]}/ui/"
    typer.echo(f"DeepContext inspector: {address}" + ("" if auth else " (no key needed from this machine)"), err=False)
    if open_browser:
        import webbrowser

        webbrowser.open(address)
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level=log_level, proxy_headers=False))
    server.run(sockets=[sock])
