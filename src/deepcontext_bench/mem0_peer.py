"""mem0's open-source ``Memory`` as a peer in the benchmarks, in the same process.

mem0 is configured as a user without an LLM would run it: ``add(..., infer=False)`` (each message
stored as one memory), its default embedded vector store (Qdrant's local mode in a temporary
folder) and its history database in the same folder. Its embedder is ours (all-MiniLM-L6-v2 in
ONNX), wrapped in mem0's embedder interface, so both systems rank the same vectors and pay the same
embedding cost: what differs is the memory layer. mem0's BM25 hybrid needs fastembed's BM25 model,
which is fetched from a model hub on first use; the run allows no downloads, so mem0 searches
with its semantic scoring alone unless that model is already in fastembed's cache.

Nothing may call out: mem0's telemetry is switched off with ``MEM0_TELEMETRY=false`` before mem0 is
imported, and :func:`network_guard` refuses every non-loopback connection and name lookup while
the peer runs; a refused attempt fails the benchmark even if mem0 swallowed the error.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Mem0Peer", "NetworkBlockedError", "mem0_version", "network_guard", "NOT_INSTALLED"]

#: the version the ``bench`` extra pins; another installed version runs but is reported as such
PINNED = "2.2.1"
NOT_INSTALLED = f"mem0 is not installed: pip install 'mem0ai=={PINNED}' (or the bench extra) to compare with it"


class NetworkBlockedError(RuntimeError):
    """A benchmark peer tried to reach the network."""


def mem0_version() -> str | None:
    """The installed mem0ai version, or None."""
    try:
        return metadata.version("mem0ai")
    except metadata.PackageNotFoundError:
        return None


def _is_local(host: Any) -> bool:
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name in ("localhost", "", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def network_guard() -> Iterator[list[str]]:
    """Refuse non-loopback connects and name lookups inside the block; yields the list of refused
    attempts and raises :class:`NetworkBlockedError` on exit if it is not empty (a caller that
    catches the refusal still fails the run)."""
    attempts: list[str] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        if isinstance(address, tuple) and not _is_local(address[0]):
            attempts.append(repr(address))
            raise NetworkBlockedError(f"network access refused during the benchmark: {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            attempts.append(f"lookup {host!r}")
            raise NetworkBlockedError(f"name lookup refused during the benchmark: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo
    try:
        yield attempts
    finally:
        socket.socket.connect, socket.socket.connect_ex = real_connect, real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo
    if attempts:
        raise NetworkBlockedError(f"mem0 tried to reach the network {len(attempts)} time(s): {', '.join(attempts[:5])}")


class _Embedder:
    """mem0's embedder interface (``embed(text, memory_action)``) over one of ours."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    def embed(self, text: Any, memory_action: Any = None) -> list[float]:
        vec = self.embedder.embed([text if isinstance(text, str) else str(text)])[0]
        return np.asarray(vec, dtype=np.float32).tolist()


class Mem0Peer:
    """One mem0 ``Memory`` in a temporary folder, our embedder inside it."""

    def __init__(self, embedder: Any) -> None:
        version = mem0_version()
        if version is None:
            raise RuntimeError(NOT_INSTALLED)
        self.version = version
        self._tmp = tempfile.TemporaryDirectory(prefix="dc-mem0-")
        root = Path(self._tmp.name)
        # read by mem0 at import: no telemetry, and its home folder inside ours
        os.environ["MEM0_TELEMETRY"] = "false"
        os.environ.setdefault("MEM0_DIR", str(root / "home"))
        # its warnings about optional extras (spaCy, fastembed) would interleave with the progress bar
        logging.getLogger("mem0").setLevel(logging.ERROR)
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig

        dims = int(np.asarray(embedder.embed(["dimension probe"])).shape[1])
        config = MemoryConfig(
            vector_store={
                "provider": "qdrant",
                "config": {
                    "path": str(root / "qdrant"),
                    "on_disk": True,
                    "collection_name": "bench",
                    "embedding_model_dims": dims,
                },
            },
            # never called (infer=False and our embedder replaces this one); a key so the clients construct
            embedder={"provider": "openai", "config": {"api_key": "unused", "embedding_dims": dims}},
            llm={"provider": "openai", "config": {"api_key": "unused"}},
            history_db_path=str(root / "history.db"),
        )
        self.memory = Memory(config)
        self.memory.embedding_model = _Embedder(embedder)
        self.embedder = embedder
        self.hybrid = self.memory.vector_store.keyword_search("probe", top_k=1) is not None

    def add(self, user: str, messages: list[dict[str, str]]) -> list[str]:
        """Store each message as one memory (``infer=False``); their ids in order."""
        out = self.memory.add(messages, user_id=user, infer=False)
        return [r["id"] for r in out["results"]]

    def search(self, user: str, query: str, limit: int) -> list[str]:
        """Memory ids, best first (no score threshold, so recall@k sees all k)."""
        out = self.memory.search(query, filters={"user_id": user}, top_k=limit, threshold=0.0)
        return [r["id"] for r in out["results"]]

    def timed_search(self, user: str, query: str, limit: int) -> tuple[list[str], float]:
        self.embedder.clear_cache()
        t0 = time.perf_counter()
        ids = self.search(user, query, limit)
        return ids, (time.perf_counter() - t0) * 1000

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.memory.close()
        self._tmp.cleanup()
