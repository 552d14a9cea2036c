"""A SQLite lease whose holder was killed on this host is taken over at once; a live holder's lease
and a lease of another host are respected."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from deepcontext.clock import SystemClock
from deepcontext.errors import LockTimeoutError
from deepcontext.store.locks import holder_is_dead, user_lock
from tests.store_helpers import DIM, open_test_store
from tests.store_workers import SPAWN, _wrap, die_holding_lock_worker


@pytest.mark.slow  # a lock holder process killed
def test_lease_of_a_killed_process_is_taken_over_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/locks.db"
    store = open_test_store(url)
    queue, barrier = SPAWN.Queue(), SPAWN.Barrier(2)
    proc = SPAWN.Process(target=_wrap, args=(die_holding_lock_worker, 0, queue, barrier, url, DIM))
    proc.start()
    try:
        barrier.wait(timeout=60)  # the child holds the lock (lease of 600 s)
        with pytest.raises(LockTimeoutError):  # alive: respected
            with user_lock(store, "u", "consolidate", timeout=0.2):  # type: ignore[arg-type]
                pass
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(timeout=30)
        with user_lock(store, "u", "consolidate", timeout=0) as held:  # type: ignore[arg-type]
            assert not held.lost
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
        store.close()


def test_lease_of_another_host_waits_for_its_expiry(tmp_path: Path) -> None:
    store = open_test_store(f"sqlite:///{tmp_path}/locks.db")
    try:
        other = "0123456789ab:1:1:1:deadbeef"  # another host's process 1
        assert not holder_is_dead(other)
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(
                insert(store.t.locks).values(  # type: ignore[attr-defined]
                    user_id="u", name="consolidate", owner=other, expires_at=SystemClock().now() + timedelta(seconds=600)
                )
            )
        with pytest.raises(LockTimeoutError):
            with user_lock(store, "u", "consolidate", timeout=0.1):  # type: ignore[arg-type]
                pass
    finally:
        store.close()
