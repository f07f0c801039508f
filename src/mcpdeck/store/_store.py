"""An open store: its database behind one writer thread, and its locks."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from mcpdeck._util.paths import data_dir, history_path
from mcpdeck.store._db import open_database
from mcpdeck.store._location import StoreLocation, parse_location
from mcpdeck.store._locks import Locks, open_locks
from mcpdeck.store._schema import POSTGRESQL, SQLITE, Dialect
from mcpdeck.store._writer import Writer

__all__ = ["Store", "default_history_path", "resolve_location"]


def default_history_path() -> Path:
    """``$MCPDECK_HISTORY``, else ``<data dir>/history.sqlite3`` (see ``mcpdeck._util.paths``)."""
    return history_path() or data_dir() / "history.sqlite3"


def resolve_location(location: StoreLocation | str | os.PathLike[str] | None) -> StoreLocation:
    """A store's place from a location, a path or URL, or None (the default history file)."""
    if isinstance(location, StoreLocation):
        return location
    return parse_location(default_history_path() if location is None else location)


class Store:
    """The database at ``location``, connected and up to date; every query goes through ``writer``.

    Raises:
        ConfigError: It cannot be opened or reached, or its schema is newer than this mcpdeck.
    """

    def __init__(self, location: StoreLocation):
        self.location = location
        db = open_database(location)
        name = location.path.name if location.path is not None else "postgresql"
        # reopen holds the location, not this object: an unclosed store can still be collected (and closed)
        self.writer = Writer(db, name=f"mcpdeck store {name}", reopen=functools.partial(open_database, location))
        self._locks: Locks | None = None

    @property
    def dialect(self) -> Dialect:
        """The SQL dialect of its database."""
        return SQLITE if self.location.kind == "sqlite" else POSTGRESQL

    @property
    def locks(self) -> Locks:
        """The store's non-blocking locks (made when first used)."""
        if self._locks is None:
            self._locks = open_locks(self.location)
        return self._locks

    def close(self) -> None:
        """Write what is queued, close the connection, let the locks go. Safe to call twice."""
        self.writer.close()
        if self._locks is not None:
            self._locks.close()
