"""Per-user lifecycle locks (deepcontext.store.locks) on both backends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import insert, select

from deepcontext.clock import ManualClock
from deepcontext.errors import LockTimeoutError, StorageError, ValidationError
from deepcontext.store import Store
from deepcontext.store.locks import user_lock
from tests.store_helpers import DIM, T0, open_test_store
from tests.store_workers import locked_increment_worker, run_processes


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = open_test_store(db_url)
    yield s
    s.close()


def test_a_held_lock_times_out_others(store: Store) -> None:
    with user_lock(store, "u", "consolidate", timeout=1):  # type: ignore[arg-type]
        with pytest.raises(LockTimeoutError) as err:
            with user_lock(store, "u", "consolidate", timeout=0.2):  # type: ignore[arg-type]
                pass
        assert isinstance(err.value, StorageError) and (err.value.user_id, err.value.name) == ("u", "consolidate")
        with pytest.raises(LockTimeoutError):  # timeout 0: one try
            with user_lock(store, "u", "consolidate", timeout=0):  # type: ignore[arg-type]
                pass
        # other users and other names are independent
        with user_lock(store, "v", "consolidate", timeout=0), user_lock(store, "u", "decay", timeout=0):  # type: ignore[arg-type]
            pass
    with user_lock(store, "u", "consolidate", timeout=0):  # type: ignore[arg-type]  # released
        pass


def test_released_when_the_body_raises(store: Store) -> None:
    with pytest.raises(RuntimeError), user_lock(store, "u", "x", timeout=1):  # type: ignore[arg-type]
        raise RuntimeError("boom")
    with user_lock(store, "u", "x", timeout=0):  # type: ignore[arg-type]
        pass


def test_a_waiter_gets_the_lock_when_it_is_released(store: Store) -> None:
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with user_lock(store, "u", "consolidate", timeout=5):  # type: ignore[arg-type]
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(10)
    threading.Timer(0.3, release.set).start()
    with user_lock(store, "u", "consolidate", timeout=10):  # type: ignore[arg-type]
        assert release.is_set()  # got it only after the holder let go
    t.join()


def test_bad_arguments(store: Store) -> None:
    for kwargs in ({"user_id": "", "name": "x"}, {"user_id": "u", "name": ""}, {"user_id": "u", "name": "x" * 65}):
        with pytest.raises(ValidationError), user_lock(store, timeout=1, **kwargs):  # type: ignore[arg-type]
            pass
    with pytest.raises(ValidationError), user_lock(store, "u", "x", timeout=-1):  # type: ignore[arg-type]
        pass


@pytest.mark.slow  # several processes on one database
def test_processes_serialise_on_the_lock(db_url: str) -> None:
    open_test_store(db_url).close()
    run_processes(locked_increment_worker, [(db_url, DIM, 10)] * 3)
    store = open_test_store(db_url)
    try:
        assert store.kv_get("u", "test", "counter") == 30  # no lost update
    finally:
        store.close()


def test_sqlite_lease_expires_and_is_taken_over(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_test_store(f"sqlite:///{tmp_path}/locks.db")
    try:
        clock = ManualClock(T0)
        locks = store.t.locks  # type: ignore[attr-defined]
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            # a holder that died: its lease ends at T0 + 60 s
            conn.execute(
                insert(locks).values(user_id="u", name="consolidate", owner="dead:1", expires_at=T0 + timedelta(seconds=60))
            )
        with pytest.raises(LockTimeoutError):
            with user_lock(store, "u", "consolidate", timeout=0.1, clock=clock):  # type: ignore[arg-type]
                pass
        clock.advance(seconds=61)
        with user_lock(store, "u", "consolidate", timeout=0.1, ttl=30, clock=clock) as held:  # type: ignore[arg-type]
            with store.engine.connect() as conn:  # type: ignore[attr-defined]
                owner, expires = conn.execute(select(locks.c.owner, locks.c.expires_at)).one()
            assert owner == held.owner != "dead:1" and expires == clock.now() + timedelta(seconds=30)
        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            assert conn.execute(select(locks.c.owner)).all() == []  # released: the row is gone
    finally:
        store.close()


def test_sqlite_lease_is_renewed_while_held(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_test_store(f"sqlite:///{tmp_path}/locks.db")
    try:
        clock = ManualClock(T0)
        locks = store.t.locks  # type: ignore[attr-defined]
        with user_lock(store, "u", "consolidate", timeout=1, ttl=0.3, clock=clock) as held:  # type: ignore[arg-type]
            clock.advance(seconds=100)
            deadline = threading.Event()
            for _ in range(100):  # the heartbeat renews every ttl / 3 = 0.1 s
                with store.engine.connect() as conn:  # type: ignore[attr-defined]
                    expires = conn.execute(select(locks.c.expires_at)).scalar_one()
                if expires > T0 + timedelta(seconds=100):
                    break
                deadline.wait(0.05)
            assert expires == clock.now() + timedelta(seconds=0.3) and not held.lost
    finally:
        store.close()


def test_sqlite_an_abandoned_wait_stops_and_never_takes_the_lock_later(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = open_test_store(f"sqlite:///{tmp_path}/locks.db")
    try:
        abandon = threading.Event()
        outcome: list[BaseException | None] = []

        def waiter() -> None:
            try:
                with user_lock(store, "u", "consolidate", timeout=30, abandon=abandon):  # type: ignore[arg-type]
                    outcome.append(None)
            except LockTimeoutError as exc:
                outcome.append(exc)

        with user_lock(store, "u", "consolidate", timeout=0):  # type: ignore[arg-type]
            t = threading.Thread(target=waiter)
            t.start()
            t.join(0.3)
            assert t.is_alive()  # still waiting for the holder
            abandon.set()
            t.join(5)  # far sooner than its 30 s timeout
            assert not t.is_alive() and isinstance(outcome[0], LockTimeoutError)
        # the holder let go after the waiter gave up: nobody holds the lock now
        with user_lock(store, "u", "consolidate", timeout=0):  # type: ignore[arg-type]
            pass
        # given up before its first try: a free lock is handed back at once, not kept
        with pytest.raises(LockTimeoutError), user_lock(store, "u", "consolidate", timeout=0, abandon=abandon):  # type: ignore[arg-type]
            pass
        with user_lock(store, "u", "consolidate", timeout=0):  # type: ignore[arg-type]
            pass
    finally:
        store.close()
