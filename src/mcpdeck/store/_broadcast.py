"""On PostgreSQL: the live events of a fleet's replicas, said to one another with ``NOTIFY``.

Each replica sends the JSON of the events the console follows on the fleet's channel (one per config file,
``mcpdeck_events_<digest>``), with its replica id, and hears the others' there (its own notices come back
to it too: they are dropped by their replica id, read before the rest, so nothing is said twice and
nothing goes round).

Events are sent a group at a time, one ``NOTIFY`` for all those that came while the last one waited for the
store's writer (``{"replica": "r1", "events": [...]}``), the way the writer commits a group of calls: under
load one notice carries many calls' events, so each replica wakes and reads once per group instead of twice
per call (bench/fleet.py counts the statements). A group is put together at the moment its ``NOTIFY`` is
queued, from events sent before that moment only; each of them was sent after its call's row was queued, so
a notice still arrives with or after the rows of the calls it tells of. A notice of one event alone, without
``events`` (what replicas sent before), is heard too.

A ``NOTIFY`` payload must be shorter than 8000 bytes. An event longer than that is sent trimmed
(``fit``): its longest values are left out one by one, largest first, until it fits, and their names
listed in ``trimmed``. Chosen over a row per event plus its id in the notice: the events the console
follows are small but for a call's ``arguments`` and an ``error``'s text, which the history keeps whole
(``GET /api/history/calls/{callId}``), so a row would store them twice, cost a write and a read per event
on the durable writer's connection, and need a sweep of rows nobody reads again; a trimmed event costs
nothing of that and still says what happened, where and on which replica.

Notices sent while a replica's listening connection is down are not heard: a live stream shows what
happens while it is open; what happened is in the history.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcpdeck._util.safe_text import storable
from mcpdeck.store._db import Database
from mcpdeck.store._notices import Listener, fleet_digest

__all__ = ["PAYLOAD_LIMIT", "EventBroadcast", "events_channel", "fit", "grouped"]

logger = logging.getLogger("mcpdeck.store")

PAYLOAD_LIMIT = 7999
"""The most bytes (UTF-8) of a ``NOTIFY`` payload PostgreSQL takes (it must be shorter than 8000)."""
_KEPT = frozenset({"type", "at", "replica", "server", "callId", "name", "tool", "state", "previous", "change", "path"})
"""What a trimmed event keeps whatever its size: what it is, when, where, and about what."""


def events_channel(path: Path) -> str:
    """The ``LISTEN`` channel of the live events of the fleet serving a config file."""
    return "mcpdeck_events_" + fleet_digest(path)


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with every text in it (keys too) passed through ``redact``."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): _redacted(v, redact) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list | tuple):
        return [_redacted(v, redact) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _dumps(data: dict[str, Any]) -> str:
    # (a lone surrogate, which a client's arguments may carry, would fail the notice and every event in it)
    return storable(json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str))


def fit(data: dict[str, Any], limit: int = PAYLOAD_LIMIT) -> str | None:
    """``data`` as JSON of at most ``limit`` bytes: whole when it fits, else without its longest values (named
    in ``trimmed``); None when even the values it always keeps do not fit."""
    text = _dumps(data)
    if len(text.encode()) <= limit:
        return text
    trimmed = dict(data)
    left_out: list[str] = []
    sizes = {key: len(_dumps({key: value}).encode()) for key, value in data.items() if key not in _KEPT}
    for key in sorted(sizes, key=lambda k: sizes[k], reverse=True):
        trimmed[key] = None
        left_out.append(key)
        text = _dumps({**trimmed, "trimmed": left_out})
        if len(text.encode()) <= limit:
            return text
    return None


def grouped(replica: str, events: Sequence[str], limit: int = PAYLOAD_LIMIT) -> list[str]:
    """Notices of ``replica`` carrying ``events`` (each one event's JSON, in order), as few as fit ``limit`` bytes
    each: ``{"replica": ..., "events": [...]}``, the replica first so a listener can tell its own at a glance."""
    head = '{"replica":' + json.dumps(replica) + ',"events":['
    notices: list[str] = []
    room = limit - len(head.encode()) - 2  # "]}"
    group: list[str] = []
    size = 0
    for event in events:
        length = len(event.encode()) + (1 if group else 0)
        if group and size + length > room:
            notices.append(head + ",".join(group) + "]}")
            group, size = [], 0
            length -= 1
        group.append(event)
        size += length
    if group:
        notices.append(head + ",".join(group) + "]}")
    return notices


class EventBroadcast:
    """This replica's live events sent to the fleet serving ``path``, and the other replicas' heard, on ``listener``.

    Secrets never leave in them: ``redact`` replaces the configs' secret values in every text sent.
    """

    def __init__(self, listener: Listener, path: Path, replica: str, redact: Callable[[str], str] = lambda text: text):
        self._listener = listener
        self._redact = redact
        self.channel = events_channel(path)
        self.replica = replica
        self.unsent = 0
        """Events that did not fit a notice even trimmed (not sent)."""
        self.notices = 0
        """Notices sent (each one ``NOTIFY``, carrying one event or many)."""
        self.unwanted = 0
        """Other replicas' notices dropped unread because nobody here took their events (``listen``'s ``wanted``)."""
        self._lock = threading.Lock()
        self._waiting: list[str] = []
        """Events sent while a notice waits for the writer: the next notice's."""
        self._queued = False
        """Whether a notice is queued on the writer and has not been sent yet."""
        self._own = '{"replica":' + json.dumps(replica) + ","
        """How this replica's notices begin."""
        self._room = PAYLOAD_LIMIT - len(grouped(replica, ["{}"])[0].encode()) + 2
        """The most bytes one event may have, to fit a notice with its replica's wrapping."""

    def send(self, data: dict[str, Any]) -> None:
        """Say an event's JSON (``type`` and its fields) to the other replicas (queued; sent with one of the writer's
        next commits), every text in it passed through ``redact`` (the secrets of the configs)."""
        payload = fit(_redacted(data, self._redact), self._room)
        if payload is None:
            self.unsent += 1
            logger.warning("a %s event is too big to tell the other replicas, even trimmed", data.get("type"))
            return
        with self._lock:
            self._waiting.append(payload)
            if self._queued:
                return  # it goes with the next notice, queued when the one waiting is sent
            self._queued = True
        self._queue()

    def _queue(self) -> None:
        """Queue a notice of the events sent so far, and none after: each of them was sent after its call's row was
        queued, so the notice goes out with or after those rows. The next one is queued once this one is sent."""
        with self._lock:
            events, self._waiting = self._waiting, []
        notices = grouped(self.replica, events)
        store = self._listener.store

        def say(db: Database) -> None:
            try:
                for notice in notices:
                    db.run("SELECT pg_notify(?, ?)", (self.channel, notice))
                    self.notices += 1
            finally:
                with self._lock:
                    more = self._queued = bool(self._waiting)
                if more:
                    self._queue()  # from the writer's thread: it goes after every job queued so far

        try:
            store.writer.submit(say)
        except RuntimeError:  # the store is closed: nobody is told any more
            with self._lock:
                self._queued = False

    def listen(
        self, heard: Callable[[str, list[dict[str, Any]]], None], *, wanted: Callable[[], bool] | None = None
    ) -> None:
        """Call ``heard(replica, events)`` (from the listening thread) with the events of each notice another replica
        sent, in order; before the listener starts. ``wanted`` (asked from the listening thread, so it must be cheap
        and thread-safe) says whether anyone takes them now: while it says no, notices are dropped unread, so a
        replica nobody watches does not pay to decode the whole fleet's calls."""
        own = self._own

        def hand(payload: str) -> None:
            if payload.startswith(own):
                return  # our own, come back: never said twice, never sent on (and not even read)
            if wanted is not None and not wanted():
                self.unwanted += 1
                return  # nobody follows the fleet's events here: not read, no hand-over to the loop
            try:
                data = json.loads(payload)
            except ValueError:
                logger.warning("an event notice that is not JSON was dropped")
                return
            if not isinstance(data, dict):
                return
            notice: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
            sender = notice.pop("replica", None)
            if not isinstance(sender, str) or sender == self.replica:
                return  # our own (or no one's): never said twice, never sent on
            carried = notice.get("events")
            if "events" not in notice:
                events = [notice]  # one event alone, as replicas sent them before
            elif isinstance(carried, list):
                events = [event for event in carried if isinstance(event, dict)]  # pyright: ignore[reportUnknownVariableType]
            else:
                return
            if events:
                heard(sender, events)  # pyright: ignore[reportUnknownArgumentType]

        self._listener.on(self.channel, hand)
