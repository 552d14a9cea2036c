"""Users' vector state saved beside a SQLite database, so a restart reads it instead of rebuilding it.

Two files per user in ``<database>.vectors/``, named by a hash of the user id: ``.hnsw``, usearch's
serialized graph, and ``.vecs``, the user's live vectors with the attributes searches filter on
(the matrix :class:`deepcontext.store.vectors.UserVectors` holds; reading it is a map of the file
instead of a read of every row). Each is the body, then a JSON header (the user's incarnation, the
version of the user's rows it covers, the dimension, the embedder, the body's byte count and
CRC-32) and a fixed trailer. A file is written under a temporary name, fsynced and renamed, so a
reader finds a whole file or the one before it, header and body always together. The rows stay the
truth: a file whose header does not match the user, or whose bytes do not match their checksum, is
ignored (the rows are read, the graph is rebuilt in the background, and both are saved anew); one
that matches but covers an older version is brought up to date from the rows changed since (see
:meth:`deepcontext.store.vectors.UserVectors.start_load`). The files may be deleted at any time.
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
from typing import TypeVar

import numpy as np

from deepcontext.store.ann import AnnIndex

__all__ = ["GraphFiles", "GraphHeader", "MatrixHeader", "SavedMatrix"]

log = logging.getLogger(__name__)

MAGIC = b"DCHNSW01"
#: after the header: its length and the magic
TRAILER = struct.Struct("<I8s")
FORMAT = 1
#: a header is a few hundred bytes; anything longer is not ours
MAX_HEADER = 1 << 16
#: the matrix file's arrays, in body order (widest first, so each starts aligned): name, dtype, a
#: row's width in elements (0: the dimension)
MATRIX_ARRAYS = (
    ("ids", np.int64, 1), ("when", np.float64, 1), ("expires", np.float64, 1), ("mat", np.float32, 0),
    ("conv", np.int32, 1), ("tier", np.int8, 1), ("mtype", np.int8, 1),
)  # fmt: skip


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


@dataclass(frozen=True)
class MatrixHeader:
    incarnation: str
    version: int
    dim: int
    embedder: str
    size: int
    crc32: int
    #: rows in the file
    count: int
    #: bytes of the conversation ids' JSON list that ends the body (a row's ``conv`` indexes it)
    conversations: int
    #: whose matrix it is (read at start-up to know which users to read ahead)
    user_id: str
    format: int = FORMAT


@dataclass
class SavedMatrix:
    """A user's live vectors and their attributes at one version of the user's rows."""

    ids: np.ndarray
    when: np.ndarray
    expires: np.ndarray
    mat: np.ndarray
    conv: np.ndarray
    tier: np.ndarray
    mtype: np.ndarray
    #: conversation id of each ``conv`` code
    conversations: list[str | None]


H = TypeVar("H", GraphHeader, MatrixHeader)


class GraphFiles:
    """The folder of a database's saved vector state. ``writable=False`` (a read-only database):
    saved files are read, nothing is ever written or removed."""

    def __init__(self, directory: Path, dim: int, *, writable: bool) -> None:
        self.dir = directory
        self.dim = dim
        self.writable = writable
        #: the database's embedder (dc_meta), set by the store before the first search
        self.embedder: str | None = None
        #: the user's incarnation in the database now (None: no such user), read before a file is
        #: renamed into place: a file of a user deleted meanwhile is never written
        self.current: Callable[[str], str | None] | None = None
        #: turned off by a failed save (a full disk, a folder that cannot be made): state stays in memory
        self.saving = writable
        #: serialises renames with removals, so a user's files removed by delete_user stay removed
        self.lock = threading.Lock()

    def path(self, user_id: str, suffix: str = ".hnsw") -> Path:
        return self.dir / f"{hashlib.sha256(user_id.encode()).hexdigest()[:32]}{suffix}"

    def matrix_path(self, user_id: str) -> Path:
        return self.path(user_id, ".vecs")

    # -- reading --------------------------------------------------------------------------------
    def header(self, user_id: str) -> GraphHeader | None:
        """The header of the user's saved graph; None when there is none or it is unreadable."""
        return self._header(self.path(user_id), GraphHeader)

    def matrix_header(self, user_id: str) -> MatrixHeader | None:
        """The header of the user's saved matrix; None when there is none or it is unreadable."""
        return self._header(self.matrix_path(user_id), MatrixHeader)

    def _header(self, path: Path, kind: type[H]) -> H | None:
        try:
            with path.open("rb") as f:
                end = f.seek(0, os.SEEK_END)
                if end < TRAILER.size:
                    return None
                f.seek(end - TRAILER.size)
                length, magic = TRAILER.unpack(f.read(TRAILER.size))
                if magic != MAGIC or length > min(MAX_HEADER, end - TRAILER.size):
                    return None
                f.seek(end - TRAILER.size - length)
                raw = json.loads(f.read(length))
            header = kind(**raw)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("ignoring the saved vector index %s: %s", path.name, exc)
            return None
        if header.format != FORMAT or header.size + length + TRAILER.size != end:
            return None
        return header

    def saved_users(self) -> list[tuple[str, int]]:
        """(user id, rows) of each saved matrix, the most recently saved first."""
        try:
            paths = sorted(self.dir.glob("*.vecs"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:  # no folder yet, or a file removed while listing
            return []
        headers = (self._header(p, MatrixHeader) for p in paths)
        return [(h.user_id, h.count) for h in headers if h is not None]

    def matches(self, header: GraphHeader | MatrixHeader, incarnation: str) -> bool:
        """Whether a saved file belongs to this user row and this database's vectors."""
        return header.incarnation == incarnation and header.dim == self.dim and header.embedder == (self.embedder or "")

    def load(self, user_id: str, header: GraphHeader) -> AnnIndex:
        """The saved graph; raises ValueError when its bytes are not the ones the header describes."""
        with self.path(user_id).open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            try:
                _check(view, header)
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

    def load_matrix(self, user_id: str, header: MatrixHeader) -> SavedMatrix:
        """The saved matrix, its arrays over a private map of the file (pages are read as searches
        touch them and copied only where a change writes them); raises ValueError when its bytes
        are not the ones the header describes."""
        with self.matrix_path(user_id).open("rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        view = memoryview(m)
        try:
            _check(view, header)
            n, offset, arrays = header.count, 0, {}
            for name, dtype, width in MATRIX_ARRAYS:
                cols = width or self.dim
                arr = np.frombuffer(m, dtype=dtype, count=n * cols, offset=offset)
                arrays[name] = arr.reshape(n, cols) if name == "mat" else arr
                offset += arr.nbytes
            if offset + header.conversations != header.size:
                raise ValueError("arrays of another size than the header's")
            conversations = json.loads(bytes(view[offset : header.size]))
        finally:
            view.release()
        if not isinstance(conversations, list) or (n and int(arrays["conv"].max()) >= len(conversations)):
            raise ValueError("conversation codes without conversations")
        return SavedMatrix(**arrays, conversations=conversations)

    # -- writing --------------------------------------------------------------------------------
    def write(self, user_id: str, ann: AnnIndex, incarnation: str, version: int, still_wanted: Callable[[], bool]) -> bool:
        """Save ``ann`` (which nobody changes meanwhile) as the user's graph at ``version``; renamed into
        place only if ``still_wanted()`` holds then. False when nothing was saved (a failure is logged
        once and turns saving off for this process: the graphs stay in memory)."""

        def header(size: int, crc: int) -> GraphHeader:
            return GraphHeader(incarnation, version, self.dim, self.embedder or "", size, crc, len(ann))

        return self._seal(self.path(user_id), lambda tmp: ann.index.save(str(tmp)), header, user_id, incarnation, still_wanted)

    def write_matrix(
        self, user_id: str, saved: SavedMatrix, incarnation: str, version: int, still_wanted: Callable[[], bool]
    ) -> bool:
        """Save the user's matrix at ``version`` (as :meth:`write` saves a graph)."""
        names = json.dumps(saved.conversations).encode()

        def body(tmp: Path) -> None:
            with tmp.open("wb") as f:
                for name, dtype, _ in MATRIX_ARRAYS:
                    f.write(np.ascontiguousarray(getattr(saved, name), dtype=dtype).data)
                f.write(names)

        def header(size: int, crc: int) -> MatrixHeader:
            return MatrixHeader(
                incarnation, version, self.dim, self.embedder or "", size, crc, len(saved.ids), len(names), user_id
            )

        return self._seal(self.matrix_path(user_id), body, header, user_id, incarnation, still_wanted)

    def _seal(
        self,
        target: Path,
        body: Callable[[Path], object],
        header_of: Callable[[int, int], GraphHeader | MatrixHeader],
        user_id: str,
        incarnation: str,
        still_wanted: Callable[[], bool],
    ) -> bool:
        """Write ``body`` to a temporary file, append its header and trailer, fsync, and rename it into
        place if the user is still the one it was written for."""
        if not self.saving:
            return False
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            self.dir.mkdir(exist_ok=True)
            self._sweep()
            body(tmp)
            size = tmp.stat().st_size
            crc = 0
            with tmp.open("r+b") as f:
                while chunk := f.read(1 << 24):
                    crc = zlib.crc32(chunk, crc)
                raw = json.dumps(asdict(header_of(size, crc))).encode()
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
        """Delete the user's saved files (delete_user)."""
        if not self.writable:
            return
        with self.lock:
            for path in (self.path(user_id), self.matrix_path(user_id)):
                try:
                    path.unlink(missing_ok=True)
                except OSError as exc:
                    log.warning("removing a deleted user's vector index failed: %s", exc)

    def _sweep(self) -> None:
        """Remove temporary files left by processes that died while writing one."""
        for p in self.dir.glob("*.tmp-*"):
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


def _check(view: memoryview, header: GraphHeader | MatrixHeader) -> None:
    if len(view) < header.size or zlib.crc32(view[: header.size]) != header.crc32:
        raise ValueError("checksum mismatch")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
