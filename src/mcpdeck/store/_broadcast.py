"""On PostgreSQL: the live events of a fleet's replicas, said to one another with ``NOTIFY``.

Each replica sends the JSON of the events the console follows on the fleet's channel (one per config file,
``mcpdeck_events_<digest>``), with its replica id, and hears the others' there (its own notices come back
to it too: they are dropped by their replica id, so nothing is said twice and nothing goes round).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpdeck.store._notices import Listener, fleet_digest

__all__ = ["PAYLOAD_LIMIT", "EventBroadcast", "events_channel", "fit"]

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
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


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

    def send(self, data: dict[str, Any]) -> None:
        """Say an event's JSON (``type`` and its fields) to the other replicas (queued; sent with the writer's commit),
        every text in it passed through ``redact`` (the secrets of the configs)."""
        payload = fit({**_redacted(data, self._redact), "replica": self.replica})
        if payload is None:
            self.unsent += 1
            logger.warning("a %s event is too big to tell the other replicas, even trimmed", data.get("type"))
            return
        self._listener.notify(self.channel, payload)

    def listen(self, heard: Callable[[str, dict[str, Any]], None]) -> None:
        """Call ``heard(replica, data)`` (from the listening thread) for each event another replica said; before the
        listener starts."""

        def hand(payload: str) -> None:
            try:
                data = json.loads(payload)
            except ValueError:
                logger.warning("an event notice that is not JSON was dropped")
                return
            if not isinstance(data, dict):
                return
            event: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
            sender = event.pop("replica", None)
            if not isinstance(sender, str) or sender == self.replica:
                return  # our own, come back (or no one's): never said twice, never sent on
            heard(sender, event)

        self._listener.on(self.channel, hand)
