"""The server's log: `serve --log-format json` writes one JSON object per line with the request id;
the access log leaves out the query strings of /v1 and /ui unless told otherwise."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx

from deepcontext.server.logs import AccessFilter
from tests.server.helpers import Api, cli_env, serve
from tests.support.cli import run_cli


def test_json_lines_with_request_ids(tmp_path: Path) -> None:
    db = tmp_path / "logs.db"
    args = ["--db", str(db), "--embedder", "hash", "serve", "--no-auth", "--log-format", "json"]
    with serve(args, env=cli_env()) as server:
        chosen = httpx.get(f"{server.url}/v1/memories?user_id=ana&query=secret", headers={"X-Request-ID": "trace-42.a"})
        forged = httpx.get(f"{server.url}/v1/users", headers={"X-Request-ID": 'x" injected\\n{"level":"error"}'})
        plain = httpx.get(f"{server.url}/health?probe=1")
        server.proc.terminate()
        output = server.proc.communicate(timeout=20)[0].decode()
    assert chosen.headers["x-request-id"] == "trace-42.a"
    generated = forged.headers["x-request-id"]
    assert len(generated) == 32 and generated != plain.headers["x-request-id"]

    lines = [json.loads(line) for line in output.splitlines() if line.strip()]
    access = {line["request_id"]: line for line in lines if line["logger"] == "uvicorn.access"}
    assert access["trace-42.a"]["path"] == "/v1/memories" and access["trace-42.a"]["status"] == 200
    assert access[generated]["path"] == "/v1/users"
    # outside /v1 and /ui the query string is kept
    assert access[plain.headers["x-request-id"]]["path"] == "/health?probe=1"
    assert "secret" not in output and "injected" not in output
    assert any(line["message"].startswith("Application startup complete") for line in lines)


def test_query_strings_when_asked() -> None:
    def logged(filter_: AccessFilter, path: str) -> str:
        record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                                   ("127.0.0.1:1", "GET", path, "1.1", 200), None)  # fmt: skip
        filter_.filter(record)
        return record.getMessage()

    assert "q=jazz" not in logged(AccessFilter(), "/ui/users/ana?q=jazz")
    assert "/ui/users/ana" in logged(AccessFilter(), "/ui/users/ana?q=jazz")
    assert "q=jazz" in logged(AccessFilter(query_strings=True), "/v1/search?q=jazz")


async def test_request_id_in_process(local_api: Api) -> None:
    async with local_api.client() as c:
        kept = await c.get("/v1/users", headers={"X-Request-ID": "abc-123"})
        long = await c.get("/v1/users", headers={"X-Request-ID": "a" * 200})
    assert kept.headers["x-request-id"] == "abc-123"
    assert long.headers["x-request-id"] != "a" * 200


def test_unknown_log_format_is_refused(tmp_path: Path) -> None:
    refused = run_cli(["--db", str(tmp_path / "x.db"), "serve", "--log-format", "xml"], timeout=60)
    assert refused.returncode == 1 and "log_format" in refused.stderr and "'text' or 'json'" in refused.stderr
