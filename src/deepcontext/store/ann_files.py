"""Users' HNSW graphs saved beside a SQLite database, so a restart loads them instead of rebuilding.

One file per user in ``<database>.vectors/``, named by a hash of the user id: usearch's serialized
graph, then a JSON header (the user's incarnation, the version of the user's rows the graph covers,
the dimension, the embedder, the graph's byte count and CRC-32) and a fixed trailer. A file is
written under a temporary name, fsynced and renamed, so a reader finds a whole file or the one
before it, header and graph always together. The rows stay the truth: a file whose header does not
match the user, or whose bytes do not match their checksum, is ignored (the graph is rebuilt in the
background and saved anew); one that matches but covers an older version is brought up to date
from the rows changed since (see :meth:`deepcontext.store.vectors.UserVectors.start_load`). The
files may be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from deepcontext.store.ann import AnnIndex

__all__ = ["GraphFiles", "GraphHeader"]

log = logging.getLogger(__name__)

MAGIC = b"DCHNSW01"
#: after the header: its length and the magic
TRAILER = struct.Struct("<I8s")
FORMAT = 1
#: a header is a few hundred bytes; anything longer is not ours
MAX_HEADER = 1 << 16


@dataclass(frozen=True)
class GraphHeader:
    incarnation: str
    version: int
    dim: int
    embedder: str
    size: int
    crc32: int
    count: int
    format: int = FORMAT


class GraphFiles:
    """The folder of a database's saved graphs. ``writable=False`` (a read-only database): saved
    graphs are loaded, nothing is ever written or removed."""

    def __init__(self, directory: Path, dim: int, *, writable: bool) -> None:
        self.dir = directory
        self.dim = dim
        self.writable = writable
        #: the database's embedder (dc_meta), set by the store before the first search
        self.embedder: str | None = None
        #: the user's incarnation in the database now (None: no such user), read before a file is
        #: renamed into place: a graph of a user deleted meanwhile is never written
        self.current: Callable[[str], str | None] | None = None
        #: turned off by a failed save (a full disk, a folder that cannot be made): graphs stay in memory
        self.saving = writable
        #: serialises renames with removals, so a user's file removed by delete_user stays removed
        self.lock = threading.Lock()

    def path(self, user_id: str) -> Path:
        return self.dir / f"{hashlib.sha256(user_id.encode()).hexdigest()[:32]}.hnsw"

    # -- reading --------------------------------------------------------------------------------
    def header(self, user_id: str) -> GraphHeader | None:
        """The header of the user's saved graph; None when there is none or it is unreadable."""
        try:
            with self.path(user_id).open("rb") as f:
                end = f.seek(0, os.SEEK_END)
                if end < TRAILER.size:
                    return None
                f.seek(end - TRAILER.size)
                length, magic = TRAILER.unpack(f.read(TRAILER.size))
                if magic != MAGIC or length > min(MAX_HEADER, end - TRAILER.size):
                    return None
                f.seek(end - TRAILER.size - length)
                raw = json.loads(f.read(length))
            header = GraphHeader(**raw)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring the saved vector index %s: %s", self.path(user_id).name, exc)
            return None
        if header.format != FORMAT or header.size + length + TRAILER.size != end:
            return None
        return header

    def matches(self, header: GraphHeader, incarnation: str) -> bool:
        """Whether a saved graph belongs to this user row and this database's vectors."""
        return header.incarnation == incarnation and header.dim == self.dim and header.embedder == (self.embedder or "")

    def load(self, user_id: str, header: GraphHeader) -> AnnIndex:
        """The saved graph; raises ValueError when its bytes are not the ones the header describes."""
        with self.path(user_id).open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            try:
                if len(view) < header.size or zlib.crc32(view[: header.size]) != header.crc32:
                    raise ValueError("checksum mismatch")
                ann = AnnIndex(self.dim)
                try:
                    ann.index.load(view[: header.size])
                except (RuntimeError, ValueError) as exc:
                    raise ValueError(f"unreadable graph: {exc}") from exc
            finally:
                view.release()
        if ann.index.ndim != self.dim:
            raise ValueError(f"graph of {ann.index.ndim} dimensions")
        return ann

    # -- writing --------------------------------------------------------------------------------
    def write(self, user_id: str, ann: AnnIndex, incarnation: str, version: int, still_wanted: Callable[[], bool]) -> bool:
        """Save ``ann`` (which nobody changes meanwhile) as the user's graph at ``version``; renamed into
        place only if ``still_wanted()`` holds then. False when nothing was saved (a failure is logged
        once and turns saving off for this process: the graphs stay in memory)."""
        if not self.saving:
            return False
        target = self.path(user_id)
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            self.dir.mkdir(exist_ok=True)
            self._sweep(target.name)
            ann.index.save(str(tmp))
            size = tmp.stat().st_size
            crc = 0
            with tmp.open("r+b") as f:
                while chunk := f.read(1 << 24):
                    crc = zlib.crc32(chunk, crc)
                header = GraphHeader(
                    incarnation=incarnation, version=version, dim=self.dim, embedder=self.embedder or "",
                    size=size, crc32=crc, count=len(ann),
                )  # fmt: skip
                raw = json.dumps(asdict(header)).encode()
                f.seek(size)
                f.write(raw + TRAILER.pack(len(raw), MAGIC))
                f.flush()
                os.fsync(f.fileno())
            with self.lock:
                if not still_wanted() or (self.current is not None and self.current(user_id) != incarnation):
                    tmp.unlink(missing_ok=True)
                    return False
                os.replace(tmp, target)
            self._sync_dir()
            return True
        except OSError as exc:
            log.warning("saving the vector index failed (%s); it is kept in memory and rebuilt after a restart", exc)
            self.saving = False
            tmp.unlink(missing_ok=True)
            return False

    def remove(self, user_id: str) -> None:
        """Delete the user's saved graph (delete_user)."""
        if not self.writable:
            return
        with self.lock:
            try:
                self.path(user_id).unlink(missing_ok=True)
            except OSError as exc:
                log.warning("removing a deleted user's vector index failed: %s", exc)

    def _sweep(self, name: str) -> None:
        """Remove temporary files of this user's graph left by processes that died while writing."""
        for p in self.dir.glob(f"{name}.tmp-*"):
            pid = p.name.rsplit(".tmp-", 1)[1].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                p.unlink(missing_ok=True)

    def _sync_dir(self) -> None:
        try:
            fd = os.open(self.dir, os.O_RDONLY)
        except OSError:  # pragma: no cover - platforms without directory handles
            return
        try:
            os.fsync(fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
