"""A fleet's live events: what the console follows, told to the other replicas and heard from them (PostgreSQL).

``share_events`` hands each of this host's ``SHARED`` events, as its API JSON (``mcpdeck.api.event_json``), to
the store's ``EventBroadcast`` (a ``NOTIFY``); and what another replica said comes back on this host's bus as a
``RemoteEvent``, which ``/api/events`` sends marked ``remote`` with that replica's id. A ``RemoteEvent`` is none
of the ``SHARED`` kinds, so it is never told again: no loop, nothing twice. Not shared: what only this replica's
own clients can act on (a call's progress and the questions its server asked, for the call the console made
here; a resource update, for a subscription made here; server logs, which stay in each replica's log files)
and the lists each replica loads from its own connections (``ToolsChanged`` ...).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from mcpdeck.api import event_json
from mcpdeck.events import (
    ConfigChanged,
    ConfigReloaded,
    ConfigReloadFailed,
    Event,
    RemoteEvent,
    ServerStatusChanged,
    ToolCallFinished,
    ToolCallStarted,
)
from mcpdeck.host import Host
from mcpdeck.store import EventBroadcast

__all__ = ["SHARED", "share_events"]

SHARED: tuple[type[Event], ...] = (
    ServerStatusChanged,
    ToolCallStarted,
    ToolCallFinished,
    ConfigChanged,
    ConfigReloaded,
    ConfigReloadFailed,
)
"""The events a replica tells the fleet: a server's state there, its tool calls, its config edits."""
_NAMES = frozenset(kind.__name__ for kind in SHARED)


def share_events(host: Host, broadcast: EventBroadcast) -> Callable[[], None]:
    """Tell the fleet ``host``'s ``SHARED`` events, and publish the other replicas' on its bus; returns a function
    that stops the telling. Call it on the event loop, before the broadcast's listener starts."""
    loop = asyncio.get_running_loop()
    events = host.events

    def heard(replica: str, told: list[dict[str, Any]]) -> None:
        # only the kinds a replica tells (its name becomes an SSE event name: nothing else gets there)
        remote = [
            RemoteEvent(replica=replica, kind=kind, data=data)
            for data in told
            if isinstance(kind := data.get("type"), str) and kind in _NAMES
        ]
        if remote:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody follows any more
                loop.call_soon_threadsafe(publish, remote)  # one hand-over to the loop per notice

    def publish(remote: list[RemoteEvent]) -> None:
        for event in remote:
            events.publish(event)

    def tell(event: Event) -> None:
        broadcast.send(event_json(event))

    # Only while someone here takes them (an open console or /api/events stream): otherwise each call of the fleet
    # would cost this replica a decode and a hand-over to its loop for nothing (~0.3 ms a call, bench/RESULTS.md).
    broadcast.listen(heard, wanted=lambda: events.takes(RemoteEvent))
    return events.on(tell, *SHARED)
