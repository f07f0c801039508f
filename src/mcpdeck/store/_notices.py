"""On PostgreSQL: what one replica says to every other at once, with ``NOTIFY``, over ONE ``LISTEN`` connection.

``Listener`` is a replica's one listening connection (a thread of its own): every channel it hears is
registered on it (``on(channel, handler)``) before it starts, and a notice is handed to its channel's
handler, from that thread. The config notices, the console's live events and the relay between
replicas (``mcpdeck.store._relay``) all listen on it. ``Listener.notify`` queues a ``NOTIFY`` on the store's
writer: it goes out with the writer's next commit, after the writes queued before it (a history row and the
notice of its event arrive together). A connection that is lost is opened again; notices sent meanwhile are not
heard (each user says what covers that: ``on_connect`` tells when to look).

``ConfigNotices``: "the config file changed", so each replica looks at the file now. The file stays the
source of truth: a notice carries nothing but the name of the replica that wrote, and a replica that gets
one only looks at the file earlier than its follower's next look would (that look every 0.5 s carries the
edits made while the connection was down). The channel is named after the file's path: the replicas must
see the file at the same path.
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

__all__ = ["ConfigNotices", "Listener", "config_channel", "fleet_digest"]

logger = logging.getLogger("mcpdeck.store")

_POLL = 1.0
"""Seconds between the listening thread's looks at whether it should stop."""
_RETRY = 2.0
"""Seconds before a lost listening connection is opened again."""


def fleet_digest(path: Path) -> str:
    """A short name of a config file's resolved path: the fleet that serves it (a channel name is at most 63 bytes)."""
    return hashlib.sha256(os.fsencode(path.expanduser().resolve())).hexdigest()[:24]


def config_channel(path: Path) -> str:
    """The ``LISTEN`` channel of a config file's writes."""
    return "mcpdeck_config_" + fleet_digest(path)


class Listener:
    """A replica's one ``LISTEN`` connection to a PostgreSQL ``store``, and the ``NOTIFY`` it sends."""

    def __init__(self, store: Store):
        if store.location.kind != "postgresql":
            raise ValueError("notices need a PostgreSQL store")
        self.store = store
        self._handlers: dict[str, Callable[[str], None]] = {}
        self._connected: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self.listening = threading.Event()
        """Set once the connection has said ``LISTEN`` on every channel (notices sent from then on are heard)."""
        self._thread: threading.Thread | None = None

    def notify(self, channel: str, payload: str) -> None:
        """Say ``payload`` on ``channel`` (queued; sent when the writer commits); nothing once the store is closed."""
        if self.store.writer.closed:
            return
        self.store.writer.submit(lambda db: db.run("SELECT pg_notify(?, ?)", (channel, payload)), quick=True)

    def on(self, channel: str, handler: Callable[[str], None]) -> None:
        """Hand each notice's payload on ``channel`` to ``handler`` (from the listening thread); before ``start``."""
        if self._thread is not None:
            raise RuntimeError("the listener runs already: add its channels before start()")
        self._handlers[channel] = handler

    def on_connect(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` (from the listening thread) each time the connection has said ``LISTEN`` (the first
        time, and again after it was lost), so a user can look for what was sent while nobody heard; before
        ``start``."""
        if self._thread is not None:
            raise RuntimeError("the listener runs already: add its callbacks before start()")
        self._connected.append(callback)

    def start(self) -> None:
        """Listen on every channel given to ``on``, from a thread of its own, until ``close``."""
        if self._thread is None and self._handlers:
            self._thread = threading.Thread(target=self._serve, name="mcpdeck notices", daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        from psycopg import sql  # the extra mcpdeck[postgres]: imported only for a PostgreSQL store

        while not self._stop.is_set():
            try:
                with connect_postgres(self.store.location) as conn:
                    for channel in self._handlers:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self.listening.set()
                    for callback in self._connected:  # what was sent while nobody listened was not heard
                        self._call(callback)
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=_POLL):
                            self._hand(notice.channel, notice.payload)
            except Exception as error:  # the database went away: try again
                logger.warning("notices: listening failed, trying again in %g s: %s", _RETRY, error)
                self._stop.wait(_RETRY)

    def _hand(self, channel: str, payload: str) -> None:
        handler = self._handlers.get(channel)
        if handler is not None:
            self._call(lambda: handler(payload), channel)

    @staticmethod
    def _call(callback: Callable[[], None], channel: str | None = None) -> None:
        try:
            callback()
        except Exception:  # one handler's bug must not stop the others' notices
            logger.exception("notices: the handler of %s failed", channel or "a reconnection")

    def close(self) -> None:
        """Stop listening (within ``_POLL`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(_POLL + 5)


class ConfigNotices:
    """The notices of one config file's writes on a PostgreSQL ``store``, sent and heard by replica ``replica``.

    Heard on ``listener`` (the replica's one listening connection); without one, it listens on its own.
    """

    def __init__(self, store: Store, path: Path, replica: str, listener: Listener | None = None):
        self._listener = listener if listener is not None else Listener(store)
        self._own = listener is None
        self.channel = config_channel(path)
        self.replica = replica

    @property
    def listening(self) -> threading.Event:
        """Set once notices sent from then on are heard."""
        return self._listener.listening

    def notify(self) -> None:
        """Tell the other replicas the file was written (queued; sent when the writer commits)."""
        self._listener.notify(self.channel, self.replica)

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (from the listening thread) for every notice; a listener of its own starts now."""
        self._listener.on(self.channel, lambda _payload: wake())
        if self._own:
            self._listener.start()

    def close(self) -> None:
        """Stop its own listener (a shared one is closed by its owner)."""
        if self._own:
            self._listener.close()
