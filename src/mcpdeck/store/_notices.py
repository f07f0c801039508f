"""On PostgreSQL: "the config file changed" said to every replica at once, so each looks at the file now.

The file stays the source of truth: a notice carries nothing but the name of the replica that wrote,
and a replica that gets one only looks at the file earlier than its follower's next look would.
``notify()`` is queued on the store's writer after each write of the file (the notice goes out with
the commit); ``listen(wake)`` runs a thread with a connection of its own that ``LISTEN``s on the
file's channel and calls ``wake()`` for each notice. A connection that is lost is opened again (the
follower's look every 0.5 s carries the edits meanwhile). The channel is named after the file's
path: the replicas must see the file at the same path.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from mcpdeck.store._db import connect_postgres
from mcpdeck.store._store import Store

__all__ = ["ConfigNotices", "config_channel"]

logger = logging.getLogger("mcpdeck.store")

_POLL = 1.0
"""Seconds between the listening thread's looks at whether it should stop."""
_RETRY = 2.0
"""Seconds before a lost listening connection is opened again."""


def config_channel(path: Path) -> str:
    """The ``LISTEN`` channel of a config file: its resolved path, hashed (a channel name is at most 63 bytes)."""
    return "mcpdeck_config_" + hashlib.sha256(os.fsencode(path.expanduser().resolve())).hexdigest()[:24]


class ConfigNotices:
    """The notices of one config file's writes on a PostgreSQL ``store``, sent and heard by replica ``replica``."""

    def __init__(self, store: Store, path: Path, replica: str):
        if store.location.kind != "postgresql":
            raise ValueError("config notices need a PostgreSQL store")
        self._store = store
        self.channel = config_channel(path)
        self.replica = replica
        self._stop = threading.Event()
        self.listening = threading.Event()
        """Set once the listening connection has said ``LISTEN`` (notices sent from then on are heard)."""
        self._thread: threading.Thread | None = None

    def notify(self) -> None:
        """Tell the other replicas the file was written (queued; sent when the writer commits)."""
        self._store.writer.submit(lambda db: db.run("SELECT pg_notify(?, ?)", (self.channel, self.replica)))

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (from a thread of its own) for every notice, until ``close``."""
        self._thread = threading.Thread(target=self._serve, args=(wake,), name="mcpdeck config notices", daemon=True)
        self._thread.start()

    def _serve(self, wake: Callable[[], None]) -> None:
        from psycopg import sql  # the extra mcpdeck[postgres]: imported only for a PostgreSQL store

        while not self._stop.is_set():
            try:
                with connect_postgres(self._store.location) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.listening.set()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=_POLL):
                            wake()
            except Exception as error:  # the database went away: the follower's looks carry on meanwhile
                logger.warning("config notices: listening failed, trying again in %g s: %s", _RETRY, error)
                self._stop.wait(_RETRY)

    def close(self) -> None:
        """Stop listening (within ``_POLL`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(_POLL + 5)
