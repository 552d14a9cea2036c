"""mem0 beside us (`--peer mem0`): the same turns and questions in the same process, no network.
Skipped, with one message, where mem0 is not installed (it is in the bench extra, not dev)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from deepcontext_bench.locomo import KS, run_locomo
from deepcontext_bench.mem0_peer import NetworkBlockedError, mem0_version, network_guard
from tests.support.cli import run_cli

pytestmark = pytest.mark.skipif(
    mem0_version() is None, reason="mem0 is not installed (pip install -e '.[bench]'): the mem0 comparison is not tested"
)

DATA = Path(__file__).parent / "mini_locomo.json"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path), "DEEPCONTEXT_EMBEDDER": "hash", "COLUMNS": "250"}


def test_guard_refuses_the_network_even_when_the_caller_swallows_the_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with pytest.raises(NetworkBlockedError, match="192.0.2.1"), network_guard():
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass  # loopback stays allowed
            try:  # a library that catches the refusal still fails the run
                socket.create_connection(("192.0.2.1", 443), timeout=5)
            except OSError:
                pass
    with pytest.raises(NetworkBlockedError), network_guard():
        socket.getaddrinfo("example.com", 443)
    # outside the guard nothing is changed
    assert socket.socket.connect.__qualname__ == "socket.connect"


@pytest.mark.slow  # both systems end to end
async def test_locomo_runs_mem0_on_the_same_questions(tmp_path: Path) -> None:
    result = await run_locomo(
        DATA, db_url=f"sqlite:///{tmp_path}/mini.db", settings={"embedder": "hash"}, baselines=False, peer="mem0"
    )
    theirs = result["systems"][result["peer"]]
    assert result["peer"] == f"mem0 {mem0_version()}"
    assert theirs["questions"] == result["systems"]["deepcontext"]["questions"] == 14
    # 21 turns, no score threshold: every turn is among mem0's top 50, so recall@50 is complete
    # only if every returned id mapped back to its turn
    assert theirs["recall"][50] == pytest.approx(100.0)
    assert theirs["recall"][5] <= theirs["recall"][10] <= theirs["recall"][25] <= theirs["recall"][50]
    assert theirs["ingest_turns_per_s"] > 0 and 0 < theirs["search_ms_p50"] <= theirs["search_ms_p95"] <= theirs["search_ms_p99"]
    ratios = result["ours_over_peer"]
    assert set(ratios) == {*(f"recall@{k}" for k in KS), "ingest_turns_per_s", "search_ms_p50", "search_ms_p95", "search_ms_p99"}
    assert all(v is not None and v > 0 for v in ratios.values()), ratios


@pytest.mark.slow  # both systems end to end
def test_speed_cli_reports_mem0_on_the_same_turns(tmp_path: Path) -> None:
    p = run_cli(
        ["bench", "speed", "--peer", "mem0", "--sizes", "40", "--queries", "10", "--out", str(tmp_path / "out")],
        env=_env(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    assert f"deepcontext / mem0 {mem0_version()}" in p.stdout
    result = json.loads((tmp_path / "out" / "speed-sqlite-latest.json").read_text())
    ours, theirs = result["stages"][0], result["peer"]["stages"][0]
    assert theirs["turns_total"] == ours["stage_turns"] > 0
    assert theirs["search_ms"]["p50"] > 0 and result["ours_over_peer"][0]["search_ms_p95"] > 0


def test_an_unknown_peer_is_refused(tmp_path: Path) -> None:
    p = run_cli(["bench", "speed", "--peer", "zep", "--sizes", "40"], env=_env(tmp_path))
    assert p.returncode != 0 and "unknown peer 'zep'" in p.stdout + p.stderr
