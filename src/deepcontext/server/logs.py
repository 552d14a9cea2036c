"""The server's log: request ids, access lines without query strings, and JSON lines.

``deepcontext serve`` hands :func:`log_config` to uvicorn. Every record logged while a request
runs carries its id (``X-Request-ID``: the client's when it is a short safe token, else a new
one). The access log leaves out the query strings of ``/v1`` and ``/ui`` requests, which may name
users and carry search text, unless ``log_query_strings`` is on.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import uuid
from collections.abc import Iterable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

__all__ = ["AccessFilter", "JsonFormatter", "RequestIdFilter", "current_request_id", "log_config", "request_id_for"]

#: an id a client may choose: short, and nothing that could forge a log line or a header
SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
#: paths whose query strings stay out of the access log by default
PRIVATE_PREFIXES = ("/v1/", "/v1?", "/ui/", "/ui?")

current_request_id: ContextVar[str | None] = ContextVar("deepcontext_request_id", default=None)


def request_id_for(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The client's ``X-Request-ID`` when it is a safe short token, else a new id."""
    for name, value in headers:
        if name.lower() == b"x-request-id":
            text = value.decode("latin-1")
            if SAFE_REQUEST_ID.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` (None outside a request) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class AccessFilter(RequestIdFilter):
    """uvicorn's access records, with the query strings of /v1 and /ui requests left out."""

    def __init__(self, query_strings: bool = False) -> None:
        super().__init__()
        self.query_strings = query_strings

    def filter(self, record: logging.LogRecord) -> bool:
        super().filter(record)
        args = record.args
        # uvicorn logs (client, method, path with query, http version, status)
        if not self.query_strings and isinstance(args, tuple) and len(args) == 5:
            path = str(args[2])
            if "?" in path and (path + "/").startswith(PRIVATE_PREFIXES):
                record.args = (args[0], args[1], path.split("?", 1)[0], args[3], args[4])
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id; access lines add
    client, method, path and status."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = getattr(record, "request_id", None)
        if rid:
            out["request_id"] = rid
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            out.update(client=args[0], method=args[1], path=args[2], http_version=args[3], status=args[4])
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def log_config(log_format: str = "text", query_strings: bool = False) -> dict[str, Any]:
    """uvicorn's logging configuration with request ids and the access filter; ``json`` writes
    every line (deepcontext's own loggers too) as a JSON object."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {
        "request_id": {"()": f"{__name__}.RequestIdFilter"},
        "access": {"()": f"{__name__}.AccessFilter", "query_strings": query_strings},
    }
    config["handlers"]["default"]["filters"] = ["request_id"]
    config["handlers"]["access"]["filters"] = ["access"]
    if log_format == "json":
        json_formatter = {"()": f"{__name__}.JsonFormatter"}
        config["formatters"] = {"default": json_formatter, "access": dict(json_formatter)}
        config["loggers"]["deepcontext"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
