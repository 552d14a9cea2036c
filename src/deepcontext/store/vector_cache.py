"""The SQLite backend's per-user vector matrices (:class:`deepcontext.store.vectors.UserVectors`):
which users are held, refreshed before each search, and evicted past a total of rows."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from deepcontext.store.ann import in_background
from deepcontext.store.vectors import UserVectors, VectorRow

if TYPE_CHECKING:
    from deepcontext.store.ann_files import GraphFiles

__all__ = ["VectorCache"]


class VectorCache:
    """Per-user :class:`UserVectors`, least recently used users evicted past ``max_rows``; their
    graphs saved in ``files`` when given."""

    def __init__(self, dim: int, max_rows: int, ann_min_rows: int = 0, files: GraphFiles | None = None) -> None:
        self.dim = dim
        self.max_rows = max_rows
        self.ann_min_rows = ann_min_rows
        self.files = files
        self._users: OrderedDict[str, UserVectors] = OrderedDict()
        self._lock = threading.Lock()

    def _new(self, user_id: str, incarnation: str = "") -> UserVectors:
        return UserVectors(
            dim=self.dim, incarnation=incarnation, ann_min_rows=self.ann_min_rows, user_id=user_id, files=self.files
        )

    def get(self, user_id: str) -> UserVectors:
        with self._lock:
            uv = self._users.get(user_id)
            if uv is None:
                uv = self._new(user_id)
                self._users[user_id] = uv
            self._users.move_to_end(user_id)
            return uv

    def drop(self, user_id: str) -> None:
        with self._lock:
            uv = self._users.pop(user_id, None)
        if uv is not None:
            uv.retired = True
            if uv.builder is not None:
                uv.builder.cancelled.set()

    def erase(self, user_id: str) -> None:
        """Drop the user and delete its saved graph (delete_user)."""
        self.drop(user_id)
        if self.files is not None:
            self.files.remove(user_id)

    def flush(self) -> None:
        """Save every graph changed since it was saved, now (close calls it)."""
        with self._lock:
            users = list(self._users.values())
        for uv in users:
            saver = uv.saver
            if saver is not None:
                saver.join()
            uv.save()

    def clear(self) -> None:
        """Stop builds and loads, then save the graphs changed since they were saved (close)."""
        with self._lock:
            users = list(self._users.values())
        for uv in users:
            if uv.builder is not None:
                uv.builder.cancel()
        self.flush()
        with self._lock:
            self._users.clear()

    def evict(self, keep: str) -> None:
        gone: list[UserVectors] = []
        with self._lock:
            total = sum(u.n for u in self._users.values())
            for uid in list(self._users):
                if total <= self.max_rows:
                    break
                if uid == keep:
                    continue
                uv = self._users.pop(uid)
                total -= uv.n
                gone.append(uv)
        for uv in gone:
            if uv.builder is not None:
                uv.builder.cancelled.set()
            elif uv.ann is not None and uv.unsaved:
                uv.saver = in_background(uv.save, "deepcontext-ann-save")

    def refresh(
        self,
        user_id: str,
        read_state: Callable[[], tuple[str, int] | None],
        read_rows: Callable[[int], list[VectorRow]],
        count_live: Callable[[], int] | None = None,
    ) -> UserVectors | None:
        """Bring the user's matrix up to date. ``read_state`` returns (incarnation, version) or
        None if the user does not exist; ``read_rows(since_rev)`` returns the rows changed after it;
        ``count_live()`` the user's active rows (checks a saved matrix; without it none is read)."""
        while True:
            uv = self.get(user_id)
            with uv.lock:
                if self._users.get(user_id) is not uv:
                    continue  # replaced while this waited for its lock (a read-ahead, another first search)
                state = read_state()
                if state is None:
                    self.drop(user_id)
                    return None
                incarnation, version = state
                if incarnation != uv.incarnation:
                    uv.retired = True
                    if uv.builder is not None:  # a graph of the old incarnation is of no use
                        uv.builder.cancelled.set()
                    fresh = self._new(user_id, incarnation)
                    if count_live is not None and fresh.read_saved(version, read_rows, count_live):
                        fresh.matrix_source = "file"
                    else:
                        fresh.apply(read_rows(-1))
                        fresh.matrix_source, fresh.matrix_unsaved = "rows", fresh.files is not None
                    fresh.version = version
                    fresh.look_for_file(read_rows)  # before it is published: nobody else holds it yet
                    with self._lock:
                        self._users[user_id] = fresh
                    uv = fresh
                else:
                    if version != uv.version:
                        uv.apply(read_rows(uv.version))
                        uv.version = version
                    uv.look_for_file(read_rows)
            break
        if uv.save_due():
            uv.saver = in_background(uv.save, "deepcontext-ann-save")
        self.evict(keep=user_id)
        return uv
