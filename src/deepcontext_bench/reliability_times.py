"""The ``times`` reliability scenario: a time from the last microseconds of year 9999 (which a float of
epoch seconds rounds into year 10000) offered at every entry must be refused with a
ValidationError, never stored; and on SQLite a row already holding such a time (an older version
wrote them) must not break any read or write of its user."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from deepcontext_bench.reliability_checks import Outcome, backend_name, open_context, query_rows

#: the time each entry is offered, in the forms each takes
END_OF_9999 = datetime(9999, 12, 31, 23, 59, 59, 999990, tzinfo=UTC)
#: what it was stored as (epoch seconds): year 10000
YEAR_10000 = 253402300800.0
MSG = [{"role": "user", "name": "Ana", "content": "I live in Porto and work at Globex"}]


async def run_times(url: str) -> Outcome:
    from deepcontext.errors import ValidationError

    out = Outcome("times", backend_name(url))
    async with open_context(url) as ctx:
        await ctx.add(MSG, user_id="base")
        export = [r async for r in ctx.export("base")]
        crafted = [dict(r, said_at=END_OF_9999.isoformat()) if r["record"] == "turns" else r for r in export]
        west = timezone(timedelta(hours=-14))
        entries: dict[str, Callable[[], Awaitable[Any]]] = {
            "add(timestamp=)": lambda: ctx.add(MSG, "t", timestamp=END_OF_9999),
            "add(timestamp=epoch seconds)": lambda: ctx.add(MSG, "t", timestamp=YEAR_10000 - 0.00001),
            "add(timestamp= west of UTC)": lambda: ctx.add(MSG, "t", timestamp=datetime(9999, 12, 31, 23, tzinfo=west)),
            "message timestamp": lambda: ctx.add([{**MSG[0], "timestamp": END_OF_9999.isoformat()}], "t"),
            "add(expires_at=datetime.max)": lambda: ctx.add(MSG, "t", expires_at=datetime.max),
            "search(before=datetime.max)": lambda: ctx.search("Porto", "base", before=datetime.max),
            "list(after=)": lambda: ctx.list("base", after=END_OF_9999),
            "import of a crafted export": lambda: ctx.import_records(crafted, user_id="t"),
        }
        for name, call in entries.items():
            out.tried += 1
            try:
                await call()
                out.failed += 1
                out.notes.append(f"{name}: accepted")
            except ValidationError:
                pass
            except Exception as exc:  # noqa: BLE001 - counted
                out.failed += 1
                out.notes.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
        if "t" in await ctx.users():
            out.lost += 1  # something was written
            out.notes.append("a refused time left rows behind")
    for args, stdin in (
        (["add", "-u", "t", "--timestamp", END_OF_9999.isoformat()], json.dumps(MSG)),
        (["add", "-u", "t"], "\n".join(json.dumps({**m, "timestamp": YEAR_10000 - 0.00001}) for m in MSG)),
    ):
        out.tried += 1
        p = subprocess.run(
            [sys.executable, "-m", "deepcontext", "--db", url, "--embedder", "hash", *args],
            input=stdin, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if p.returncode == 0 or "Traceback" in p.stderr or "9998" not in p.stderr + p.stdout:
            out.failed += 1
            out.notes.append(f"deepcontext {' '.join(args[:3])}: exit {p.returncode} {p.stderr.strip()[-120:]}")
    if backend_name(url) == "sqlite":  # a float rounds into year 10000; PostgreSQL keeps the exact instant
        await _stored_row(url, out)
    return out


async def _stored_row(url: str, out: Outcome) -> None:
    """Every time of one memory and one turn set to year 10000 behind the library's back; then
    each read and write of the user must still answer."""
    async with open_context(url) as ctx:
        await ctx.add([{"role": "user", "content": "My sister Eva lives in Braga"}], user_id="old")
        await ctx.add(MSG, user_id="old")
        mid = query_rows(ctx, "SELECT min(id) FROM memories WHERE user_id = 'old'")[0][0]
        tid = query_rows(ctx, "SELECT min(id) FROM turns WHERE user_id = 'old'")[0][0]
        from sqlalchemy import text

        with ctx.store.engine.begin() as conn:
            conn.execute(
                text("UPDATE memories SET said_at = :t, occurred_at = :t, valid_from = :t, expires_at = :t, "
                     "reinforced_at = :t, created_at = :t, updated_at = :t WHERE id = :m"),
                {"t": YEAR_10000, "m": mid},
            )  # fmt: skip
            conn.execute(text("UPDATE turns SET said_at = :t, created_at = :t WHERE id = :i"), {"t": YEAR_10000, "i": tid})
    async with open_context(url) as ctx:  # a fresh process's caches: every read goes to the row

        async def export() -> list[Any]:
            return [r async for r in ctx.export("old")]

        reads: dict[str, Callable[[], Awaitable[Any]]] = {
            "search": lambda: ctx.search("Where does Eva live?", user_id="old"),
            "list": lambda: ctx.list("old"),
            "get": lambda: ctx.get(int(mid), "old"),
            "turns": lambda: ctx.turns("old"),
            "context": lambda: ctx.context("Where does Eva live?", user_id="old"),
            "export": export,
            "lifecycle": lambda: ctx.run_lifecycle("old", consolidate=True),
            "add": lambda: ctx.add([{"role": "user", "content": "I also work at Initech"}], user_id="old"),
        }
        for name, call in reads.items():
            out.tried += 1
            started = time.perf_counter()
            try:
                await call()
            except Exception as exc:  # noqa: BLE001 - counted
                out.failed += 1
                out.notes.append(f"{name} with a stored year-10000 time: {type(exc).__name__}: {str(exc)[:120]}")
            out.latencies_ms.append((time.perf_counter() - started) * 1000)
