"""Locks that a dead holder never keeps, taken without waiting: for jobs one replica runs (the reaper,
retention) and for a replica's sign of life.

PostgreSQL: session advisory locks (``pg_try_advisory_lock``) on a connection of their own; the server
drops them when that connection ends, which a killed process's does at once. SQLite: an ``flock`` on a
file beside the database (``.<file>.<name>.lock``); the kernel drops it when the holder dies. Nobody
ever waits for one: a job whose lock is taken is simply skipped this time, so a holder that hangs or
dies stalls nothing.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpdeck._util.files import try_lock_file
from mcpdeck.store._db import LOCK_CLASS, connect_postgres, lock_key
from mcpdeck.store._location import StoreLocation

if TYPE_CHECKING:
    import psycopg

__all__ = ["Locks", "open_locks"]


class Locks(ABC):
    """Named locks of one store, held by this object until released (or the process ends)."""

    @abstractmethod
    def try_lock(self, name: str) -> bool:
        """Take ``name`` if nobody holds it (True), else False at once. Taking one held already is True."""

    @abstractmethod
    def release(self, name: str) -> None:
        """Let ``name`` go (nothing if it is not held here)."""

    @abstractmethod
    def held_elsewhere(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` someone else holds now."""

    @abstractmethod
    def close(self) -> None:
        """Let every lock go."""


class FileLocks(Locks):
    def __init__(self, location: StoreLocation):
        assert location.path is not None
        self._folder, self._stem = location.path.parent, location.path.name
        self._held: dict[str, int] = {}
        self._mutex = threading.Lock()

    def _path(self, name: str) -> Path:
        return self._folder / f".{self._stem}.{name}.lock"

    def try_lock(self, name: str) -> bool:
        with self._mutex:
            if name in self._held:
                return True
            fd = try_lock_file(self._path(name))
            if fd is None:
                return False
            self._held[name] = fd
            return True

    def release(self, name: str) -> None:
        with self._mutex:
            fd = self._held.pop(name, None)
        if fd is not None:
            os.close(fd)

    def held_elsewhere(self, names: Iterable[str]) -> set[str]:
        held: set[str] = set()
        for name in names:
            if name in self._held:
                continue
            fd = try_lock_file(self._path(name))
            if fd is None:
                held.add(name)
            else:
                os.close(fd)
        return held

    def close(self) -> None:
        for name in list(self._held):
            self.release(name)


class AdvisoryLocks(Locks):
    def __init__(self, location: StoreLocation):
        self._location = location
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        self._mutex = threading.Lock()

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.broken or self._conn.closed:
            self._held.clear()  # a lost connection took its locks with it
            self._conn = connect_postgres(self._location)
        return self._conn

    def try_lock(self, name: str) -> bool:
        with self._mutex:
            conn = self._connection()
            if name in self._held:
                return True
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_CLASS, lock_key(name))).fetchone()
            if row is None or not row[0]:
                return False
            self._held.add(name)
            return True

    def release(self, name: str) -> None:
        with self._mutex:
            if name not in self._held:
                return
            self._held.discard(name)
            if self._conn is not None and not self._conn.broken:
                self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, lock_key(name)))

    def held_elsewhere(self, names: Iterable[str]) -> set[str]:
        wanted = {lock_key(name) & 0xFFFFFFFF: name for name in names}
        with self._mutex:
            rows = (
                self._connection()
                .execute(
                    "SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
                    " AND classid::bigint = %s AND pid <> pg_backend_pid()"
                    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    (LOCK_CLASS,),
                )
                .fetchall()
            )
        return {wanted[row[0]] for row in rows if row[0] in wanted}

    def close(self) -> None:
        with self._mutex:
            self._held.clear()
            if self._conn is not None:
                self._conn.close()  # the server drops the session's locks


def open_locks(location: StoreLocation) -> Locks:
    """The locks of the store at ``location`` (PostgreSQL: connected when first used)."""
    return FileLocks(location) if location.kind == "sqlite" else AdvisoryLocks(location)
