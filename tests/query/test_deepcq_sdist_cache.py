"""The deepcq contract test downloads deepcq's sdist once: later runs take it from the cache
folder, and without it and without the package index the test skips cleanly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.query.test_deepcq_contract import cache_dir, fetch_sdist

#: a package index nobody answers on (the discard port of loopback)
DEAD_INDEX = "http://127.0.0.1:9/simple"


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_INDEX_URL", DEAD_INDEX)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return tmp_path / "cache" / "deepcontext-tests"


def test_the_cache_is_under_the_users_cache_folder(offline_cache: Path) -> None:
    assert cache_dir() == offline_cache


def test_a_cached_sdist_is_used_without_the_index(offline_cache: Path) -> None:
    offline_cache.mkdir(parents=True)
    cached = offline_cache / "deepcq-0.3.0.tar.gz"
    cached.write_bytes(b"cached")
    t0 = time.perf_counter()
    assert fetch_sdist() == cached  # the dead index would have made pip fail, and the test skip
    assert time.perf_counter() - t0 < 1.0


def test_no_cache_and_no_index_skips_cleanly(offline_cache: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="package index is unreachable"):
        fetch_sdist()
    assert list(offline_cache.iterdir()) == []  # nothing half-downloaded left to look cached
